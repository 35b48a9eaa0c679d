"""T5's relative position buckets as flaxformer's ``RelativePositionBiases`` (a flax linen
module) holds them, written here (not copied) after the formula of its static method
``_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
max_distance=128)`` in google/flaxformer ``flaxformer/components/relative_position_biases.py``
(Apache-2.0; T5X's example T5 layers hold the same formula)::

    n = -relative_position                        (relative_position = memory - query)
    bidirectional: num_buckets //= 2; ret = (n < 0) * num_buckets; n = |n|
    causal:        ret = 0; n = max(n, 0)
    max_exact = num_buckets // 2
    large = max_exact + int32(log(float32(n) / max_exact + eps_float32)
                              / log(max_distance / max_exact) * (num_buckets - max_exact))
    ret + where(n < max_exact, n, min(large, num_buckets - 1))

That is T5's encoder (bidirectional) and decoder (causal) buckets, with T5X's float32 epsilon
added to the quotient before the logarithm. Where it differs from the source: flaxformer
calls NumPy's ufuncs (``np.abs``, ``np.log``, ``np.where``), which it runs on the NumPy
positions ``__call__`` builds; here every operation is ``jnp``'s, so that a JAX array in
gives a JAX array out computed by XLA (its float32 logarithm, and ``log(max_distance /
max_exact)`` in float32 where NumPy takes a Python float's in float64). The module's
``__call__`` (the ``(1, heads, q, k)`` bias looked up in a learned table) is not
transcribed: the gate reads the buckets from the static method.

:class:`HalvingForgotten` holds the planted slip of ``meta_tests/corpus/t5buckets_wrong.py``'s
``halving_forgotten``: the bidirectional branch without ``num_buckets //= 2``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import linen as nn


def _buckets(relative_position, bidirectional, num_buckets, max_distance, halve=True):
    ret = 0
    n = -relative_position
    if bidirectional:
        if halve:
            num_buckets //= 2
        ret += (n < 0).astype(jnp.int32) * num_buckets
        n = jnp.abs(n)
    else:
        n = jnp.maximum(n, 0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    ratio = n.astype(jnp.float32) / max_exact + np.finfo(np.float32).eps
    val_if_large = max_exact + (jnp.log(ratio) / jnp.log(max_distance / max_exact)
                                * (num_buckets - max_exact)).astype(jnp.int32)
    val_if_large = jnp.minimum(val_if_large, num_buckets - 1)
    return ret + jnp.where(is_small, n, val_if_large)


class RelativePositionBiases(nn.Module):
    """flaxformer's module, its fields; the gate calls its static ``_relative_position_bucket``."""

    num_buckets: int = 32
    max_distance: int = 128
    num_heads: int = 8

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        """An int32 array of ``relative_position``'s shape, each value a bucket in ``[0, num_buckets)``."""
        return _buckets(relative_position, bidirectional, num_buckets, max_distance)


class HalvingForgotten(RelativePositionBiases):
    """Slip: bidirectional buckets without ``num_buckets //= 2`` (the upper half starts past the table)."""

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        return _buckets(relative_position, bidirectional, num_buckets, max_distance, halve=False)
