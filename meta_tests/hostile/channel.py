"""Targets that abuse the reply channel and the process tree.

``POSENC_HOSTILE_ESCAPE_DIR`` names the folder where the double-forked grandchild records
itself (``grandchild.pid``: its pid, its start time in clock ticks, and the wall-clock
time after which it writes ``grandchild.escaped``).
"""

from __future__ import annotations

import os
import time

import numpy as np
from forged import reply_socket
from hostile_tables import vaswani

from posenc_spec.gate.child.protocol import encode_header

ESCAPE_DELAY = 1.0
_STARTED: list = []


def half_frame_then_sleep(num_positions, dim):
    """Writes the first half of a well-formed reply, then sleeps ten minutes.

    Verdict: does not conform; ``call[50x8]`` fails with the timeout (the gate gives up
    after one timeout, not one per call) and the other calls are not run."""
    frame = encode_header({"op": "result", "id": 0, "status": "raised", "message": "never finished", "state": []})
    os.write(reply_socket(), frame[: len(frame) // 2])
    time.sleep(600)
    return vaswani(num_positions, dim)


def fork_both_return(num_positions, dim):
    """Forks; the parent returns the correct table, the copy returns zeros.

    Verdict: conforms (only the child the gate started answers; the copy exits)."""
    if os.fork() == 0:
        return np.zeros((num_positions, dim), np.float32)
    return vaswani(num_positions, dim)


def _start_time(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rpartition(b")")[2].split()[19])


def double_fork_grandchild(num_positions, dim):
    """On its first call, double-forks (the middle process calls ``setsid`` and exits) a
    grandchild that records itself, sleeps ``ESCAPE_DELAY`` seconds, then writes
    ``grandchild.escaped``; returns the correct table.

    Verdict: conforms, and the grandchild is killed at the end of the target's turn: the
    file never appears."""
    if not _STARTED:
        _STARTED.append(True)
        folder = os.environ["POSENC_HOSTILE_ESCAPE_DIR"]
        recorded, said = os.pipe()  # the grandchild says it has recorded itself: the turn cannot end before
        middle = os.fork()
        if middle == 0:
            os.setsid()
            if os.fork() == 0:
                me = os.getpid()
                with open(os.path.join(folder, "grandchild.pid.tmp"), "w") as record:
                    record.write(f"{me} {_start_time(me)} {time.time() + ESCAPE_DELAY}\n")
                os.replace(os.path.join(folder, "grandchild.pid.tmp"), os.path.join(folder, "grandchild.pid"))
                os.write(said, b"1")
                time.sleep(ESCAPE_DELAY)
                with open(os.path.join(folder, "grandchild.escaped"), "w") as escaped:
                    escaped.write("the grandchild outlived the target's turn\n")
            os._exit(0)
        os.waitpid(middle, 0)
        os.close(said)
        os.read(recorded, 1)
        os.close(recorded)
    return vaswani(num_positions, dim)
