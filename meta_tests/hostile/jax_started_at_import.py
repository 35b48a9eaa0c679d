"""A module that computes with JAX when imported, which starts JAX's backend and its
threads; two correct targets in it. A child forked from a process that imported it would
hang at its first computation: the gate imports it in each target's own child instead of
sharing one import. Verdict of each: conforms.

    theta[p, k] = p * 10000 ** (-2k / d)      column 2k = sin(theta_k), column 2k+1 = cos(theta_k)
"""

from __future__ import annotations

import jax.numpy as jnp

SCALE = jnp.float32(10000.0) ** 0  # a computation at import: JAX's backend starts here


def vaswani(num_positions, dim):
    """The vaswani table in JAX. Conforms."""
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    theta = jnp.arange(num_positions, dtype=jnp.float32)[:, None] * 10000.0 ** (
        -2.0 * jnp.arange(dim // 2, dtype=jnp.float32) / dim)
    return SCALE * jnp.stack([jnp.sin(theta), jnp.cos(theta)], axis=-1).reshape(num_positions, dim)


vaswani_again = vaswani
