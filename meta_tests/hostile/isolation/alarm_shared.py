"""Two targets of one module that leaves ``signal.alarm(1)`` pending when imported.

The gate imports a module with several targets once, in a module template that forks a
process for each target; the pending alarm kills that template a second later. The first
target is slow (1.2 s on its single-position call), so the second must be started after
the template died.

Verdict: whether they conform depends on how the gate survives the alarm, but each gets
a verdict (no internal error) with a warning that the import changed the interval timer,
and the next target (another module) conforms."""

from __future__ import annotations

import signal
import time

import numpy as np

SLOW_CALL_SECONDS = 1.2

signal.alarm(1)


def _vaswani(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim), np.float32)
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out


def slow(num_positions, dim):
    if num_positions == 1:
        time.sleep(SLOW_CALL_SECONDS)
    return _vaswani(num_positions, dim)


def second(num_positions, dim):
    return _vaswani(num_positions, dim)
