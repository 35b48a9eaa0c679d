"""twin_a's helper: the vaswani (interleaved) table. twin_b has a helper of the same name
that builds the concat table."""

from __future__ import annotations

import numpy as np


def build(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim), np.float32)
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out
