"""The one timing rule of the benchmarks: the median of repeated runs (the machines are noisy)."""

import statistics
import time


def median_seconds(action, repeats: int, warmup: bool = False) -> float:
    """Median wall time of ``action()`` over ``repeats`` runs, after one untimed run if ``warmup``."""
    if warmup:
        action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
