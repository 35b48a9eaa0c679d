"""Targets that reach for the gate's own processes: the gate, the root template, and the
child of a target in the other lane (``-j 2``). Each attempt is harmless if it succeeds
(a tracer attaches and detaches at once; a signal is signal 0, a permission check; a file
is opened and closed), and what each got goes as one JSON line into the file named by
``POSENC_HOSTILE_REACH``: ``{attempt: "refused" | "allowed"}``. The targets return the
correct table. See ``meta_tests/hostile/test_reach.py`` for what must hold as root and as
another user.
"""

from __future__ import annotations

import ctypes
import json
import os
import time

from hostile_tables import vaswani

TEMPLATE = b"posenc_spec.gate.child.template"
PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17
# The two lanes meet through files, not at a time: the reaching target waits for the
# neighbour's process id, the neighbour for the reaching target's record. This bounds each
# wait only in case the other never comes (a loaded runner starts the other lane late);
# the suite declares a timeout above it (meta_tests/hostile/test_reach.py).
NEIGHBOUR_WAIT = 60.0
_TRIED: list = []


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rpartition(b")")[2].split()[1])


def _gate_and_root() -> tuple[int, int]:
    """The gate's process id and its root template's: the templates are the ancestors that
    run the template's code; the gate is the first ancestor that does not."""
    pid, root = _parent(os.getpid()), None
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if TEMPLATE not in handle.read():
                return pid, root
        root, pid = pid, _parent(pid)
    raise RuntimeError("no gate above this process")


def _ptrace(pid: int) -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(PTRACE_SEIZE, pid, 0, 0) != 0:
        return "refused"
    libc.ptrace(PTRACE_DETACH, pid, 0, 0)
    return "allowed"


def _open(path: str, flags: int) -> str:
    try:
        os.close(os.open(path, flags))
    except OSError:
        return "refused"
    return "allowed"


def _signal(pid: int) -> str:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return "refused"
    except ProcessLookupError:
        return "gone"
    return "allowed"


def _wait_for(path: str) -> str | None:
    """The text of the file at ``path`` once it exists (None after ``NEIGHBOUR_WAIT``)."""
    deadline = time.monotonic() + NEIGHBOUR_WAIT
    while time.monotonic() < deadline:
        try:
            with open(path) as handle:
                return handle.read()
        except OSError:
            time.sleep(0.05)
    return None


def _neighbour() -> int | None:
    text = _wait_for(os.environ["POSENC_HOSTILE_NEIGHBOUR"])
    return int(text) if text else None


def _write(path: str, text: str) -> None:
    """Write the file at once (the reader never sees it half written)."""
    with open(path + ".tmp", "w") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def reaches_for_the_gate(num_positions, dim):
    """Tries to trace the gate and its root template, to open the gate's standard output and
    memory through ``/proc``, and to signal the gate, the root template and the other lane's
    child, on its first call; records what each got."""
    if _TRIED:
        return vaswani(num_positions, dim)
    _TRIED.append(True)
    gate, root = _gate_and_root()
    attempts = {
        "trace the gate": _ptrace(gate),
        "trace the root template": _ptrace(root),
        "write the gate's standard output through /proc": _open(f"/proc/{gate}/fd/1", os.O_WRONLY),
        "read the gate's memory through /proc": _open(f"/proc/{gate}/mem", os.O_RDONLY),
        "signal the gate": _signal(gate),
        "signal the root template": _signal(root),
    }
    neighbour = _neighbour()
    attempts["signal the other lane's child"] = "not found" if neighbour is None else _signal(neighbour)
    with open(os.environ["POSENC_HOSTILE_REACH"], "a") as record:
        record.write(json.dumps(attempts) + "\n")
    _write(os.environ["POSENC_HOSTILE_NEIGHBOUR"] + ".done", "done")
    return vaswani(num_positions, dim)


def waits_in_the_other_lane(num_positions, dim):
    """Writes its process id where ``POSENC_HOSTILE_NEIGHBOUR`` says and waits, on its first
    call, until the other lane's target has recorded what it got."""
    path = os.environ["POSENC_HOSTILE_NEIGHBOUR"]
    if not os.path.exists(path):
        _write(path, str(os.getpid()))
        _wait_for(path + ".done")
    return vaswani(num_positions, dim)
