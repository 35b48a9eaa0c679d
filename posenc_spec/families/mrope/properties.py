"""The checks of one multi-axis rotary cache, each a :class:`~posenc_spec.results.CheckResult`.

A cache is read as cos and sin ``(L, R)`` in the declared layout (or ``(L, P)`` for a complex
one) with the float64 positions ``(len(axes), L)`` it stands for:

- ``formula``: every value within its bound (:mod:`.tolerance`) of the exact one;
- ``norm``: each slot's ``cos**2 + sin**2`` is 1 (a scale, or cos and sin of two angles);
- ``identity``: a token at the origin of every axis has cos 1 and sin 0 (no rotation);
- ``relative`` (two calls, one axis shifted by ``S``): the slots of the shifted axis turn by
  ``S f_j`` and no other slot moves, so ``q . k`` depends on each axis's difference alone and
  the axes are separable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.results import CheckResult, Worst
from posenc_spec.tolerance import compare, unit_roundoff

from . import oracle
from .conventions import MropeConvention
from .tolerance import cache_tolerance, norm_tolerance


@dataclass(frozen=True)
class Cache:
    """What a call returned, read: ``cos`` and ``sin`` ``(L, W)`` with ``W = R`` (real, in the
    declared layout) or ``P`` (``complex``: slot order); ``dtype`` the stored dtype."""

    cos: np.ndarray
    sin: np.ndarray
    dtype: str
    complex: bool = False

    def compact(self, convention: MropeConvention):
        """``(cos, sin)`` at each slot's first feature ``(L, P)`` (the complex values as they are)."""
        if self.complex:
            return self.cos, self.sin
        a, _ = convention.columns()
        return self.cos[:, a], self.sin[:, a]


def _token(positions: np.ndarray, convention: MropeConvention, token: int) -> str:
    return ", ".join(f"{axis}={positions[k, token]:g}" for k, axis in enumerate(convention.axes))


def _feature(convention: MropeConvention, column: int, complex_form: bool) -> str:
    if complex_form:
        slot = column
    else:
        a, b = convention.columns()
        slot = int(np.flatnonzero((a == column) | (b == column))[0])
    axis = convention.axes[convention.slot_axes()[slot]]
    return f"{'slot' if complex_form else f'feature {column}, slot'} {slot} (axis {axis})"


def _expected(cache: Cache, positions, convention: MropeConvention, position_error=None):
    cos, sin = oracle.compact(positions, convention)
    bound = cache_tolerance(positions, convention, cache.dtype, position_error=position_error)
    if cache.complex:
        return cos, sin, bound
    return oracle.expand(cos, convention), oracle.expand(sin, convention), oracle.expand(bound, convention)


def check_formula(cache: Cache, positions, convention: MropeConvention, name="formula",
                  position_error=None) -> CheckResult:
    """Every cos and sin within its bound of the exact value."""
    exp_cos, exp_sin, bound = _expected(cache, positions, convention, position_error)
    worst_name, worst = None, None
    for part, values, expected in (("cos", cache.cos, exp_cos), ("sin", cache.sin, exp_sin)):
        result = compare(values, expected, bound)
        if worst is None or result.max_ratio > worst.max_ratio:
            worst_name, worst = part, result
    where = worst.worst_index
    said = (f"{worst_name} at token {where[0]} ({_token(np.asarray(positions), convention, where[0])}), "
            f"{_feature(convention, where[1], cache.complex)}: {worst.worst_actual:.9g} where "
            f"{worst.worst_expected:.9g} belongs (bound {worst.worst_tolerance:.3g})")
    record = Worst(where, worst.shape, worst.worst_actual, worst.worst_expected, worst.worst_error,
                   worst.worst_tolerance)
    if worst.max_ratio <= 1:
        return CheckResult(name, "passed", f"{cache.cos.size * 2} values within their bounds; closest {said}",
                           record)
    return CheckResult(name, "failed", f"{worst.num_failing} of {cache.cos.size} {worst_name} values off; worst "
                                       f"{said}", record)


def check_finite(cache: Cache, name="finite") -> CheckResult:
    bad = ~(np.isfinite(cache.cos) & np.isfinite(cache.sin))
    if bad.any():
        token, column = (int(i) for i in np.argwhere(bad)[0])
        return CheckResult(name, "failed", f"{int(bad.sum())} NaN or Inf values, first at token {token}, "
                                           f"column {column}")
    return CheckResult(name, "passed", f"all {2 * cache.cos.size} values finite")


def check_norm(cache: Cache, positions, convention: MropeConvention, name="norm", position_error=None) -> CheckResult:
    """``cos**2 + sin**2 = 1`` per slot, within twice the slot's bound."""
    cos, sin = cache.compact(convention)
    bound = norm_tolerance(cache_tolerance(positions, convention, cache.dtype, position_error=position_error),
                           cache.dtype)
    result = compare(cos**2 + sin**2, np.ones_like(cos), bound)
    token, slot = result.worst_index
    said = (f"token {token} ({_token(np.asarray(positions), convention, token)}), slot {slot}: "
            f"cos**2 + sin**2 = {result.worst_actual:.9g}")
    if result.ok:
        return CheckResult(name, "passed", f"every slot of {cos.shape[0]} tokens of length 1; furthest {said}")
    return CheckResult(name, "failed", f"{result.num_failing} slots not of length 1 (a scale, or cos and sin of two "
                                       f"angles); worst {said}")


def check_identity(cache: Cache, positions, convention: MropeConvention, name="identity") -> CheckResult:
    """A token at the origin of every axis: cos 1 and sin 0 at every slot (within ``u_o``)."""
    p = np.asarray(positions)
    origin = np.flatnonzero((p == 0).all(axis=0))
    if origin.size == 0:
        return CheckResult(name, "skipped", "no token at the origin of every axis in this call")
    cos, sin = cache.compact(convention)
    bound = cache_tolerance(p[:, origin], convention, cache.dtype)
    off = np.maximum(np.abs(cos[origin] - 1), np.abs(sin[origin])) > bound
    if off.any():
        row, slot = (int(i) for i in np.argwhere(off)[0])
        return CheckResult(name, "failed", f"token {int(origin[row])} at the origin: slot {slot} (axis "
                                           f"{convention.axes[convention.slot_axes()[slot]]}) has cos "
                                           f"{cos[origin[row], slot]:.9g}, sin {sin[origin[row], slot]:.9g} where 1 "
                                           f"and 0 belong")
    return CheckResult(name, "passed", "cos 1 and sin 0 at every slot of the token at the origin")


def check_relative(first: Cache, second: Cache, positions, shifted, axis: int, convention: MropeConvention,
                   name: str) -> CheckResult:
    """The call at ``shifted`` (``positions`` with axis ``axis`` moved by one ``S``) is the first
    call's slots of that axis turned by ``S f_j``, every other slot unchanged."""
    p, q = np.asarray(positions, dtype=np.float64), np.asarray(shifted, dtype=np.float64)
    shift = float(q[axis, 0] - p[axis, 0])
    cos, sin = first.compact(convention)
    cos2, sin2 = second.compact(convention)
    if cos.shape != cos2.shape:
        return CheckResult(name, "failed", f"the shifted call returned {cos2.shape[0]} tokens, the first "
                                           f"{cos.shape[0]}")
    turn = shift * oracle.frequencies(convention) * (convention.slot_axes() == axis)
    want_cos = cos * np.cos(turn) - sin * np.sin(turn)
    want_sin = sin * np.cos(turn) + cos * np.sin(turn)
    bound = (cache_tolerance(p, convention, first.dtype) + cache_tolerance(q, convention, second.dtype)) * 2
    result = max((compare(cos2, want_cos, bound), compare(sin2, want_sin, bound)), key=lambda found: found.max_ratio)
    token, slot = result.worst_index
    moved = convention.axes[convention.slot_axes()[slot]]
    what = f"axis {convention.axes[axis]} moved by {shift:g}"
    if result.ok:
        return CheckResult(name, "passed", f"{what}: its slots turned by S f_j, the others unchanged, at every "
                                           f"token")
    kind = "turned by another angle" if moved == convention.axes[axis] else "moved although its axis did not"
    return CheckResult(name, "failed", f"{what}: slot {slot} (axis {moved}) {kind} at token {token}: "
                                       f"{result.worst_actual:.9g} where {result.worst_expected:.9g} belongs "
                                       f"(bound {result.worst_tolerance:.3g})")


# -- a rotated x (the mrope-apply API) ------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """A call's rotated ``x`` and what it is judged against: ``got`` and ``x`` ``(heads, L, D)``
    float64, ``positions`` ``(len(axes), L)``, ``bound`` per element (:func:`.tolerance.apply_tolerance`)."""

    got: np.ndarray
    x: np.ndarray
    positions: np.ndarray
    bound: np.ndarray
    dtype: str


def _element(applied: Applied, convention: MropeConvention, index) -> str:
    head, token, feature = index
    rotated = feature < convention.rotary_dim
    slot = (f", {_feature(convention, feature, False)}" if rotated else ", a feature beyond the rotated ones")
    return f"head {head}, token {token} ({_token(applied.positions, convention, token)}){slot}"


def check_apply_formula(applied: Applied, convention: MropeConvention, name="formula") -> CheckResult:
    """Every element of the rotated x within its bound of the exact rotation."""
    expected = oracle.apply(applied.x, applied.positions, convention)
    result = compare(applied.got, expected, applied.bound)
    said = (f"{_element(applied, convention, result.worst_index)}: {result.worst_actual:.9g} where "
            f"{result.worst_expected:.9g} belongs (bound {result.worst_tolerance:.3g})")
    record = Worst(result.worst_index, result.shape, result.worst_actual, result.worst_expected,
                   result.worst_error, result.worst_tolerance)
    if result.ok:
        return CheckResult(name, "passed", f"{applied.got.size} values within their bounds; closest {said}", record)
    return CheckResult(name, "failed", f"{result.num_failing} of {applied.got.size} values off; worst {said}", record)


def check_apply_norm(applied: Applied, convention: MropeConvention, name="norm") -> CheckResult:
    """Each rotated pair keeps its length: ``|x'_a|^2 + |x'_b|^2 = |x_a|^2 + |x_b|^2``."""
    a, b = convention.columns()
    got = applied.got[..., a] ** 2 + applied.got[..., b] ** 2
    want = applied.x[..., a] ** 2 + applied.x[..., b] ** 2
    scale = np.abs(applied.x[..., a]) + np.abs(applied.x[..., b])
    bound = 2 * scale * np.maximum(applied.bound[..., a], applied.bound[..., b]) + 3 * unit_roundoff(applied.dtype) \
        * want + np.maximum(applied.bound[..., a], applied.bound[..., b]) ** 2 * 2
    result = compare(got, want, bound)
    head, token, slot = result.worst_index
    said = f"head {head}, token {token}, slot {slot}: {result.worst_actual:.9g} where {result.worst_expected:.9g}"
    if result.ok:
        return CheckResult(name, "passed", f"every rotated pair keeps its length; furthest {said}")
    return CheckResult(name, "failed", f"{result.num_failing} rotated pairs change length (a scale, or cos and sin of "
                                       f"two angles); worst {said}")


def check_apply_identity(applied: Applied, convention: MropeConvention, name="identity") -> CheckResult:
    """Tokens at the origin of every axis come back as they went in (within their bounds)."""
    origin = np.flatnonzero((applied.positions == 0).all(axis=0))
    if origin.size == 0:
        return CheckResult(name, "skipped", "no token at the origin of every axis in this call")
    result = compare(applied.got[:, origin], applied.x[:, origin], applied.bound[:, origin])
    if result.ok:
        return CheckResult(name, "passed", f"the {origin.size} token(s) at the origin unchanged")
    head, row, feature = result.worst_index
    return CheckResult(name, "failed", f"token {int(origin[row])} at the origin, head {head}, feature {feature}: "
                                       f"{result.worst_actual:.9g} where x's {result.worst_expected:.9g} belongs")


def check_apply_passthrough(applied: Applied, convention: MropeConvention, name="passthrough") -> CheckResult:
    """The features beyond the rotated ``R`` come back unchanged (within the store's rounding)."""
    rest = slice(convention.rotary_dim, None)
    if applied.x.shape[-1] == convention.rotary_dim:
        return CheckResult(name, "skipped", "every feature is rotated")
    result = compare(applied.got[..., rest], applied.x[..., rest], applied.bound[..., rest])
    if result.ok:
        return CheckResult(name, "passed", f"the {applied.x.shape[-1] - convention.rotary_dim} features beyond the "
                                           f"rotated {convention.rotary_dim} unchanged")
    head, token, feature = result.worst_index
    return CheckResult(name, "failed", f"head {head}, token {token}, feature {convention.rotary_dim + feature} "
                                       f"(not rotated): {result.worst_actual:.9g} where {result.worst_expected:.9g}")
