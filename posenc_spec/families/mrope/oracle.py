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

import dataclasses
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


def apply_with_table(x, positions, convention: MropeConvention, table_layout: str) -> np.ndarray:
    """``x`` (``(..., L, R)``) as an apply pairing its features as ``convention.layout`` computes it
    from cos and sin laid out as ``table_layout`` (each feature reads its own column of the
    table): :func:`apply` when the layouts agree; when they differ no rotation at all (a
    pair's two features turn by different angles), what rotate-half computes from interleaved
    cos and sin, or the converse."""
    x = np.asarray(x, dtype=np.float64)
    cos, sin = compact(positions, convention)
    table = dataclasses.replace(convention, layout=table_layout)
    cos, sin = expand(cos, table), expand(sin, table)
    a, b = convention.columns()
    out = x.copy()
    out[..., a] = x[..., a] * cos[:, a] - x[..., b] * sin[:, a]
    out[..., b] = x[..., b] * cos[:, b] + x[..., a] * sin[:, b]
    return out


def compact_of(cos_full: np.ndarray, sin_full: np.ndarray, convention: MropeConvention):
    """The ``(L, P)`` cos and sin a ``(L, R)`` pair of arrays holds at each slot's first feature,
    and at its second (``((cos_a, sin_a), (cos_b, sin_b))``): both must be the slot's."""
    a, b = convention.columns()
    return (cos_full[:, a], sin_full[:, a]), (cos_full[:, b], sin_full[:, b])


# -- the position ids of a text and vision sequence (the mrope-positions API) --------------------

TEXT, IMAGE, VIDEO = 0, 1, 2


def groups(token_types) -> list[tuple[int, int, int]]:
    """``(type, start, end)`` of each run of one token type."""
    types = np.asarray(token_types, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(types)) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [types.size]])
    return [(int(types[start]), int(start), int(end)) for start, end in zip(starts, ends, strict=True)
            if end > start]


# Where the text after a vision run starts, from the run's start, its merged grid, its largest
# position and the merge size: the reference's rule, and the slips the hints try (:mod:`.slips`).
ADVANCES = {
    "after-largest": lambda start, t, h, w, top, merge: top + 1,
    "spatial-extent": lambda start, t, h, w, top, merge: start + max(h, w),
    "unmerged-extent": lambda start, t, h, w, top, merge: start + merge * max(h, w),
    "at-largest": lambda start, t, h, w, top, merge: top,
    "skip-one": lambda start, t, h, w, top, merge: top + 2,
}


def sequence_positions(token_types, grids, spatial_merge_size: int = 2, temporal_interval: float = 1.0,
                       advance: str = "after-largest", truncated_step: bool = False) -> np.ndarray:
    """The ``(3, L)`` int64 position ids (t, h, w) of a sequence, as Qwen2-VL's reference lays them
    (see :mod:`.conventions`): text tokens count on from the position after everything before
    them; the ``k``-th vision run is ``grids[k]`` ``(t, h, w)`` patches merged ``m x m``, its
    tokens at ``start + (floor(i_t s), i_h, i_w)`` (``s`` the temporal interval of a video, 1
    for an image); the text after it starts at the largest of those positions plus 1.
    ``advance`` (:data:`ADVANCES`) and ``truncated_step`` (``s`` truncated to an integer first)
    give the slips the hints name."""
    position, made, vision = 0, [], iter(np.asarray(grids, dtype=np.int64).reshape(-1, 3))
    for kind, start, end in groups(token_types):
        if kind == TEXT:
            made.append(np.broadcast_to(position + np.arange(end - start), (3, end - start)))
            position += end - start
            continue
        t, h, w = (int(value) for value in next(vision))
        h, w = h // spatial_merge_size, w // spatial_merge_size
        if t * h * w != end - start:
            raise ValueError(f"a vision run of {end - start} tokens where its grid makes {t} x {h} x {w}")
        step = (float(int(temporal_interval)) if truncated_step else temporal_interval) if kind == VIDEO else 1.0
        mesh = np.meshgrid(np.floor(np.arange(t) * step).astype(np.int64), np.arange(h), np.arange(w), indexing="ij")
        block = position + np.stack([axis.reshape(-1) for axis in mesh])
        made.append(block)
        position = int(ADVANCES[advance](position, t, h, w, int(block.max()), spatial_merge_size))
    return np.concatenate(made, axis=1).astype(np.int64) if made else np.zeros((3, 0), dtype=np.int64)
