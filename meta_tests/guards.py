"""Guards the tests of hostile input share: a hang fails the test instead of the run.

A limit a test puts on its own waiting guards against a hang and is never a timing: it is
the guarded work's budget, the seconds it takes on an idle 2-core machine (written beside
each limit), times ``LOADED_SLOWDOWN`` for a CI runner at load average 10 on two cores
(each runnable process gets a fifth of a core), times ``MARGIN`` for what the budget does
not foresee (a cold disk cache, a slower processor).
"""

from __future__ import annotations

import contextlib
import signal

LOADED_SLOWDOWN = 5
MARGIN = 4


def guard_seconds(idle_seconds: float) -> float:
    """The limit of a guard on work that takes ``idle_seconds`` on an idle 2-core machine."""
    return idle_seconds * LOADED_SLOWDOWN * MARGIN


# In-process gate runs of a few hostile targets (meta_tests/hostile/test_plot_snapshot.py): 3 s.
HANG_GUARD_SECONDS = guard_seconds(3)
# One `posenc-spec check` command of up to 14 hostile targets, -j 1 or 2: a Python importing
# torch, a root template importing it and torch's compiler configuration, and the targets: 8 s.
CLI_RUN_SECONDS = guard_seconds(8)


@contextlib.contextmanager
def hang_guard(seconds: float = HANG_GUARD_SECONDS):
    """Raise TimeoutError instead of hanging when the block has not finished in ``seconds``:
    SIGALRM also interrupts a blocked system call, such as the open of a FIFO without a
    writer. Main thread only (where pytest runs tests)."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds:g} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
