"""What one correct target of each family costs the gate, beyond importing torch and its own
module: each corpus's correct entries checked in one run with one lane, in this process,
after a first run that started the root template and imported the entries' modules (as in
any run after the first).

    python benchmarks/bench_family_cost.py [--repeats 3] [--corpus NAME ...]

Each figure is the median of ``--repeats`` runs over the corpus's correct entries, divided
by their number: the mean cost of a target of that family, its grid, sequences and
judging included.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from timing import median_seconds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from meta_tests.corpus.every import every_corpus  # noqa: E402
from posenc_spec.gate.engine import check_many  # noqa: E402
from posenc_spec.gate.options import run_options  # noqa: E402


def main(argv=None) -> int:
    corpora = every_corpus()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported")
    parser.add_argument("--corpus", action="append", choices=[name for name, _, _ in corpora], default=None,
                        help="only this corpus (repeatable; default: every corpus)")
    args = parser.parse_args(argv)
    for name, entries, _ in corpora:
        if args.corpus and name not in args.corpus:
            continue
        declarations = [entry.declaration() for entry in entries if entry.kind == "correct"]
        warm = check_many(declarations, run_options(jobs=1))  # the template and the entries' modules, once
        conforming = sum(report.conforms for report in warm)
        seconds = median_seconds(lambda declarations=declarations: check_many(declarations, run_options(jobs=1)),
                                 args.repeats)
        print(f"{name:12s} {len(declarations):3d} correct targets ({conforming} conform), -j 1: {seconds:6.2f} s, "
              f"{seconds / len(declarations):.3f} s a target (median of {args.repeats})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
