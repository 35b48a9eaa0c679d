"""How far a correct multi-axis rotary value may be from the exact one: one bound per token and slot.

A slot is a one-axis rotary pair, so the bound is :mod:`posenc_spec.families.rope.tolerance`'s
per pair, taken at the slot's own frequency and position. A correct implementation forms the
frequency and the angle in precision ``u_a`` and stores cos and sin in ``u_o``:

M1. ``f_j``, relative ``delta_j``: the rope family's R1 for its base ``theta ** (-e)``,
    ``(2 x + 3) u_a`` with ``x = e |ln theta|`` (:func:`~posenc_spec.families.rope.tolerance.rope_frequency_error`
    of a default RoPE of the slot's theta, over the whole head for shared and strided
    frequencies, at the slot's index in that RoPE, over the axis's own ``2 n_k`` features for
    per-axis ones).
M2. the position along the slot's axis, absolute ``e_p``: 0 for an integer below ``2**24``
    (every position the grid hands over, and every ``arange`` of a grid); for a position a
    target computes from a crop, ``start + i (stop - start) / n`` (a linspace: the step's
    quotient, the product, the sum, and the end point scaled by ``(n - 1) / n`` as diffusers
    does, two roundings more) at most ``8 u_a max(|start|, |stop|)``.
M3. ``p f_j``: ``u_a``; the angle is off by ``(delta_j + u_a) |theta| + e_p f_j``.
M4. cos or sin: ``4 u_a``; M5. the stored dtype: ``u_o``.

    t = (delta_j + u_a) |theta| + e_p f_j + 4 u_a + u_o

plus the float64 oracle's own (:mod:`.oracle`): the same with ``u_a = u_o = 2**-53``, ``delta_j``
the one rounding of the exact frequency. At the grid's largest position (32767, slot 0 of a
shared head) a float32 bound is about 6e-3, where transformers' float32 Qwen2-VL code measures
about 2e-3; one base off by one part in 1e4 (theta 10000 for 1e6) moves the low slots' angle by
radians.

``norm`` compares ``cos**2 + sin**2`` with 1: ``2 t + 3 u_o`` (each square's error ``2 t``
first order, the sum and the two products).

Applied to ``x`` (``mrope-apply``) as transformers and diffusers apply it, cos and sin in x's
dtype ``u_x`` (``t`` the cache bound at ``u_o = u_x``; where the gate hands the exact cos and sin
over, rounded to x's dtype, ``t = u_x``), ``x cos + rotate(x) sin`` in ``u_x`` or finer, stored
in ``u_o``: each output of a slot's pair ``(a, b)`` is off by

    t_apply = (|x_a| + |x_b|) (t + (2 u_x + u_o) (1 + t))

(the rope family's ``rope_apply_bound``: two products and a sum, then the store), a feature
beyond ``R`` by ``u_o |x|``; plus the float64 oracle's own. An apply pairing one way with cos and
sin laid out the other (the slip :mod:`.slips` tests) takes for each output the ``t`` of the
table column it reads. ``norm`` of a pair compares
``|x'_a|^2 + |x'_b|^2`` with ``|x_a|^2 + |x_b|^2``: ``2 (|x_a| + |x_b|) t_apply + 3 u (...)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.tolerance import rope_frequency_error
from posenc_spec.tolerance import DEFAULT_ANGLE_DTYPE, unit_roundoff

from . import oracle
from .conventions import MropeConvention

FLOAT64 = "float64"
# M2: roundings of a crop's linspace position, relative to the crop's largest end.
CROP_ROUNDINGS = 8


def frequency_error(convention: MropeConvention, angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """M1: the relative bound on each slot's frequency, ``(P,)``."""
    if convention.frequencies != "per-axis":
        head = rope_frequency_error(RopeConvention(theta=convention.theta[0]), convention.rotary_dim, None,
                                    angle_dtype)
        return head[convention.head_slots()]
    return np.concatenate([rope_frequency_error(RopeConvention(theta=theta), 2 * pairs, None, angle_dtype)
                           for theta, pairs in zip(convention.theta, convention.sections, strict=True)])


def crop_position_error(crop: dict | None, axes: tuple[str, ...], angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """M2 per axis, ``(len(axes),)``: 0 for an axis without a crop."""
    u = unit_roundoff(angle_dtype)
    return np.array([CROP_ROUNDINGS * u * max(abs(value) for value in crop[axis]) if crop and axis in crop else 0.0
                     for axis in axes])


def _bound(theta: np.ndarray, frequencies: np.ndarray, delta: np.ndarray, position_error: np.ndarray, u_a: float,
           u_o: float) -> np.ndarray:
    return (delta[None, :] + u_a) * np.abs(theta) + position_error * frequencies[None, :] + 4 * u_a + u_o


def cache_tolerance(positions, convention: MropeConvention, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE,
                    position_error=None) -> np.ndarray:
    """``t`` for each token and slot, ``(L, P)``, plus the float64 oracle's own. ``position_error``:
    M2 per axis (None: exact positions)."""
    theta = oracle.angles(positions, convention)
    f = oracle.frequencies(convention)
    slot_axes = convention.slot_axes()
    e_p = np.zeros(len(convention.axes)) if position_error is None else np.asarray(position_error, dtype=np.float64)
    e_p = e_p[slot_axes][None, :]
    u64 = unit_roundoff(FLOAT64)
    target = _bound(theta, f, frequency_error(convention, angle_dtype), e_p, unit_roundoff(angle_dtype),
                    unit_roundoff(out_dtype))
    own = _bound(theta, f, np.full(f.shape, u64), np.zeros_like(e_p), u64, u64)
    return target + own


def norm_tolerance(cache_bound: np.ndarray, out_dtype) -> np.ndarray:
    """The bound on ``cos**2 + sin**2 - 1`` of a slot whose cos and sin are each within ``cache_bound``."""
    return 2 * cache_bound + 3 * unit_roundoff(out_dtype)


def apply_tolerance(x, positions, convention: MropeConvention, x_dtype, out_dtype, cache_bound=None,
                    table_layout=None) -> np.ndarray:
    """``t_apply`` for each element of ``x`` rotated (``(..., L, D)``, the exact inputs), plus the
    float64 oracle's own; ``cache_bound`` the ``(L, P)`` bound of the cos and sin used (None: the
    bound of a cache computed in float32 and stored in x's dtype). ``table_layout``: cos and sin
    laid out otherwise than the pairing (:func:`.oracle.apply_with_table`), so that each element
    takes the bound of the table column it reads; None: as the pairing."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    u_x, u_o, u64 = unit_roundoff(x_dtype), unit_roundoff(out_dtype), unit_roundoff(FLOAT64)
    t = cache_tolerance(positions, convention, x_dtype) if cache_bound is None else cache_bound
    own = cache_tolerance(positions, convention, FLOAT64, FLOAT64)
    table = convention if table_layout is None else dataclasses.replace(convention, layout=table_layout)
    t, own = oracle.expand(np.broadcast_to(t, own.shape), table), oracle.expand(own, table)
    a, b = convention.columns()
    bound = (u_o + u64) * x
    pair = x[..., a] + x[..., b]
    for side in (a, b):
        bound[..., side] = pair * (t[:, side] + (2 * u_x + u_o) * (1 + t[:, side])) \
            + pair * (own[:, side] + 3 * u64 * (1 + own[:, side]))
    return bound
