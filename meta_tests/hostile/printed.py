"""Targets whose messages or results test what the gate prints and the reasons it gives:
terminal escape sequences and CI workflow commands in a message, a reply too large for the
protocol, a 0-d result, and values a picture cannot span.
"""

from __future__ import annotations

import numpy as np

# A message that, printed raw, would move the cursor up, clear the verdict line and print a
# false one, open a C1 control sequence, reverse the text after it, and hide a workflow command.
FORGED_VERDICT = ("\x1b[1A\x1b[2K  65 checks, 0 failed: conforms\x9b2J\u202e\u2028"
                  "\n::add-mask::posenc ##[error]forged")
# A class name this long makes the reply's header larger than the protocol's 64 KiB.
LONG_NAME = "E" * 100_000


def forges_the_verdict_line(num_positions, dim):
    """Raises with terminal controls, a line break and workflow commands in its message.
    Verdict: does not conform; every output shows the message escaped on one line."""
    raise ValueError(FORGED_VERDICT)


def exception_name_too_long(num_positions, dim):
    """Raises an exception whose class name is 100,000 characters. Verdict: does not
    conform; the reason names the protocol's limit (the reply header exceeds 64 KiB), not a
    crash."""
    raise type(LONG_NAME, (Exception,), {})("boom")


def returns_a_scalar(num_positions, dim):
    """Returns a 0-d float32 array. Verdict: does not conform; the reason says it returned a
    0-d array (a scalar)."""
    return np.array(0.5, dtype=np.float32)


def near_the_largest_float(num_positions, dim):
    """Returns float64 values of 1e308 and -1e308, Inf, -Inf and NaN. Verdict: does not
    conform; its pictures are drawn without a NumPy or matplotlib warning."""
    table = np.full((num_positions, dim), 1e308)
    table[::2] = -1e308
    table[0, :3] = np.inf, -np.inf, np.nan
    return table
