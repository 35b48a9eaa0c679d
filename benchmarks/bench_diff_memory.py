"""The peak memory of ``posenc-spec diff`` on two snapshots at the documented cap
(``MAX_TOTAL_ELEMENTS`` float32 elements in one output, all zeros: a few KiB on disk),
and its wall time. Each figure is the median of ``--repeats`` runs of the command in a
process of its own (peak resident memory as the kernel counts it for the child).

Run from the repository root::

    python benchmarks/bench_diff_memory.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from posenc_spec.regression.records import RecordedArray, RecordedCall, Snapshot  # noqa: E402
from posenc_spec.regression.snapshot import MAX_TOTAL_ELEMENTS, snapshot_meta, write_snapshot  # noqa: E402


def _peak_and_seconds(command: list[str]) -> tuple[int, float]:
    """Peak resident bytes and wall seconds of ``command``, run in a child of a fresh
    Python (so that the peak is that command's alone)."""
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)")
    start = time.perf_counter()
    output = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    kib, status = output.stdout.split()
    assert status == "0", "the snapshots differ: the benchmark compares two equal ones"
    return int(kib) * 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        values = np.zeros((MAX_TOTAL_ELEMENTS // 4096, 4096), dtype=np.float32)
        call = RecordedCall(f"{values.shape[0]}x{values.shape[1]}", (values.shape[0], values.shape[1]),
                            (RecordedArray(values, "float32"),))
        paths = [Path(folder) / name for name in ("old.npz", "new.npz")]
        for path in paths:
            write_snapshot(path, Snapshot(snapshot_meta("bench:zeros", "table"), (call,)))
        del values, call
        sizes = [os.path.getsize(path) for path in paths]
        runs = [_peak_and_seconds([sys.executable, "-m", "posenc_spec", "diff", *map(str, paths)])
                for _ in range(args.repeats)]
    print(f"snapshots of {MAX_TOTAL_ELEMENTS} float32 elements: {sizes[0] / 1024:.1f} KiB each")
    print(f"diff: peak {statistics.median(peak for peak, _ in runs) / 2**30:.2f} GiB, "
          f"{statistics.median(seconds for _, seconds in runs):.1f} s (medians of {args.repeats} runs)")


if __name__ == "__main__":
    main()
