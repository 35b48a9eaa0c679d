"""Targets for the command line's output paths.

When ``POSENC_HOSTILE_IMPORTED`` names a file, importing this module writes it: a usage
error must stop the command before any target is imported, so the file never appears.
"""

from __future__ import annotations

import os

from hostile_tables import vaswani

if os.environ.get("POSENC_HOSTILE_IMPORTED"):
    with open(os.environ["POSENC_HOSTILE_IMPORTED"], "w") as marker:
        marker.write("imported\n")


def surrogate_message(num_positions, dim):
    """Raises with lone surrogates in its message (text no UTF-8 stream can print).
    Verdict: does not conform (exit 1); the report is written, with no traceback."""
    raise ValueError("lone surrogates \udc80 and \ud800 in a message")


def correct_table(num_positions, dim):
    """A correct float32 vaswani table. Verdict: conforms (exit 0)."""
    return vaswani(num_positions, dim)
