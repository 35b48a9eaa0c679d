"""Targets that leave something behind after their turn: a daemon which kills the target's
slot template (its parent, the subreaper that would kill the daemon at the end of the turn)
and keeps running, its process id written to ``$POSENC_HOSTILE_DAEMON``; a file of shared
memory. See ``meta_tests/hostile/test_escape.py``.
"""

from __future__ import annotations

import os
import signal
import time

from hostile_tables import vaswani

DAEMON_SECONDS = 120  # far longer than the run: the test looks for it after the gate exits


def kills_its_template_and_stays(num_positions, dim):
    """Double-forks a daemon in a session of its own that SIGKILLs the slot template."""
    template = os.getppid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                os.kill(template, signal.SIGKILL)
            except OSError:
                pass
            with open(os.environ["POSENC_HOSTILE_DAEMON"], "w") as record:
                record.write(str(os.getpid()))
            time.sleep(DAEMON_SECONDS)
        os._exit(0)
    time.sleep(0.5)  # the daemon is on its way before the call returns
    return vaswani(num_positions, dim)


def leaves_shared_memory(num_positions, dim):
    """Leaves a closed 1 MiB file under /dev/shm, named by ``$POSENC_HOSTILE_SHM``."""
    with open(os.environ["POSENC_HOSTILE_SHM"], "wb") as memory:
        memory.write(bytes(1 << 20))
    return vaswani(num_positions, dim)
