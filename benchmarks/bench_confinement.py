"""What the confinement of target code costs per target (``posenc_spec/gate/child/confinement.py``).

The figures, each the median of ``--repeats`` rounds:

- the whole check of one target from Python (the process's kept root template, as the
  command runs it), confined, confined with the signal filter in place of Landlock's
  signal scoping (``POSENC_SPEC_SIGNAL_FILTER=on``: what a kernel before Linux 6.12 gets)
  and with ``POSENC_SPEC_CONFINEMENT=off``, taken in turn round by round, and the
  differences round by round;
- the targets of one module run together (``--module-targets``: transformers' four
  sinusoidal tables, ``spec_tests/real_targets/transformers_tables.py``): with Landlock's
  scoping they share a module template that imported the module once; with the signal
  filter each target's child imports it itself. Per target;
- the confinement alone in a forked process: making its private folder, the Landlock
  ruleset and its restriction, and removing the folder; the seccomp filter that closes
  sockets (``confine_sockets``) alone; the signal filter (``confine_signals``) alone; each
  against a fork that does nothing;
- what the filters add to each system call the confined process makes (the kernel runs
  them on every one): a cheap system call timed in a forked process before and after it
  installs the socket filter, and the signal filter after it (Landlock adds nothing there:
  it is asked on file opens, signals and traces alone);
- the supervised filter (``supervisor``, Linux 5.5): a fork that installs it and sends its
  listener to this process, against a fork that does nothing; and in such a process, a
  call the filter lets run itself (``setpriority`` of its own id) against one the
  supervisor judges (``setpriority`` of its own child: a round trip to this process, which
  reads ``/proc``).

Run from the repository root::

    python benchmarks/bench_confinement.py [--repeats 9] [--max-positions 64] [--module-targets]
"""

from __future__ import annotations

import argparse
import os
import socket
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
from posenc_spec.gate.child import confine_signals, confine_sockets, confinement, supervisor  # noqa: E402
from posenc_spec.gate.sandbox import CONFINEMENT_SWITCH, SIGNAL_FILTER_SWITCH  # noqa: E402

PATH = "reference_impls.torch_impl:positional_encoding"
# transformers' sinusoidal tables, each under the preset it conforms to (as
# spec_tests/families/sinusoidal/test_gate_transformers.py declares them)
MODULE_TARGETS = {"distilbert": ("vaswani", "ceil"), "marian": ("concat", "ceil"),
                  "m2m100": ("tensor2tensor", "zero-pad"), "whisper": ("tensor2tensor", "error")}


def _check(switch: str, keys: dict, signal_filter: str = "") -> None:
    os.environ[CONFINEMENT_SWITCH], os.environ[SIGNAL_FILTER_SWITCH] = switch, signal_filter
    assert posenc_spec.check(PATH, **keys).conforms


def _module_targets(signal_filter: str, max_positions: int) -> None:
    """The four transformers targets of one module in one run, with or without the signal filter."""
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.engine import check_many
    from posenc_spec.gate.options import run_options
    from spec_tests.real_targets import TRANSFORMERS_PRELOAD, target

    os.environ[CONFINEMENT_SWITCH], os.environ[SIGNAL_FILTER_SWITCH] = "on", signal_filter
    declarations = [declare({"target": target("transformers_tables", name), "convention": preset, "odd": odd,
                             "max_positions": max_positions}) for name, (preset, odd) in MODULE_TARGETS.items()]
    reports = check_many(declarations, run_options(jobs=1, preload=TRANSFORMERS_PRELOAD))
    assert all(report.conforms for report in reports), [report.failures()[:1] for report in reports]


def _forked_seconds(confine: str) -> float:
    """Wall time of a fork that confines itself (``"landlock"``: its folder and Landlock;
    ``"filter"``: the socket filter; ``"signals"``: the signal filter) or does nothing
    (``""``) and exits, until reaped."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        status = 0
        if confine == "landlock":
            folder = confinement.make_private_folder()
            status = 1 if confinement.confine(folder) else 0
        elif confine == "filter":
            status = 1 if confine_sockets.close_sockets() else 0
        elif confine == "signals":
            status = 1 if confine_signals.confine_signals() else 0
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    if confine == "landlock":
        confinement.remove_private_folder(pid)
    assert status == 0, "the kernel refused the confinement"
    return time.perf_counter() - start


def _supervised_seconds() -> float:
    """Wall time of a fork that installs the supervised filter and sends its listener to
    this process, until this process has it and the fork is reaped."""
    watcher = supervisor.Supervisor()
    start = time.perf_counter()
    channel = watcher.channel()
    done_end, child_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        supervisor.take_channel(channel)
        child_end.send(b"1" if supervisor.confine_processes(False) == ("", "") else b"0")
        os._exit(0)
    watcher.expect(channel, pid)
    with done_end, child_end:
        watcher.wait_for(done_end)
        installed = done_end.recv(1) == b"1"
    os.waitpid(pid, 0)
    watcher.forget(pid)
    assert installed, "the kernel refused the supervised filter"
    return time.perf_counter() - start


JUDGED_CALLS = 2_000


def _judged_microseconds() -> tuple[float, float, float]:
    """Microseconds per ``setpriority`` in a supervised forked process: of its own id (the
    filter lets it run) and of its own child (this process judges it); and microseconds the
    installing of the filter and the sending of its listener took there, after the socket
    filter (as in a sealed child)."""
    watcher = supervisor.Supervisor()
    channel = watcher.channel()
    done_end, child_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        supervisor.take_channel(channel)
        confine_sockets.close_sockets()  # first, as in a sealed child
        start = time.perf_counter_ns()
        supervisor.confine_processes(False)
        installing = (time.perf_counter_ns() - start) / 1e3
        child = os.fork()
        if child == 0:
            time.sleep(60)
            os._exit(0)
        figures = [installing]
        for who in (os.getpid(), child):
            start = time.perf_counter_ns()
            for _ in range(JUDGED_CALLS):
                os.setpriority(os.PRIO_PROCESS, who, 0)
            figures.append((time.perf_counter_ns() - start) / JUDGED_CALLS / 1e3)
        os.kill(child, 9)
        child_end.send(" ".join(map(str, figures)).encode())
        os._exit(0)
    watcher.expect(channel, pid)
    with done_end, child_end:
        watcher.wait_for(done_end)
        installing, own, judged = (float(figure) for figure in done_end.recv(200).decode().split())
    os.waitpid(pid, 0)
    watcher.forget(pid)
    return own, judged, installing


SYSCALLS = 200_000


def _syscall_nanoseconds(read_end: int, write_end: int) -> tuple[float, float, float, float, float]:
    """Nanoseconds per ``getppid`` in a forked process, before and after it installs the
    socket filter, and after it installs the signal filter too (the fastest of three passes
    each), and nanoseconds the installing of each took there."""
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
        start = time.perf_counter_ns()
        failed = failed or confine_signals.confine_signals()
        installing_signals = time.perf_counter_ns() - start
        after_both = per_call()
        figures = (before, *((after, after_both) if not failed else ("nan", "nan")), installing, installing_signals)
        os.write(write_end, " ".join(map(str, figures)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    return tuple(float(figure) for figure in os.read(read_end, 200).decode().split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--max-positions", type=int, default=64)
    parser.add_argument("--module-targets", action="store_true",
                        help="also time transformers' four tables of one module, with and without the signal filter")
    args = parser.parse_args()
    print(f"Landlock ABI {confinement.landlock_abi()}")
    keys = {"max_positions": args.max_positions}
    actions = {"confined": lambda: _check("on", keys), "signal filter": lambda: _check("on", keys, "on"),
               "unconfined": lambda: _check("off", keys)}
    for action in actions.values():
        action()  # untimed: the first starts the root template
    times = seconds_in_rounds(actions, args.repeats)
    for name, series in times.items():
        print(f"check of one target, {name:10s} median {statistics.median(series) * 1e3:8.1f} ms "
              f"over {args.repeats} rounds")
    for name in ("confined", "signal filter"):
        difference = median_by_round(lambda confined, free: confined - free, times[name], times["unconfined"])
        print(f"{name} - unconfined: {difference * 1e3:+.1f} ms per target (median of the rounds' differences)")
    if args.module_targets:
        _time_module_targets(args.repeats, args.max_positions)
    with tempfile.TemporaryDirectory() as base:
        confinement.BASE = base
        forks = {"fork, Landlock": lambda: _forked_seconds("landlock"),
                 "fork, filter": lambda: _forked_seconds("filter"), "fork, signals": lambda: _forked_seconds("signals"),
                 "fork, nothing": lambda: _forked_seconds("")}
        if supervisor.available():
            forks["fork, supervised"] = _supervised_seconds
        alone = seconds_in_rounds(forks, args.repeats * 5)
    for name, series in alone.items():
        print(f"{name:15s} median {statistics.median(series) * 1e3:6.2f} ms over {len(series)} forks")
    for name in [name for name in alone if name != "fork, nothing"]:
        cost = median_by_round(lambda confined, free: confined - free, alone[name], alone["fork, nothing"])
        print(f"{name.removeprefix('fork, ')} alone: {cost * 1e3:+.2f} ms per process "
              "(median of the rounds' differences)")
    read_end, write_end = os.pipe()
    pairs = [_syscall_nanoseconds(read_end, write_end) for _ in range(args.repeats)]
    before, after, after_both, installing, installing_signals = (statistics.median(side)
                                                                 for side in zip(*pairs, strict=True))
    print(f"installing the filters, timed inside the process: sockets {installing / 1e3:.0f} us, signals "
          f"{installing_signals / 1e3:.0f} us (medians of {args.repeats})")
    print(f"getppid: {before:.0f} ns unfiltered, {after:.0f} ns with the socket filter ({after - before:+.0f} ns), "
          f"{after_both:.0f} ns with both ({after_both - before:+.0f} ns per system call; medians of {args.repeats} "
          "processes)")
    if supervisor.available():
        judged = [_judged_microseconds() for _ in range(args.repeats)]
        own, other, installing = (statistics.median(side) for side in zip(*judged, strict=True))
        print(f"installing the supervised filter and sending its listener, timed inside the process: "
              f"{installing:.0f} us (median of {args.repeats})")
        print(f"setpriority in a supervised process: {own:.2f} us of its own id (the filter), {other:.1f} us of its "
              f"own child (judged by the supervisor; medians of {args.repeats} processes, {JUDGED_CALLS} calls each)")


def _time_module_targets(repeats: int, max_positions: int) -> None:
    runs = {"module template": lambda: _module_targets("", max_positions),
            "signal filter": lambda: _module_targets("on", max_positions)}
    for run in runs.values():
        run()  # untimed: the first starts the root template that preloads transformers
    times = seconds_in_rounds(runs, repeats)
    per_target = len(MODULE_TARGETS)
    for name, series in times.items():
        median = statistics.median(series) * 1e3 / per_target
        print(f"{per_target} targets of one module, {name:15s} median {median:7.1f}"
              f" ms per target over {repeats} rounds")
    difference = median_by_round(lambda filtered, shared: filtered - shared, times["signal filter"],
                                 times["module template"])
    print(f"signal filter - module template: {difference * 1e3 / per_target:+.1f} ms per target "
          "(median of the rounds' differences)")

if __name__ == "__main__":
    main()
