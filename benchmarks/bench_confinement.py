"""What the confinement of target code costs per target (``posenc_spec/gate/child/confinement.py``).

Two figures, each the median of ``--repeats`` rounds:

- the whole check of one target from Python (the process's kept root template, as the
  command runs it), confined and with ``POSENC_SPEC_CONFINEMENT=off``, taken in turn round
  by round, and the difference of the two round by round;
- the confinement alone in a forked process: making its private folder, the Landlock
  ruleset and its restriction, and removing the folder; the seccomp filter that closes
  sockets (``confine_sockets``) alone; each against a fork that does nothing;
- what the filter adds to each system call the confined process makes (the kernel runs it
  on every one): a cheap system call timed in a forked process before and after it
  installs the filter (Landlock adds nothing there: it is asked on file opens, signals
  and traces alone).

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
from posenc_spec.gate.child import confine_sockets, confinement  # noqa: E402
from posenc_spec.gate.sandbox import CONFINEMENT_SWITCH  # noqa: E402

PATH = "reference_impls.torch_impl:positional_encoding"


def _check(switch: str, keys: dict) -> None:
    os.environ[CONFINEMENT_SWITCH] = switch
    assert posenc_spec.check(PATH, **keys).conforms


def _forked_seconds(confine: str) -> float:
    """Wall time of a fork that confines itself (``"landlock"``: its folder and Landlock;
    ``"filter"``: the socket filter) or does nothing (``""``) and exits, until reaped."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        status = 0
        if confine == "landlock":
            folder = confinement.make_private_folder()
            status = 1 if confinement.confine(folder) else 0
        elif confine == "filter":
            status = 1 if confine_sockets.close_sockets() else 0
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    if confine == "landlock":
        confinement.remove_private_folder(pid)
    assert status == 0, "the kernel refused the confinement"
    return time.perf_counter() - start


SYSCALLS = 200_000


def _syscall_nanoseconds(read_end: int, write_end: int) -> tuple[float, float, float]:
    """Nanoseconds per ``getppid`` in a forked process, before and after it installs the
    socket filter (the fastest of three passes each), and nanoseconds the installing took
    there."""
    pid = os.fork()
    if pid == 0:
        os.close(read_end)

        def per_call() -> float:
            passes = []
            for _ in range(3):
                start = time.perf_counter_ns()
                for _ in range(SYSCALLS):
                    os.getppid()
                passes.append((time.perf_counter_ns() - start) / SYSCALLS)
            return min(passes)

        before = per_call()
        start = time.perf_counter_ns()
        failed = confine_sockets.close_sockets()
        installing = time.perf_counter_ns() - start
        after = per_call()
        os.write(write_end, f"{before} {after if not failed else 'nan'} {installing}".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    before, after, installing = os.read(read_end, 100).decode().split()
    return float(before), float(after), float(installing)


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
        forks = {"fork, Landlock": lambda: _forked_seconds("landlock"),
                 "fork, filter": lambda: _forked_seconds("filter"), "fork, nothing": lambda: _forked_seconds("")}
        alone = seconds_in_rounds(forks, args.repeats * 5)
    for name, series in alone.items():
        print(f"{name:15s} median {statistics.median(series) * 1e3:6.2f} ms over {len(series)} forks")
    for name in ("fork, Landlock", "fork, filter"):
        cost = median_by_round(lambda confined, free: confined - free, alone[name], alone["fork, nothing"])
        print(f"{name.removeprefix('fork, ')} alone: {cost * 1e3:+.2f} ms per process "
              "(median of the rounds' differences)")
    read_end, write_end = os.pipe()
    pairs = [_syscall_nanoseconds(read_end, write_end) for _ in range(args.repeats)]
    before, after, installing = (statistics.median(side) for side in zip(*pairs, strict=True))
    print(f"installing the filter, timed inside the process: {installing / 1e3:.0f} us (median of {args.repeats})")
    print(f"getppid: {before:.0f} ns unfiltered, {after:.0f} ns filtered ({after - before:+.0f} ns per system call; "
          f"medians of {args.repeats} processes)")

if __name__ == "__main__":
    main()
