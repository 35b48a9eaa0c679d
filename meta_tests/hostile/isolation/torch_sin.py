"""Polluter: replaces ``torch.sin`` by ``torch.cos`` when imported, and computes its table
with ``torch.sin``. Verdict: does not conform; the next target is untouched."""

from __future__ import annotations

import torch

torch.sin = torch.cos


def table(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = torch.arange(dim // 2, dtype=torch.float64)
    theta = torch.arange(num_positions, dtype=torch.float64)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = torch.empty(num_positions, dim)
    out[:, 0::2], out[:, 1::2] = torch.sin(theta), torch.cos(theta)
    return out
