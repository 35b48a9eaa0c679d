"""Polluter: leaves ``signal.alarm(1)`` pending when imported (SIGALRM kills a process
that does not handle it), and returns correct tables.

Its own verdict depends on whether its calls finish within the second; the gate reports
that the import changed the interval timer either way. The next target is untouched."""

from __future__ import annotations

import signal

import numpy as np

signal.alarm(1)


def table(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim), np.float32)
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out
