"""The properties a 2-D sinusoidal table must have, each a function returning a :class:`CheckResult`.

Every check takes the table as the target returned it (in the declared output layout,
leading axes of size 1 allowed) and an :class:`Expectation2d`: the exact grid and each
element's bound ``t`` (:mod:`.tolerance`), computed once per size. A derived quantity's
bound follows from ``t`` by the first-order rule written beside its check.

- ``shape``: the declared layout's shape for the grid;
- ``finite``, ``formula``: every element within its own bound of the exact value;
- ``extra-tokens``: the declared extra rows are zero;
- ``separable``: each half depends on one coordinate only (a transposed or scrambled token
  order breaks this on non-square grids);
- ``axis-order``: each half is constant along the axis it does not encode (a swapped axis
  fails it on any grid with both sides longer than 1);
- ``axis-member``: each half, read along its own axis, is the declared 1-D member of the
  sinusoidal family at that axis's transformed positions;
- ``positions``: the angle of pair 0 (``omega_0 = 1`` in every member), read from its sine
  and cosine, is the position ``p(i)`` of the declared transform: run at several grid sizes
  it tells a position normalised by the wrong length, offset or scaled twice, whatever the
  frequencies;
- ``pair-norm``: ``sin^2 + cos^2 = 1`` for every pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.results import CheckResult, Worst, check_finite, comparison_worst, skipped
from posenc_spec.results import deviation_result as _judged  # one rule for derived quantities, shared with 1-D
from posenc_spec.tolerance import compare, dtype_name, ratios

from . import oracle
from .conventions import AXES, MAX_EXTRA_TOKENS, Columns2d, Sincos2d
from .tolerance import DEFAULT_ANGLE_DTYPE, grid_tolerance

__all__ = ["Expectation2d", "check_axis_member", "check_axis_order", "check_extra_tokens", "check_finite",
           "check_formula", "check_pair_norm", "check_positions", "check_separable", "check_shape", "expectation",
           "run_all"]


@dataclass(frozen=True, eq=False)
class Expectation2d:
    """What a table of one size must hold: the float64 ``(H, W, D)`` grid, each element's bound,
    the columns' layout and each axis's positions."""

    height: int
    width: int
    dim: int
    convention: Sincos2d
    out_dtype: str
    grid: np.ndarray
    tolerance: np.ndarray
    columns: Columns2d
    positions: tuple[np.ndarray, np.ndarray]

    @property
    def size(self) -> str:
        return f"{self.height}x{self.width}:d={self.dim}"

    def lengths(self) -> tuple[int, int]:
        return (self.height, self.width)


def expectation(height: int, width: int, dim: int, conv: Sincos2d, out_dtype,
                angle_dtype=DEFAULT_ANGLE_DTYPE) -> Expectation2d:
    """The expectation for one grid and width, judged in ``out_dtype``."""
    height, width = conv.check_grid(height, width)
    dim = conv.check_width(dim)
    return Expectation2d(height, width, dim, conv, dtype_name(out_dtype), oracle.grid(height, width, dim, conv),
                         grid_tolerance(height, width, dim, conv, out_dtype, angle_dtype), conv.columns(dim),
                         (conv.positions(height), conv.positions(width)))


def _result(name, passed, message, worst: Worst | None = None) -> CheckResult:
    return CheckResult(name, "passed" if passed else "failed", message, worst)


def _grid(table, exp: Expectation2d) -> tuple[np.ndarray, np.ndarray]:
    """The table's ``(H, W, D)`` grid and extra rows as float64 (ValueError on a wrong shape)."""
    grid, extra = exp.convention.ungrid(table, exp.height, exp.width)
    return np.asarray(grid, dtype=np.float64), np.asarray(extra, dtype=np.float64)


def layout_keys(shape, height: int, width: int, dim: int) -> dict | None:
    """The ``output_layout`` (and ``extra_tokens``) ``shape`` is for the grid, leading axes of
    size 1 dropped (None: no layout's)."""
    shape, layouts = tuple(shape), ((height, width, dim), (dim, height, width))
    while len(shape) > 2 and shape[0] == 1 and shape not in layouts:
        shape = shape[1:]
    if shape == layouts[0]:
        return {"output_layout": "grid"}
    if shape == layouts[1]:
        return {"output_layout": "channels-first"}
    if len(shape) == 2 and shape[1] == dim and 0 <= shape[0] - height * width <= MAX_EXTRA_TOKENS:
        return {"output_layout": "tokens", "extra_tokens": shape[0] - height * width}
    return None


def layout_of(shape, height: int, width: int, dim: int) -> str | None:
    """Which layout ``shape`` is for the grid, in the keys' words (None: none of them)."""
    found = layout_keys(shape, height, width, dim)
    if found is None:
        return "tokens transposed (D, N)" if tuple(shape)[-2:] == (dim, height * width) else None
    words = {"grid": "output_layout grid (H, W, D)", "channels-first": "output_layout channels-first (D, H, W)",
             "tokens": f"output_layout tokens with extra_tokens {found.get('extra_tokens')}"}
    return words[found["output_layout"]]


def check_shape(table, exp: Expectation2d, name="shape") -> CheckResult:
    """The declared layout's shape (leading axes of size 1 allowed); a failure says which
    layout the shape is, where it is one."""
    try:
        _grid(table, exp)
    except ValueError as error:
        found = layout_of(np.shape(table), exp.height, exp.width, exp.dim)
        return _result(name, False, str(error) + (f": it is {found}" if found else ""))
    return _result(name, True, f"{exp.convention.output_layout} {exp.convention.shape(exp.height, exp.width, exp.dim)}")


def check_formula(table, exp: Expectation2d, name="formula") -> CheckResult:
    """Every element within its own bound of the exact value, in the declared layout."""
    conv = exp.convention
    expected, bound = conv.arrange(exp.grid), conv.arrange(exp.tolerance)
    actual = np.asarray(table)
    while actual.ndim > expected.ndim and actual.shape[0] == 1:
        actual = actual[0]
    if actual.shape != expected.shape:
        return _result(name, False, f"shape {np.shape(table)} where {expected.shape} was declared")
    result = compare(actual, expected, bound)
    message = (f"{exp.size} under {conv.name()}, {exp.out_dtype}: "
               + (f"max error/tolerance {result.max_ratio:.3g}" if result.ok else result.describe()))
    return _result(name, result.ok, message, comparison_worst(result))


def check_extra_tokens(table, exp: Expectation2d, name="extra-tokens") -> CheckResult:
    """The declared extra rows (a class token's place) hold zeros: any other value is an error
    against a bound of 0."""
    if exp.convention.extra_tokens == 0:
        return skipped(name, "no extra tokens declared")
    _, extra = _grid(table, exp)
    return _judged(name, extra, 0.0, 0.0, f"the {exp.convention.extra_tokens} extra row(s) against zeros")


def _deviation(values, bound, axis: int):
    """``|v - v at index 0 along axis|`` and its bound ``t + t at index 0``."""
    first = [slice(None)] * 3
    first[axis] = slice(0, 1)
    return np.abs(values - values[tuple(first)]), bound + bound[tuple(first)]


def _along_ratio(values, bound, axis: int) -> float:
    """The largest deviation/bound ratio along ``axis`` (NaN counts as infinite)."""
    deviation, limit = _deviation(values, bound, axis)
    return float(np.max(ratios(deviation, limit))) if deviation.size else 0.0


def check_separable(table, exp: Expectation2d, name="separable") -> CheckResult:
    """Each half is constant along rows or along columns (whichever): a function of one
    coordinate. Two elements each within ``t`` of one exact value differ by at most the sum
    of their bounds."""
    if 1 in exp.lengths():
        return skipped(name, f"a {exp.height}x{exp.width} grid: every half is a function of one coordinate")
    grid, _ = _grid(table, exp)
    worst = []
    for axis in (0, 1):
        columns = exp.columns.of_axis(axis)
        values, bound = grid[:, :, columns], exp.tolerance[:, :, columns]
        ratio = min(_along_ratio(values, bound, 0), _along_ratio(values, bound, 1))
        worst.append((ratio, axis))
    ratio, axis = max(worst)
    half = "first" if axis == exp.convention.first else "second"
    if ratio <= 1:
        return _result(name, True, f"each half depends on one coordinate (ratio {ratio:.3g})")
    message = (f"the {half} half depends on rows and columns both: constant along neither "
               f"(min ratio {ratio:.3g}); the token order or the flatten is not the declared "
               f"{exp.convention.token_order}")
    return _result(name, ratio <= 1, message)


def check_axis_order(table, exp: Expectation2d, name="axis-order") -> CheckResult:
    """The half declared for rows is constant along each row (across columns), the half for
    columns constant along each column; bound as for :func:`check_separable`."""
    grid, _ = _grid(table, exp)
    results = []
    for axis in (0, 1):
        other = 1 - axis
        if exp.lengths()[other] == 1:
            continue
        columns = exp.columns.of_axis(axis)
        values, bound = grid[:, :, columns], exp.tolerance[:, :, columns]
        deviation, limit = _deviation(values, bound, other)
        results.append((axis, deviation, limit, _along_ratio(values, bound, axis)))
    if not results:
        return skipped(name, "a 1x1 grid has no axis to tell")
    compared = [(axis, compare(deviation, np.broadcast_to(0.0, deviation.shape), limit), own)
                for axis, deviation, limit, own in results]
    axis, result, own = ([item for item in compared if item[1].max_ratio > 1] or compared)[0]
    half = "first" if axis == exp.convention.first else "second"
    declared = AXES[axis]
    if result.ok:
        return _result(name, True, f"each half constant along the other axis (max ratio {result.max_ratio:.3g})",
                       comparison_worst(result))
    swapped = " and constant along its own: the axes are swapped" if own <= 1 else ""
    return _result(name, False, f"the {half} half, declared {declared}, varies along the "
                                f"{'columns' if axis == 0 else 'rows'}{swapped} ({result.describe()})",
                   comparison_worst(result))


def _half_line(array: np.ndarray, exp: Expectation2d, axis: int) -> np.ndarray:
    """The half of ``axis`` read along that axis at index 0 of the other: ``(L, D/2)`` in 1-D order."""
    line = array[:, 0, :] if axis == 0 else array[0, :, :]
    return line[:, exp.columns.of_axis(axis)]


def check_axis_member(table, exp: Expectation2d, name="axis-member") -> CheckResult:
    """Each half, read along its own axis, is the declared 1-D sinusoidal table (pairing,
    frequencies, base) at that axis's positions, element by element within bound."""
    grid, _ = _grid(table, exp)
    results = []
    for axis in (0, 1):
        line = _half_line(grid, exp, axis)
        result = compare(line, _half_line(exp.grid, exp, axis), _half_line(exp.tolerance, exp, axis))
        results.append((result.max_ratio, axis, result))
    ratio, axis, result = max(results, key=lambda item: item[0])
    one_d = exp.convention.axis_convention(axis)
    what = f"the {AXES[axis]} half against the {one_d.layout} 1-D table (base {one_d.base:g})"
    return _result(name, result.ok, f"{what}: " + (f"max ratio {ratio:.3g}" if result.ok else result.describe()),
                   comparison_worst(result))


def _pairs(exp: Expectation2d, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """The 1-D columns (within a half) of each pair's sine and cosine."""
    one_d = exp.convention.axis_convention(axis).columns(exp.dim // 2)
    sin_columns = np.flatnonzero(exp.convention.is_sine(one_d))
    return sin_columns, one_d.partner[sin_columns]


def check_positions(table, exp: Expectation2d, name="positions") -> CheckResult:
    """The angle of pair 0 along each axis, ``arg(cos + i sin)``, is the axis's position
    ``p(i)`` wrapped to (-pi, pi]: ``omega_0 = base ** 0 = 1`` in every member, whatever the
    base or the exponent's denominator, so this reads the position transform alone. A value
    pair off by ``t_s`` and ``t_c`` moves the angle by at most ``2 (t_s + t_c)`` while the
    pair's modulus stays near 1."""
    grid, _ = _grid(table, exp)
    measured, bounds, reading = [], [], []
    for axis in (0, 1):
        sin_columns, cos_columns = _pairs(exp, axis)
        sin_column, cos_column = sin_columns[:1], cos_columns[:1]  # pair 0 (the first sine's)
        line, bound = _half_line(grid, exp, axis), _half_line(exp.tolerance, exp, axis)
        angle = np.angle(line[:, cos_column] + 1j * line[:, sin_column])[:, 0]
        measured.append(np.angle(np.exp(1j * (angle - exp.positions[axis]))))
        bounds.append(2 * (bound[:, sin_column] + bound[:, cos_column])[:, 0])
        reading.append((angle[:3], np.angle(np.exp(1j * exp.positions[axis][:3]))))
    result = _judged(name, np.concatenate(measured), 0.0, np.concatenate(bounds), "pair 0's angles against p(i)")
    if result.passed or result.status == "skipped":
        return result
    axis = 0 if np.max(np.abs(measured[0]) / bounds[0]) >= np.max(np.abs(measured[1]) / bounds[1]) else 1
    read, declared = reading[axis]
    return CheckResult(name, "failed", f"{result.message}; the {AXES[axis]} positions read from pair 0 begin "
                                       f"{np.round(read, 4).tolist()}, the declared {exp.convention.position} "
                                       f"transform gives {np.round(declared, 4).tolist()} (mod 2 pi)", result.worst)


def check_pair_norm(table, exp: Expectation2d, name="pair-norm") -> CheckResult:
    """``sin^2 + cos^2 = 1`` for every pair of both halves; with errors e1, e2 the deviation is
    at most ``2(|e1| + |e2|) + e1^2 + e2^2``."""
    grid, _ = _grid(table, exp)
    measured, bounds = [], []
    for axis in (0, 1):
        columns = exp.columns.of_axis(axis)
        sin_columns, cos_columns = _pairs(exp, axis)
        values, bound = grid[:, :, columns], exp.tolerance[:, :, columns]
        t1, t2 = bound[:, :, sin_columns], bound[:, :, cos_columns]
        measured.append((values[:, :, sin_columns] ** 2 + values[:, :, cos_columns] ** 2).ravel())
        bounds.append((2 * (t1 + t2) + t1**2 + t2**2).ravel())
    return _judged(name, np.concatenate(measured), 1.0, np.concatenate(bounds), "|sin^2 + cos^2 - 1| over every pair")


CHECKS = (("finite", check_finite), ("shape", check_shape), ("formula", check_formula),
          ("extra-tokens", check_extra_tokens), ("separable", check_separable), ("axis-order", check_axis_order),
          ("axis-member", check_axis_member), ("positions", check_positions), ("pair-norm", check_pair_norm))


def run_all(table, exp: Expectation2d) -> dict[str, CheckResult]:
    """Every check of :data:`CHECKS` on one table; after a failed ``shape`` the others that read
    the grid are skipped (there is no grid to read)."""
    results = {"finite": check_finite(table), "shape": check_shape(table, exp)}
    for check_name, check in CHECKS[2:]:
        if not results["shape"].passed:
            results[check_name] = skipped(check_name, "the table does not have the declared shape")
        else:
            results[check_name] = check(table, exp)
    return results


def shows_its_angles(expected: Expectation2d) -> bool:
    """Whether a table whose every angle is 0 (each sine 0, each cosine 1) falls outside the
    bounds of ``expected``: where it does not, positions or frequencies so large (or so small)
    that float32 cannot resolve the angles let any table pass the formula check."""
    zero_angles = np.broadcast_to(np.where(expected.columns.is_sin, 0.0, 1.0), expected.grid.shape)
    return not compare(zero_angles, expected.grid, expected.tolerance).ok
