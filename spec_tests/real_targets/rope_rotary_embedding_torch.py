"""lucidrains' rotary-embedding-torch behind the gate's RoPE APIs (called, not copied).

Its ``RotaryEmbedding(dim)`` holds ``freqs = theta ** (-2i/dim)`` and returns angles, each
repeated for its pair: the interleaved layout, pairs ``(2i, 2i + 1)`` (``rotate_half``
there rotates neighbours). One module per head size is kept for the whole run, as a model
keeps it, so that its cache of angles (up to ``cache_max_seq_len`` = 8192 positions) is
shared between calls.

- :func:`angles`: ``forward(positions)``, the angles of explicit positions (a rope-cache of
  ``angles``, interleaved).
- :func:`interpolated_angles`: ``forward(get_seq_pos(L), seq_len=L)`` with
  ``interpolate_factor = 2``, how ``rotate_queries_or_keys`` builds its angles for a
  sequence of length ``L`` (linear position interpolation, through the cache).
- :func:`rotate_queries`: ``rotate_queries_or_keys(x, offset=o)``, the library's apply.
  It takes no positions: a sequence holds positions ``o .. o + S - 1``, so the gate's
  positions are cut into such runs and each run is rotated with its offset.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from rotary_embedding_torch import RotaryEmbedding

INTERPOLATE_FACTOR = 2.0


@functools.cache
def _rotary(head_dim: int, interpolate_factor: float = 1.0) -> RotaryEmbedding:
    return RotaryEmbedding(dim=head_dim, interpolate_factor=interpolate_factor)


def angles(positions, head_dim):
    return _rotary(head_dim)(positions)


def interpolated_angles(seq_len, head_dim):
    rotary = _rotary(head_dim, INTERPOLATE_FACTOR)
    return rotary(rotary.get_seq_pos(seq_len), seq_len=seq_len)


def _runs(positions: np.ndarray):
    """``(first index, end index, first position)`` of each run of consecutive positions."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [positions.size]])
    return [(int(start), int(end), int(positions[start])) for start, end in zip(starts, ends, strict=True)]


def rotate_queries(x, positions):
    """``x`` is ``(batch, heads, seq, head_dim)``, the library's default ``seq_dim = -2``."""
    rotary = _rotary(x.shape[-1])
    pieces = [rotary.rotate_queries_or_keys(x[..., start:end, :], offset=offset)
              for start, end, offset in _runs(positions.numpy())]
    return torch.cat(pieces, dim=-2)
