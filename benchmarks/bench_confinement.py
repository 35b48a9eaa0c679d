"""What the confinement of target code costs per target (``posenc_spec/gate/child/confinement.py``).

Two figures, each the median of ``--repeats`` rounds:

- the whole check of one target from Python (the process's kept root template, as the
  command runs it), confined and with ``POSENC_SPEC_CONFINEMENT=off``, taken in turn round
  by round, and the difference of the two round by round;
- the confinement alone in a forked process: making its private folder, the Landlock
  ruleset and its restriction, and removing the folder, against a fork that does nothing.

Run from the repository root::

    python benchmarks/bench_confinement.py [--repeats 9] [--max-positions 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timing import median_by_round, seconds_in_rounds

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import posenc_spec  # noqa: E402
from posenc_spec.gate.child import confinement  # noqa: E402
from posenc_spec.gate.sandbox import CONFINEMENT_SWITCH  # noqa: E402

PATH = "reference_impls.torch_impl:positional_encoding"


def _check(switch: str, keys: dict) -> None:
    os.environ[CONFINEMENT_SWITCH] = switch
    assert posenc_spec.check(PATH, **keys).conforms


def _forked_seconds(confine: bool) -> float:
    """Wall time of a fork that confines itself (or does nothing) and exits, until reaped."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        status = 0
        if confine:
            folder = confinement.make_private_folder()
            status = 1 if confinement.confine(folder) else 0
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    if confine:
        confinement.remove_private_folder(pid)
    assert status == 0, "the kernel refused the confinement"
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--max-positions", type=int, default=64)
    args = parser.parse_args()
    print(f"Landlock ABI {confinement.landlock_abi()}")
    keys = {"max_positions": args.max_positions}
    actions = {"confined": lambda: _check("on", keys), "unconfined": lambda: _check("off", keys)}
    for action in actions.values():
        action()  # untimed: the first starts the root template
    times = seconds_in_rounds(actions, args.repeats)
    for name, series in times.items():
        print(f"check of one target, {name:10s} median {statistics.median(series) * 1e3:8.1f} ms "
              f"over {args.repeats} rounds")
    difference = median_by_round(lambda confined, free: confined - free, times["confined"], times["unconfined"])
    print(f"confined - unconfined: {difference * 1e3:+.1f} ms per target (median of the rounds' differences)")
    with tempfile.TemporaryDirectory() as base:
        confinement.BASE = base
        forks = {"fork, confined": lambda: _forked_seconds(True), "fork, nothing": lambda: _forked_seconds(False)}
        alone = {name: [action() for _ in range(args.repeats * 5)] for name, action in forks.items()}
    for name, series in alone.items():
        print(f"{name:15s} median {statistics.median(series) * 1e3:6.2f} ms over {len(series)} forks")
    cost = statistics.median(alone["fork, confined"]) - statistics.median(alone["fork, nothing"])
    print(f"the confinement alone: {cost * 1e3:+.2f} ms per process")


if __name__ == "__main__":
    main()
