"""What the gate costs over the whole sinusoidal corpus (87 targets in two modules), per
target, with one lane and with two, and over the RoPE and stateful corpora with one lane,
in this process (the root template started once, before the timing, as in any run after
the first).

    python benchmarks/bench_gate_corpus.py [--repeats 3]

Each figure is the median of ``--repeats`` runs; the speed-up is the ratio of the medians.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from timing import median_seconds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus import ENTRIES  # noqa: E402
from meta_tests.corpus.rope_registry import ROPE_ENTRIES  # noqa: E402
from meta_tests.corpus.stateful_registry import STATEFUL_ENTRIES  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported")
    args = parser.parse_args(argv)
    declarations = [entry.declaration() for entry in ENTRIES]
    check_many(declarations[:1], run_options(jobs=1))  # the template, once
    timings = {}
    for jobs in (1, 2):
        timings[jobs] = median_seconds(lambda jobs=jobs: check_many(declarations, run_options(jobs=jobs)),
                                       args.repeats)
        print(f"corpus, -j {jobs}: {timings[jobs]:6.2f} s for {len(declarations)} targets, "
              f"{timings[jobs] / len(declarations):.3f} s a target")
    print(f"speed-up of -j 2 over -j 1: {timings[1] / timings[2]:.2f}x")
    for name, entries in (("RoPE", ROPE_ENTRIES), ("stateful", STATEFUL_ENTRIES)):
        more = [entry.declaration() for entry in entries]
        seconds = median_seconds(lambda more=more: check_many(more, run_options(jobs=1)), args.repeats)
        print(f"{name} corpus, -j 1: {seconds:6.2f} s for {len(more)} targets, {seconds / len(more):.3f} s a target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
