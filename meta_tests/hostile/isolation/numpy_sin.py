"""Polluter: replaces ``numpy.sin`` by ``numpy.cos`` when imported, and computes its table
with ``numpy.sin``. Verdict: does not conform (its sines are cosines); the next target is
untouched."""

from __future__ import annotations

import numpy as np

np.sin = np.cos


def table(num_positions, dim):
    k = np.arange(dim // 2)
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim), np.float32)
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out
