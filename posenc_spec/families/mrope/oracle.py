"""The expected multi-axis rotary values: each slot's frequency exact (mpmath), the rest in float64.

Slot ``j`` of a token with positions ``p`` (one per axis) turns by ``theta_j = p[axis_j] f_j``
(:mod:`.conventions`). The frequencies are evaluated at 40 significant digits and rounded once
to float64; the angle, cos and sin are float64, off the exact values by the float64 terms of
:mod:`.tolerance` (the product and the cos/sin: ``(u |theta| + 4 u)``, ``u = 2**-53``), which every
bound adds.

Pairing is :mod:`posenc_spec.families.rope.oracle`'s rotation: ``x'_a = x_a cos - x_b sin``,
``x'_b = x_b cos + x_a sin`` at the slot's two features (:meth:`~.conventions.MropeConvention.columns`).
"""

from __future__ import annotations

from functools import cache

import mpmath
import numpy as np

from .conventions import MropeConvention

EXACT_DIGITS = 40


@cache
def frequencies(convention: MropeConvention) -> np.ndarray:
    """Each slot's ``f_j = theta_j ** (-e_j)``, exact to float64, ``(P,)``."""
    with mpmath.workdps(EXACT_DIGITS):
        exponents = convention.slot_exponents()
        return np.array([float(mpmath.power(mpmath.mpf(theta), -mpmath.mpf(float(e))))
                         for theta, e in zip(convention.slot_theta(), exponents, strict=True)])


def check_positions(positions, convention: MropeConvention) -> np.ndarray:
    """``positions`` as float64 ``(len(axes), L)``, each finite."""
    p = np.asarray(positions, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != len(convention.axes):
        raise ValueError(f"positions must be ({len(convention.axes)}, L), one row per axis; got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError("positions must be finite")
    return p


def angles(positions, convention: MropeConvention) -> np.ndarray:
    """``theta`` of every token and slot, ``(L, P)``."""
    p = check_positions(positions, convention)
    return p[convention.slot_axes()].T * frequencies(convention)[None, :]


def compact(positions, convention: MropeConvention) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of every token and slot, ``(L, P)`` each."""
    theta = angles(positions, convention)
    return np.cos(theta), np.sin(theta)


def expand(values: np.ndarray, convention: MropeConvention) -> np.ndarray:
    """A compact ``(L, P)`` array at its slots' two features, ``(L, R)``."""
    a, b = convention.columns()
    full = np.empty((values.shape[0], convention.rotary_dim), dtype=values.dtype)
    full[:, a], full[:, b] = values, values
    return full


def cache(positions, convention: MropeConvention) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin as real code returns them, ``(L, R)`` each, in the declared layout."""
    cos, sin = compact(positions, convention)
    return expand(cos, convention), expand(sin, convention)


def apply(x, positions, convention: MropeConvention) -> np.ndarray:
    """``x`` (``(..., L, R)``) rotated slot by slot at ``positions``, float64."""
    x = np.asarray(x, dtype=np.float64)
    cos, sin = compact(positions, convention)
    a, b = convention.columns()
    out = x.copy()
    out[..., a] = x[..., a] * cos - x[..., b] * sin
    out[..., b] = x[..., b] * cos + x[..., a] * sin
    return out


def compact_of(cos_full: np.ndarray, sin_full: np.ndarray, convention: MropeConvention):
    """The ``(L, P)`` cos and sin a ``(L, R)`` pair of arrays holds at each slot's first feature,
    and at its second (``((cos_a, sin_a), (cos_b, sin_b))``): both must be the slot's."""
    a, b = convention.columns()
    return (cos_full[:, a], sin_full[:, a]), (cos_full[:, b], sin_full[:, b])
