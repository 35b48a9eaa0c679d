"""What ``posenc_spec.check`` costs from Python, in one process, after its first call: on the
function object (a child forked from the caller, :mod:`posenc_spec.gate.callables`) and on
the same function's import path (the process's kept root template, as the command runs it).

Each figure is the median of ``--repeats`` rounds, each round checking the callable and the
import path once in turn, on the grid of ``--max-positions``; the first call of each is run
untimed (it imports torch into this process, or starts the root template). The ratio is
taken round by round.

Run from the repository root::

    python benchmarks/bench_api.py [--repeats 7] [--max-positions 64]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from timing import median_by_round, seconds_in_rounds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import posenc_spec  # noqa: E402
from reference_impls.torch_impl import positional_encoding  # noqa: E402

PATH = "reference_impls.torch_impl:positional_encoding"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--max-positions", type=int, default=64)
    args = parser.parse_args()
    keys = {"max_positions": args.max_positions}
    actions = {"callable": lambda: posenc_spec.check(positional_encoding, **keys),
               "import path": lambda: posenc_spec.check(PATH, **keys)}
    for action in actions.values():
        assert action().conforms  # untimed: the first of each pays its start
    times = seconds_in_rounds(actions, args.repeats)
    for name, series in times.items():
        print(f"{name:12s} median {statistics.median(series):.3f} s over {args.repeats} rounds")
    ratio = median_by_round(lambda forked, path: forked / path, times["callable"], times["import path"])
    print(f"callable / import path: {ratio:.2f} (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
