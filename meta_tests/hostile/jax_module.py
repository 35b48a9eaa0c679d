"""A module that imports JAX (and starts nothing) and computes its table in JAX: its
target's framework is read from the module (no ``framework`` declared). Verdict: conforms.

    theta[p, k] = p * 10000 ** (-2k / d)      column 2k = sin(theta_k), column 2k+1 = cos(theta_k)
"""

from __future__ import annotations

import jax.numpy as jnp


def vaswani(num_positions, dim):
    """The vaswani table in JAX. Conforms, its result named a jax Array."""
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    theta = jnp.arange(num_positions, dtype=jnp.float32)[:, None] * 10000.0 ** (
        -2.0 * jnp.arange(dim // 2, dtype=jnp.float32) / dim)
    return jnp.stack([jnp.sin(theta), jnp.cos(theta)], axis=-1).reshape(num_positions, dim)

