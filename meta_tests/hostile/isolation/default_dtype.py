"""Polluter: ``torch.set_default_dtype(torch.float64)`` when imported; builds its table in
the default dtype. Verdict: does not conform, ``global-state`` naming the default dtype its
module's own code left changed (every program importing it would compute in float64); its
table itself passes, and the next target is untouched."""

from __future__ import annotations

import torch

torch.set_default_dtype(torch.float64)


def table(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = torch.arange(dim // 2)
    theta = torch.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = torch.empty(num_positions, dim)
    out[:, 0::2], out[:, 1::2] = torch.sin(theta), torch.cos(theta)
    return out
