"""Correct tables for the hostile targets to return, forge or damage, and one correct target.

A float64 formula written out here and rounded once to the requested dtype (not the
project's oracle: a target must not be the function the gate compares it with)::

    theta[p, k] = p * 10000 ** (-2k / d)        k = 0 .. d/2 - 1
    vaswani     column 2k = sin(theta_k), column 2k+1 = cos(theta_k)

Odd widths raise ValueError, as the default ``odd='error'`` declares.
"""

from __future__ import annotations

import numpy as np


def angles(positions, dim: int) -> np.ndarray:
    """``theta`` for ``positions`` (an int n for 0 .. n-1, or 1-D values) at width ``dim``."""
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    if isinstance(positions, int):
        positions = np.arange(positions)
    k = np.arange(dim // 2)
    return np.asarray(positions, dtype=np.float64)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]


def vaswani(positions, dim: int, dtype=np.float32) -> np.ndarray:
    """The vaswani table in ``dtype``."""
    theta = angles(positions, dim)
    table = np.empty((theta.shape[0], dim))
    table[:, 0::2], table[:, 1::2] = np.sin(theta), np.cos(theta)
    return table.astype(dtype)


def vaswani_table(num_positions, dim):
    """A correct float32 vaswani table. Verdict: conforms (the target that runs after the
    hostile ones, to show the gate carries on)."""
    return vaswani(num_positions, dim)
