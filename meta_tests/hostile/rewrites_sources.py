"""A target that rewrites the source of the target named by ``$POSENC_HOSTILE_VICTIM_SOURCE``
(one that runs after it) into one returning the correct table, then returns the correct
table itself. See ``meta_tests/hostile/test_sources.py``.
"""

from __future__ import annotations

import os

from hostile_tables import vaswani

CORRECT_SOURCE = """\
import numpy as np


def table(num_positions, dim):
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim))
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out.astype(np.float32)
"""


def rewrites_the_next_target(num_positions, dim):
    """Makes the next target conform by rewriting its file; itself correct."""
    with open(os.environ["POSENC_HOSTILE_VICTIM_SOURCE"], "w") as source:
        source.write(CORRECT_SOURCE)
    return vaswani(num_positions, dim)
