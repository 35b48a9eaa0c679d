"""A sinusoidal position table as a flax ``nnx.Module``, written here (not copied) after the
formula of flax's own examples: ``sinusoidal_init`` in google/flax ``examples/wmt/models.py``
and ``examples/lm1b/models.py`` (Apache-2.0), which ``AddPositionEmbs`` adds to its inputs::

    scale_factor = -log(max_scale / min_scale) / (d // 2 - 1)
    div_term[k]  = min_scale * exp(k * scale_factor)          k < d // 2
    pe[p, :d//2] = sin(p * div_term)      pe[p, d//2 : 2*(d//2)] = cos(p * div_term)   (an odd d's last column 0)

That is tensor2tensor's convention (sin half, then cos half; frequencies from 1 down to
exactly 1/10000), zero-padded at odd widths. At ``d = 2`` (and 3) flax's ``d // 2 - 1`` is 0:
its table is NaN there (``0 * -inf``). :class:`SinusoidalPositions` takes tensor2tensor's
guard, ``max(d // 2 - 1, 1)``, and conforms; :class:`SinusoidalPositionsAsFlax` keeps flax's
division and fails ``degenerate[d=2]`` on the NaN; :class:`CosFirstPositions` puts cos in
the first half (a slip) and fails as its NumPy twin :func:`cos_first_table` does.

Declared as a user declares a module that builds its table once and is called with a
length: ``call = "SinusoidalPositions(features=dim)(num_positions)"``.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from flax import nnx


class SinusoidalPositions(nnx.Module):
    """``SinusoidalPositions(features)(length)``: the ``(length, features)`` table. Conforms."""

    guarded = True  # tensor2tensor's max(h - 1, 1) at d = 2 and 3
    first, second = staticmethod(jnp.sin), staticmethod(jnp.cos)

    def __init__(self, features: int, min_scale: float = 1.0, max_scale: float = 10000.0):
        self.features, self.min_scale, self.max_scale = features, min_scale, max_scale

    def __call__(self, length: int):
        half = self.features // 2
        steps = max(half - 1, 1) if self.guarded else half - 1
        # flax's own division by 0 at d = 2 is NumPy's -inf (then 0 * -inf = NaN at k = 0)
        scale_factor = -math.log(self.max_scale / self.min_scale) / steps if steps else -math.inf
        div_term = self.min_scale * jnp.exp(jnp.arange(half, dtype=jnp.float32) * scale_factor)
        angles = jnp.arange(length, dtype=jnp.float32)[:, None] * div_term[None, :]
        pe = jnp.zeros((length, self.features), jnp.float32)
        pe = pe.at[:, :half].set(self.first(angles))
        return pe.at[:, half:2 * half].set(self.second(angles))


class SinusoidalPositionsAsFlax(SinusoidalPositions):
    """flax's examples' division by ``d // 2 - 1`` kept: NaN at d = 2. Fails ``degenerate[d=2]``."""

    guarded = False


class CosFirstPositions(SinusoidalPositions):
    """cos in the first half, sin in the second (a slip). Fails as :func:`cos_first_table`."""

    first, second = staticmethod(jnp.cos), staticmethod(jnp.sin)


def cos_first_table(num_positions: int, dim: int):
    """The same slip in NumPy, float32: the twin whose failures and hints the module must share."""
    half = dim // 2
    div_term = np.exp(np.arange(half, dtype=np.float32) * np.float32(-math.log(10000.0) / max(half - 1, 1)))
    angles = np.arange(num_positions, dtype=np.float32)[:, None] * div_term[None, :]
    table = np.zeros((num_positions, dim), np.float32)
    table[:, :half], table[:, half:2 * half] = np.cos(angles), np.sin(angles)
    return table
