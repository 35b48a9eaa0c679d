"""Polluter: enters ``torch.inference_mode()`` when imported and never leaves it (a with
block held open by a suspended generator). Verdict: does not conform, ``global-state``
naming the inference mode and grad mode its module's own code left changed (every program
that imports it would run without autograd); the next target is untouched."""

from __future__ import annotations

import torch


def _inside():
    with torch.inference_mode():
        yield


_HELD = _inside()
next(_HELD)


def table(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    k = torch.arange(dim // 2, dtype=torch.float64)
    theta = torch.arange(num_positions, dtype=torch.float64)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = torch.empty(num_positions, dim, dtype=torch.float64)
    out[:, 0::2], out[:, 1::2] = torch.sin(theta), torch.cos(theta)
    return out.float()
