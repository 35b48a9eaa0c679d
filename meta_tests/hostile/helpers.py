"""Targets that attack the gate's helper processes: the templates their process was forked
from (its parent is one; the root template is further up). Each returns the correct table.

Verdict of each: does not conform, a ``call`` check failing with a reason that says a
helper process died or was stopped during the target's turn; the gate replaces its helpers
and the next target of the run conforms.
"""

from __future__ import annotations

import os
import signal
import time

from hostile_tables import vaswani

TEMPLATE = b"posenc_spec.gate.child.template"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rpartition(b")")[2].split()[1])


def _templates() -> list[int]:
    """The templates above this process, nearest first (the gate is the first that is not one)."""
    found, pid = [], _parent(os.getpid())
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if TEMPLATE not in handle.read():
                break
        found.append(pid)
        pid = _parent(pid)
    return found


def kills_its_parent(num_positions, dim):
    """SIGKILLs the template it was forked from, then waits for its own end."""
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(2)
    return vaswani(num_positions, dim)


def stops_its_parent(num_positions, dim):
    """SIGSTOPs the template it was forked from and returns as usual."""
    os.kill(os.getppid(), signal.SIGSTOP)
    return vaswani(num_positions, dim)


def kills_every_template(num_positions, dim):
    """SIGKILLs every template above it, the root template first."""
    for pid in reversed(_templates()):
        os.kill(pid, signal.SIGKILL)
    time.sleep(2)
    return vaswani(num_positions, dim)


def stops_the_root_template(num_positions, dim):
    """SIGSTOPs the root template (the furthest template up) and returns as usual."""
    os.kill(_templates()[-1], signal.SIGSTOP)
    return vaswani(num_positions, dim)
