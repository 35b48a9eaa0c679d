"""A guard the tests of hostile input share: a hang fails the test instead of the run."""

from __future__ import annotations

import contextlib
import signal

HANG_GUARD_SECONDS = 60.0  # far beyond what the guarded work takes: a guard against a hang, not a timing


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
