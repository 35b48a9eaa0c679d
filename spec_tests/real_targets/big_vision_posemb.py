"""big_vision's 2-D sincos position embedding in JAX, written here (not copied) after the
formula of ``posemb_sincos_2d(h, w, width, temperature=10_000., dtype=jnp.float32)`` in
google-research/big_vision ``big_vision/models/vit.py`` (Apache-2.0; "follows the MoCo v3
logic"), which ViTs with ``posemb="sincos2d"`` add to their ``(1, h*w, width)`` tokens::

    y, x   = mgrid[:h, :w]                                (rows, columns; row-major tokens)
    omega  = 1 / temperature ** (arange(width // 4) / (width // 4 - 1))
    pe     = [sin(x omega) | cos(x omega) | sin(y omega) | cos(y omega)]   (1, h*w, width), dtype

The column coordinate fills the first half, each half ``[sin | cos]``, the lowest frequency
exactly ``1 / temperature``: the gate's ``big-vision`` preset (``temperature`` its ``base``).
:func:`posemb_sincos_2d` computes what the source computes, with the same jnp operations:
it differs in spelling only (``jnp.outer`` for the source's ``einsum("m,d->md")``, the
assertion's message). Like the source it asserts ``width % 4 == 0`` and nothing more: at
``width = 4`` ``arange(1) / 0`` is 0/0 and the table is NaN (JAX divides without raising).

Planted slips, each the JAX twin of an entry of ``meta_tests/corpus/sincos2d_wrong.py`` (the
corpus's NumPy or torch function of the same slip, under the same preset):
:func:`posemb_without_the_minus_one` (``big_vision_without_the_minus_one``) and
:func:`posemb_flattened_transposed` (``flatten_after_transpose``).
"""

from __future__ import annotations

import jax.numpy as jnp


def _omega(width: int, temperature: float, steps: int):
    return 1.0 / (temperature ** (jnp.arange(width // 4) / steps))


def _table(y, x, omega, dtype):
    """The ``(1, tokens, width)`` table of the flattened row and column coordinates."""
    y, x = jnp.outer(y.flatten(), omega), jnp.outer(x.flatten(), omega)
    pe = jnp.concatenate([jnp.sin(x), jnp.cos(x), jnp.sin(y), jnp.cos(y)], axis=1)
    return jnp.asarray(pe, dtype)[None, :, :]


def posemb_sincos_2d(h, w, width, temperature=10_000.0, dtype=jnp.float32):
    """big_vision's table: ``(1, h*w, width)``, column coordinate first, row-major tokens."""
    y, x = jnp.mgrid[:h, :w]
    assert width % 4 == 0, "the width must be a multiple of 4 for the 2-D sincos table"
    return _table(y, x, _omega(width, temperature, width // 4 - 1), dtype)


def posemb_without_the_minus_one(h, w, width, temperature=10_000.0, dtype=jnp.float32):
    """Slip: ``arange(width // 4) / (width // 4)``, MAE's denominator under big_vision's name."""
    y, x = jnp.mgrid[:h, :w]
    assert width % 4 == 0, "the width must be a multiple of 4 for the 2-D sincos table"
    return _table(y, x, _omega(width, temperature, width // 4), dtype)


def posemb_flattened_transposed(h, w, width, temperature=10_000.0, dtype=jnp.float32):
    """Slip: the ``(h, w, width)`` grid flattened after swapping its first two axes (column-major tokens)."""
    y, x = jnp.mgrid[:h, :w]
    assert width % 4 == 0, "the width must be a multiple of 4 for the 2-D sincos table"
    grid = _table(y, x, _omega(width, temperature, width // 4 - 1), dtype)[0].reshape(h, w, width)
    return grid.transpose(1, 0, 2).reshape(1, h * w, width)
