"""Two targets of one module (the gate imports it once for both): the first changes a
module-level setting in every call, the second depends on it.

Each target runs in a process of its own forked after the import, so the second sees the
setting as imported. Verdict of both: conforms."""

from __future__ import annotations

import numpy as np

_SETTINGS = {"sign": 1.0}


def _vaswani(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim))
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out


def flips_the_sign(num_positions, dim):
    """Returns the correct table and flips the module's sign for whatever runs next."""
    _SETTINGS["sign"] = -1.0
    return _vaswani(num_positions, dim).astype(np.float32)


def uses_the_sign(num_positions, dim):
    """The correct table times the module's sign (1 as imported)."""
    return (_SETTINGS["sign"] * _vaswani(num_positions, dim)).astype(np.float32)
