"""What one more correct target of each family and API costs the gate, beyond importing torch
and its own module: each corpus's correct entries of one API checked in one run with one
lane, in this process, after a first run that started the root template and imported the
entries' modules (as in any run after the first).

    python benchmarks/bench_family_cost.py [--repeats 3] [--corpus NAME ...]

Each line is one family's API: the median over ``--repeats`` runs of its correct entries,
divided by their number (the mean cost of one more target, its grid, sequences and judging
included): the wall seconds, the slowdown the machine's load caused meanwhile (a fixed piece
of Python's wall over CPU time, ``record_seconds.probe_slowdown``, before and after), the
wall seconds divided by it (what an idle machine would take), and this process's CPU seconds
(planning the calls, computing the expected values, judging: the children's are not in it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from record_seconds import probe_slowdown

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus.every import every_corpus  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402


def _timed(declarations) -> tuple[float, float, float]:
    """``(wall, slowdown, CPU)`` seconds of one run of ``declarations``."""
    before = probe_slowdown()
    wall, cpu = time.perf_counter(), time.process_time()
    check_many(declarations, run_options(jobs=1))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, (before + probe_slowdown()) / 2, cpu


def main(argv=None) -> int:
    corpora = every_corpus()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported")
    parser.add_argument("--corpus", action="append", choices=[name for name, _, _ in corpora], default=None,
                        help="only this corpus (repeatable; default: every corpus)")
    args = parser.parse_args(argv)
    print("family/API                 targets  wall s  slowdown  idle s  gate CPU s   (a target, median of "
          f"{args.repeats})")
    for name, entries, _ in corpora:
        if args.corpus and name not in args.corpus:
            continue
        by_api: dict[str, list] = {}
        for entry in entries:
            if entry.kind == "correct":
                declaration = entry.declaration()
                by_api.setdefault(declaration.api, []).append(declaration)
        for api, declarations in sorted(by_api.items()):
            warm = check_many(declarations, run_options(jobs=1))  # the template and the entries' modules, once
            if not all(report.conforms for report in warm):
                print(f"{name}/{api}: a correct entry does not conform; not timed")
                continue
            runs = [_timed(declarations) for _ in range(args.repeats)]
            count = len(declarations)
            wall = statistics.median(run[0] for run in runs) / count
            slowdown = statistics.median(run[1] for run in runs)
            idle = statistics.median(run[0] / run[1] for run in runs) / count
            cpu = statistics.median(run[2] for run in runs) / count
            print(f"{name + '/' + api:26s} {count:7d} {wall:7.3f} {slowdown:9.2f} {idle:7.3f} {cpu:11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
