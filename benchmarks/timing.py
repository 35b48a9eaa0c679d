"""The timing rules of the benchmarks: the median of repeated runs (the machines are noisy),
and, to compare runs, rounds that take each in turn (the machines' speed drifts too)."""

import statistics
import sys
import time

# The floor every run pays, and the machine's speed at the moment: a fresh Python importing
# numpy and torch (the same virtual machine runs it, and the suite, a fifth slower in some
# hours than in others, while a pure-Python loop barely moves).
IMPORT_FLOOR = [sys.executable, "-c", "import numpy, torch"]


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


def seconds_in_rounds(actions: dict, repeats: int) -> dict[str, list[float]]:
    """Wall times of each of ``actions`` (name -> callable) over ``repeats`` rounds, each round
    running every action once, in turn: a drift of the machine's speed falls on all of them
    alike, so that a difference or ratio taken round by round cancels it."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(repeats):
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    return times


def median_by_round(function, *series: list[float]) -> float:
    """The median over the rounds of ``function`` of each round's times, one from each series."""
    return statistics.median(function(*values) for values in zip(*series, strict=True))


def compilation_seconds(call, shapes) -> float:
    """Seconds the first ``call(*shape)`` of each shape takes beyond its second, summed: what
    XLA spends compiling them (the caller clears JAX's caches first; ``call`` returns a
    ``jax.Array``, waited for)."""
    total = 0.0
    for shape in shapes:
        started = time.perf_counter()
        call(*shape).block_until_ready()
        first = time.perf_counter() - started
        started = time.perf_counter()
        call(*shape).block_until_ready()
        total += first - (time.perf_counter() - started)
    return total

