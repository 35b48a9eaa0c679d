"""The properties a sinusoidal table must have, as functions returning a :class:`CheckResult`.

One module holds the whole catalogue (a dozen checks of a few lines each, sharing one
:class:`Expectation`), so that a reader sees every property side by side.

The test suite asserts them on the reference implementations and the gate runs them on
someone else's; neither restates a property. Each check takes the table under test and an
:class:`Expectation` (the exact table and the per-element bound ``t`` of
:mod:`posenc_spec.tolerance`, computed once per size); ``t`` propagates to each derived
quantity by the first-order rule written beside the check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from posenc_spec.caching import BoundedCache
from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import Columns, Convention, get_convention
from posenc_spec.families.sinusoidal.tolerance import angle_term, tolerance_from_term
from posenc_spec.results import (
    CheckResult,
    Worst,
    comparison_worst,
    deviation_result,
    deviation_result_blocks,
    real,
    result,
    skipped,
)
from posenc_spec.tolerance import compare, dtype_name


@dataclass(frozen=True, eq=False)
class Expectation:
    """What a table of one size must hold: the float64 oracle and each element's bound."""

    positions: np.ndarray
    width: int
    convention: Convention
    out_dtype: str
    table: np.ndarray
    tolerance: np.ndarray
    columns: Columns
    degenerate_limit: bool = False

    @property
    def size(self) -> str:
        return f"{self.positions.size}x{self.width}"

    @property
    def paired(self) -> np.ndarray:
        """Columns that have a partner (excludes zero-padded and unpaired ``ceil`` columns)."""
        return np.flatnonzero(self.columns.partner >= 0)

    @property
    def pair_first(self) -> np.ndarray:
        """One column per pair: the one holding ``first``."""
        return np.flatnonzero(self.columns.is_first & (self.columns.partner >= 0))


class _Exact(NamedTuple):
    """What a size and convention hold whatever the output dtype: the rows' positions, the
    float64 table and its columns."""

    positions: np.ndarray
    table: np.ndarray
    columns: Columns


def _exact(positions, width: int, conv: Convention, degenerate_limit: bool) -> _Exact:
    theta, _ = oracle.angles(positions, width, conv, degenerate_limit)
    columns = conv.columns(width)
    return _Exact(conv.positions(positions), oracle.table_from_angles(theta, columns, conv.first), columns)


def _bound(positions, width: int, conv: Convention, degenerate_limit: bool, dtype: str) -> np.ndarray:
    """The bound of every element for one output dtype, from the angles formed again (an
    outer product, cheap beside the sines), written over them: keeping the angles' term beside
    each table instead would double what the table cache holds per size and convention."""
    theta, log_omega = oracle.angles(positions, width, conv, degenerate_limit)
    return tolerance_from_term(angle_term(theta, log_omega, out=theta), dtype, out=theta)


# Each cache holds only its own arrays (the tables; the bounds), so that their sizes are what
# the cache keeps alive: an Expectation is assembled on each call.
CACHE_BYTES = 1 << 30  # room for the whole grid's expected tables (about 10 MiB) of many conventions
_tables = BoundedCache(CACHE_BYTES // 2)
_bounds = BoundedCache(CACHE_BYTES // 2)


def expectation(positions, width: int, convention: str | Convention, out_dtype,
                degenerate_limit: bool = False, cached: bool = True) -> Expectation:
    """The expectation for one size, cached: the exact table once per size and
    convention, its bound once per output dtype. ``cached=False`` for a convention met
    once (a fitted candidate): computed, never stored, so that it evicts nothing."""
    conv = get_convention(convention)
    key = positions if isinstance(positions, (int, np.integer)) else np.asarray(positions, np.float64).tobytes()
    values = key if isinstance(key, (int, np.integer)) else np.frombuffer(key, dtype=np.float64)
    dtype = dtype_name(out_dtype)
    table_conv = conv.for_width(width)
    base = (key, width, table_conv, degenerate_limit)

    def make_exact():
        exact = _exact(values, width, table_conv, degenerate_limit)
        return exact, exact.table.nbytes

    def make_tolerance():
        tolerance = _bound(values, width, table_conv, degenerate_limit, dtype)
        return tolerance, tolerance.nbytes

    exact = _tables.get(base, make_exact) if cached else make_exact()[0]
    tolerance = _bounds.get((*base, dtype), make_tolerance) if cached else make_tolerance()[0]
    return Expectation(exact.positions, width, conv, dtype, exact.table, tolerance, exact.columns, degenerate_limit)


def check_formula(table, exp: Expectation, name="formula") -> CheckResult:
    """Every element within its own bound of the exact value."""
    compared = compare(table, exp.table, exp.tolerance)
    message = (f"{exp.size} under {exp.convention.name()}, {exp.out_dtype}: "
               + (f"max error/tolerance {compared.max_ratio:.3g}" if compared.ok else compared.describe()))
    return result(name, compared.ok, message, comparison_worst(compared))


def check_value_range(table, exp: Expectation, name="range") -> CheckResult:
    """Sines and cosines lie in [-1, 1]: rounding a correct value never leaves it."""
    table = real(table)
    if table.size == 0:
        return skipped(name, f"the {exp.size} table is empty")
    high, low = int(np.argmax(table)), int(np.argmin(table))  # no |table| copy: tables may be large
    flat = high if table.flat[high] >= -table.flat[low] else low
    index = np.unravel_index(flat, table.shape)
    value = float(table[index])
    largest = abs(value)
    worst = Worst(tuple(int(i) for i in index), table.shape, value, float(np.clip(value, -1, 1)),
                  max(largest - 1.0, 0.0), 0.0)
    return result(name, largest <= 1, f"largest |value| {largest:.9g} in the {exp.size} table"
                   + ("" if largest <= 1 else f" at {list(worst.index)}: outside [-1, 1]"), worst)


def check_pair_norms(table, exp: Expectation, name="pair-norm") -> CheckResult:
    """``sin^2 + cos^2 = 1`` for every pair; with errors e1, e2 the deviation is at most
    ``2(|e1| + |e2|) + e1^2 + e2^2``."""
    table = np.asarray(table, dtype=np.float64)
    first = exp.pair_first
    second = exp.columns.partner[first]
    t1, t2 = exp.tolerance[:, first], exp.tolerance[:, second]
    measured = table[:, first] ** 2 + table[:, second] ** 2
    return deviation_result(name, measured, 1.0, 2 * (t1 + t2) + t1**2 + t2**2,
                             f"|sin^2 + cos^2 - 1| over {first.size} pairs")


def check_row_norms(table, exp: Expectation, name="row-norm") -> CheckResult:
    """Each row's squared norm over the paired columns is the number of pairs (``d/2`` for
    even d); the bound is the sum of ``2t + t^2`` over those columns."""
    table = np.asarray(table, dtype=np.float64)
    paired = exp.paired
    tol = exp.tolerance[:, paired]
    measured = np.sum(table[:, paired] ** 2, axis=1)
    return deviation_result(name, measured, paired.size / 2, np.sum(2 * tol + tol**2, axis=1),
                             f"|row norm^2 - {paired.size // 2}|")


def check_first_row(table, exp: Expectation, name="position-zero") -> CheckResult:
    """At position 0 (after the offset) every sine is 0 and every cosine 1."""
    conv = exp.convention
    rows = np.flatnonzero(conv.scale * (exp.positions + conv.offset) == 0)
    if rows.size == 0:
        return skipped(name, "no row stands for position 0")
    row = np.asarray(table, dtype=np.float64)[rows[0]]
    return deviation_result(name, row, exp.table[rows[0]], exp.tolerance[rows[0]],
                             f"row {rows[0]} against sin 0 = 0, cos 0 = 1")


def check_frequencies(table, exp: Expectation, name="frequencies") -> CheckResult:
    """The angle step between two consecutive positions of pair k is ``scale * omega_k``: a
    geometric sequence from ``scale`` down to ``scale * base ** -e_{h-1}``.

    The step is read as ``arg(z1 conj(z0))`` with ``z = cos + i sin``; each ``z`` is off by
    at most ``t_sin + t_cos`` and has modulus near 1, so the step is off by at most twice
    the sum of both rows' bounds. Measured only where the step is below pi.
    """
    conv = exp.convention
    steps = np.flatnonzero(np.diff(exp.positions) == 1)
    if steps.size == 0:
        return skipped(name, "no two rows are one position apart")
    r = steps[0]
    table = np.asarray(table, dtype=np.float64)
    first = exp.pair_first
    second = exp.columns.partner[first]
    sin_col, cos_col = (first, second) if conv.first == "sin" else (second, first)
    z0 = table[r, cos_col] + 1j * table[r, sin_col]
    z1 = table[r + 1, cos_col] + 1j * table[r + 1, sin_col]
    measured = np.angle(z1 * np.conj(z0))
    expected = conv.scale * conv.frequencies(exp.width, exp.degenerate_limit)[exp.columns.pair[first]]
    tol = exp.tolerance
    bound = 2 * (tol[r, first] + tol[r, second] + tol[r + 1, first] + tol[r + 1, second])
    measurable = np.abs(expected) < np.pi - bound
    lowest = f"{expected[-1]:.6g}" if expected.size else "-"
    if not measurable.any():
        return skipped(name, "every angle step is too close to pi to measure")
    return deviation_result(name, measured[measurable], expected[measurable], bound[measurable],
                             f"angle step per position vs scale*omega_k ({conv.scale:g} down to {lowest})")


def rotation(offset, width: int, convention: str | Convention, degenerate_limit: bool = False) -> np.ndarray:
    """``M(k)`` with ``PE(p + k) = M(k) PE(p)`` on every paired column, block-diagonal in the
    convention's layout: ``sin(t + a) = sin t cos a + cos t sin a``,
    ``cos(t + a) = cos t cos a - sin t sin a``, ``a = scale * k * omega``.
    Unpaired and zero columns get a 1 on the diagonal."""
    rows, diagonal, off_diagonal = rotation_entries(offset, width, convention, degenerate_limit)
    matrix = np.eye(width)
    matrix[rows, rows] = diagonal
    matrix[rows, get_convention(convention).columns(width).partner[rows]] = off_diagonal
    return matrix


def rotation_entries(offset, width: int, convention: str | Convention, degenerate_limit: bool = False):
    """The two entries of each paired row ``j`` of :func:`rotation`'s ``M(offset)``:
    ``(rows j, M[j, j] = cos a, M[j, partner(j)] = +-sin a)``."""
    conv = get_convention(convention)
    columns = conv.columns(width)
    rows = np.flatnonzero(columns.partner >= 0)
    a = conv.scale * offset * conv.frequencies(width, degenerate_limit)[columns.pair[rows]]
    is_sin = columns.is_first[rows] == (conv.first == "sin")
    return rows, np.cos(a), np.where(is_sin, np.sin(a), -np.sin(a))


# The derived checks measure a block of rows at a time, about this many elements (64 KiB in
# float64): small arrays come from the allocator's heap, where the whole (3 L - 58) x d/2
# deviations of a 300 x 512 table at once are fresh pages, zeroed by the kernel on every call
# and costing more than the arithmetic.
DERIVED_BLOCK_ELEMENTS = 1 << 13


def _offsets_present(exp: Expectation, offsets):
    p = exp.positions
    return [k for k in offsets if p.size > k and np.all(p[k:] - p[:-k] == k)]


def _no_offset_reason(exp: Expectation, offsets) -> str:
    if exp.positions.size <= min(offsets):
        return f"{exp.positions.size} rows are too few for an offset of {min(offsets)}"
    return f"the positions are not evenly spaced by 1, so no two rows are k apart for k in {list(offsets)}"


def check_relative_offset(table, exp: Expectation, offsets=(1, 7, 50), name="relative-offset") -> CheckResult:
    """For each offset k the table spans, ``M(k) PE(p) = PE(p + k)`` on the paired columns.
    ``M`` is a rotation, so ``(M PE(p))_j`` is off by at most ``t(p, j) + t(p, partner(j))``;
    add ``t(p + k, j)`` for the other side."""
    table = np.asarray(table, dtype=np.float64)
    used = _offsets_present(exp, offsets)
    if not used:
        return skipped(name, _no_offset_reason(exp, offsets))
    paired = exp.paired
    partner = exp.columns.partner[paired]
    length = table.shape[0]
    shape = (sum(length - k for k in used), paired.size)
    return deviation_result_blocks(name, _offset_deviations(table, exp, used, paired, partner), shape,
                                   f"|M(k) PE(p) - PE(p+k)| for k in {used}")


def _offset_deviations(table, exp: Expectation, used, paired, partner):
    """``(M(k) PE(p), PE(p + k), bound)`` for every offset in ``used``, a block of rows p at a
    time (:data:`DERIVED_BLOCK_ELEMENTS`): the gate runs this on every target."""
    step = max(1, DERIVED_BLOCK_ELEMENTS // max(paired.size, 1))
    for k in used:
        # M(k) PE(p) without the dense product: each paired row of M has two entries.
        _, diagonal, off_diagonal = rotation_entries(k, exp.width, exp.convention, exp.degenerate_limit)
        for start in range(0, table.shape[0] - k, step):
            stop = min(start + step, table.shape[0] - k)
            here, there = table[start:stop], table[start + k:stop + k]
            bound_here, bound_there = exp.tolerance[start:stop], exp.tolerance[start + k:stop + k]
            measured = np.multiply(here[:, paired], diagonal)
            measured += here[:, partner] * off_diagonal
            bound = np.add(bound_here[:, paired], bound_here[:, partner])
            bound += bound_there[:, paired]
            yield measured, there[:, paired], bound


def check_dot_products(table, exp: Expectation, offsets=(1, 7, 50), name="dot-product") -> CheckResult:
    """``PE(p) . PE(p + k) = sum over pairs of cos(scale * k * omega)``: the same for every p,
    and for -k. The bound is the sum over columns of ``t(p) + t(p+k) + t(p) t(p+k)``."""
    table = np.asarray(table, dtype=np.float64)
    used = _offsets_present(exp, offsets)
    if not used:
        return skipped(name, _no_offset_reason(exp, offsets))
    conv, tol, value = exp.convention, exp.tolerance[:, exp.paired], table[:, exp.paired]
    omega = conv.frequencies(exp.width, exp.degenerate_limit)[exp.columns.pair[exp.pair_first]]
    measured, exact, bounds = [], [], []
    for k in used:
        measured.append(np.einsum("ij,ij->i", value[:-k], value[k:]))
        exact.append(np.full(value.shape[0] - k, np.sum(np.cos(conv.scale * k * omega))))
        bounds.append(np.sum(tol[:-k] + tol[k:] + tol[:-k] * tol[k:], axis=1))
    return deviation_result(name, np.concatenate(measured), np.concatenate(exact), np.concatenate(bounds),
                             f"|PE(p).PE(p+k) - sum cos(k omega)| for k in {used}")


def fit_rotation(table, exp: Expectation, offset: int):
    """Least-squares ``M`` with ``PE(p + k) ~ M PE(p)`` on the paired columns, and the bound
    on its error, ``(||dY||_F + ||dX||_F) / sigma_min(X)`` to first order with the element
    bounds as ``dX`` and ``dY``. Informative only where X is well conditioned."""
    paired = exp.paired
    x = np.asarray(table, dtype=np.float64)[:-offset][:, paired]
    y = np.asarray(table, dtype=np.float64)[offset:][:, paired]
    fitted_transpose, *_ = np.linalg.lstsq(x, y, rcond=None)
    sigma_min = np.linalg.svd(x, compute_uv=False)[-1]
    tol = exp.tolerance[:, paired]
    bound = (np.linalg.norm(tol[offset:]) + np.linalg.norm(tol[:-offset])) / sigma_min
    return fitted_transpose.T, bound
