"""twin_b's helper: the concat table. twin_a has a helper of the same name that builds
the vaswani (interleaved) table."""

from __future__ import annotations

import numpy as np


def build(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    return np.concatenate([np.sin(theta), np.cos(theta)], axis=1).astype(np.float32)
