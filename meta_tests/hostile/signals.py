"""Targets that signal processes outside their own (run only as an ordinary user of the
test's own, with the target's signals confined: ``test_confine_signals_gate.py``), and
correct targets that signal themselves. Each returns the correct table.

Verdict of each attacker: does not conform, its call raising ``PermissionError`` (the
confinement refuses the signal, or the change of the gate's resource limits); the gate, its
templates and the targets after it are untouched. Verdict of each target that signals itself: conforms.
"""

from __future__ import annotations

import os
import signal
import threading

from hostile_tables import vaswani

TEMPLATE = b"posenc_spec.gate.child.template"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rpartition(b")")[2].split()[1])


def _gate() -> int:
    """The gate: the first process above this one that is not one of its templates."""
    pid = _parent(os.getpid())
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if TEMPLATE not in handle.read():
                return pid
        pid = _parent(pid)
    raise LookupError("no gate above this process")


def stops_its_parent(num_positions, dim):
    """SIGSTOPs the template it was forked from."""
    os.kill(os.getppid(), signal.SIGSTOP)
    return vaswani(num_positions, dim)


def kills_its_parent(num_positions, dim):
    """SIGKILLs the template it was forked from."""
    os.kill(os.getppid(), signal.SIGKILL)
    return vaswani(num_positions, dim)


def stops_the_gate(num_positions, dim):
    """SIGSTOPs the gate (the step would hang)."""
    os.kill(_gate(), signal.SIGSTOP)
    return vaswani(num_positions, dim)


def interrupts_the_gate(num_positions, dim):
    """SIGINTs the gate (a KeyboardInterrupt in it)."""
    os.kill(_gate(), signal.SIGINT)
    return vaswani(num_positions, dim)


def kills_the_gates_group(num_positions, dim):
    """SIGKILLs the gate's process group (the step's shell with it, in a CI job)."""
    os.killpg(os.getpgid(_gate()), signal.SIGKILL)
    return vaswani(num_positions, dim)


def stops_every_process(num_positions, dim):
    """SIGSTOPs every process its user may signal: ``kill(-1, SIGSTOP)``."""
    os.kill(-1, signal.SIGSTOP)
    return vaswani(num_positions, dim)


def sends_sigio_to_the_gate(num_positions, dim):
    """Makes the gate the owner of a pipe's end, with SIGKILL as the signal sent when it is
    ready (``fcntl`` ``F_SETOWN`` and ``F_SETSIG``), and writes to the pipe."""
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(read_end, fcntl.F_SETOWN, _gate())
    fcntl.fcntl(read_end, 10, signal.SIGKILL)  # F_SETSIG
    fcntl.fcntl(read_end, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
    os.write(write_end, b"x")
    return vaswani(num_positions, dim)


def limits_the_gates_cpu(num_positions, dim):
    """Sets the gate's CPU-time limit to one second (the kernel would kill it then)."""
    import resource

    resource.prlimit(_gate(), resource.RLIMIT_CPU, (1, 1))
    return vaswani(num_positions, dim)


def signals_itself(num_positions, dim):
    """Signals itself by process id, by ``raise_signal``, its own group and one of its own
    threads, each caught by its own handler (put back after). Verdict: conforms."""
    caught = []
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: caught.append(number))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        signal.raise_signal(signal.SIGUSR1)
        os.killpg(0, signal.SIGUSR1)
        waiting = threading.Event()
        worker = threading.Thread(target=waiting.wait, args=(5,))
        worker.start()
        signal.pthread_kill(worker.ident, 0)
        waiting.set()
        worker.join()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    if len(caught) != 3:
        raise RuntimeError(f"caught {len(caught)} of 3 signals")
    return vaswani(num_positions, dim)
