"""The properties correct ALiBi slopes and biases have, each a function returning a
:class:`~posenc_spec.results.CheckResult` with its worst element.

A bias table is ``(heads, rows, keys)`` as :mod:`.oracle` lays it out (one row for the key-only
forms); :func:`expectation` holds what one call must give: the float64 oracle, each element's
bound (:mod:`.tolerance`) and which elements are judged (the causal region, no padded key).
Elements outside it may hold anything finite or not (a bias with the causal mask folded in
holds ``-inf`` there), and no check compares them: each check takes its expected value there
as the measured one. Each derived quantity's bound follows from the element bounds ``t`` by
the first-order rule written beside its check. Under ``up_to_row_constant`` every check
judges the table up to one constant per head and row: what a row's constant changes, it
fits first (:func:`_row_constants`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from posenc_spec.results import CheckResult, Worst, comparison_worst, skipped
from posenc_spec.tolerance import compare_blocks, dtype_name, row_blocks

from . import oracle
from .conventions import AlibiConvention, get_convention
from .tolerance import DEFAULT_DISTANCE, bias_tolerance, row_constant_tolerance, slope_tolerance


@dataclass(frozen=True, eq=False)
class BiasExpectation:
    """What the bias of one call must hold."""

    num_heads: int
    positions: oracle.Positions
    convention: AlibiConvention
    out_dtype: str
    table: np.ndarray  # (heads, rows, keys) float64
    tolerance: np.ndarray  # the same shape
    judged: np.ndarray  # (rows, keys) bool
    shifted_tolerance: np.ndarray  # the same shape: the bound of m (d + c) for any row constant c in the key span

    @property
    def size(self) -> str:
        rows, keys = self.positions.shape
        return f"h={self.num_heads}:{rows}x{keys}"

    @property
    def slopes(self) -> np.ndarray:
        return oracle.slopes(self.num_heads, self.convention)

    # What the checks derive from the expectation alone, made on first use and kept with it
    # (an expectation the judge keeps serves every target of a run under its convention).

    @cached_property
    def causal(self) -> np.ndarray:
        """``m (k - q)`` at every element, float64: the oracle's table where the distance is ``k - q``."""
        if self.convention.bias_form in ("causal", "key-last"):
            return self.table
        q, k = self.positions.queries, self.positions.keys
        return _read_only(self.slopes[:, None, None] * (k[None, :] - q[:, None])[None])

    @cached_property
    def causal_region(self) -> np.ndarray:
        """The judged elements each query may attend (``(rows, keys)`` bool)."""
        return _read_only(oracle.judged(self.convention.replace(bias_region="causal"), self.positions) & self.judged)

    @cached_property
    def formula_is_equivalent(self) -> bool:
        """Whether :func:`check_formula` and :func:`check_equivalent` make one comparison: the
        same exact table, bound and judged elements, each fitted a constant per row."""
        return (self.convention.up_to_row_constant and self.causal is self.table
                and self.shifted_tolerance is self.tolerance and np.array_equal(self.causal_region, self.judged))

    @cached_property
    def key_steps(self) -> tuple | None:
        """``(pick, pair)`` of the steps between neighbouring judged keys one position apart
        (``pick`` the steps' first keys, a slice when every key has one; ``pair`` ``(rows,
        steps)`` bool): None where there is none."""
        keys = self.positions.keys
        steps = np.flatnonzero((np.diff(keys) == 1) & self.judged[:, :-1].any(axis=0)
                               & self.judged[:, 1:].any(axis=0))
        if steps.size == 0:
            return None
        pick = slice(None) if steps.size == keys.size - 1 else steps  # the common case: slices, no copies
        pair = (self.judged[:, :-1] & self.judged[:, 1:])[:, pick]
        return pick, _read_only(pair)

    @cached_property
    def key_step_expectation(self) -> tuple:
        """``(steps, bounds)`` at :attr:`key_steps`, ``(heads, rows, steps)`` each: the exact
        table's steps between neighbouring keys and their bounds ``t_j + t_{j+1}``."""
        pick, _ = self.key_steps
        return (_read_only(np.diff(self.table, axis=2)[:, :, pick]),
                _read_only((self.tolerance[:, :, :-1] + self.tolerance[:, :, 1:])[:, :, pick]))

    @cached_property
    def diagonal_steps(self) -> tuple | None:
        """``(rows, later_rows, cols, later_cols, both)`` of the element pairs one row and one key
        apart (indices, slices where contiguous; ``both`` where both are judged): None where
        there is none."""
        q, k = self.positions.queries, self.positions.keys
        rows, cols = np.flatnonzero(np.diff(q) == 1), np.flatnonzero(np.diff(k) == 1)
        if rows.size == 0 or cols.size == 0:
            return None
        rows, later_rows = _steps(rows, q.size)
        cols, later_cols = _steps(cols, k.size)
        both = self.judged[rows][:, cols] & self.judged[later_rows][:, later_cols]
        return rows, later_rows, cols, later_cols, _read_only(both)

    @cached_property
    def diagonal_bound(self) -> np.ndarray:
        """The bound of each pair of :attr:`diagonal_steps`: the two elements' ``t`` summed."""
        rows, later_rows, cols, later_cols, _ = self.diagonal_steps
        tolerance = self.tolerance
        return _read_only(tolerance[:, rows][:, :, cols] + tolerance[:, later_rows][:, :, later_cols])

    def derived(self) -> list[np.ndarray]:
        """Make what the checks of a bias of this form derive from the expectation alone (kept
        with it: an expectation the judge keeps serves every target of its convention), and
        return every array it holds, those included."""
        arrays = [self.table, self.tolerance, self.judged]
        if self.shifted_tolerance is not self.tolerance:
            arrays.append(self.shifted_tolerance)
        if self.causal is not self.table:
            arrays.append(self.causal)
        arrays.append(self.causal_region)
        if self.key_steps is not None:
            arrays += [self.key_steps[1], *self.key_step_expectation]
        if not self.convention.key_only and self.diagonal_steps is not None:
            arrays += [self.diagonal_steps[-1], self.diagonal_bound]
        return arrays


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _steps(starts: np.ndarray, count: int) -> tuple:
    """The indices ``starts`` and ``starts + 1`` of positions one apart, as slices (views, no
    copies) when they are every one of ``count`` positions but the last."""
    if starts.size == count - 1:
        return slice(0, count - 1), slice(1, count)
    return starts, starts + 1


def expectation(num_heads, positions: oracle.Positions, convention: str | AlibiConvention = "paper",
                out_dtype="float32") -> BiasExpectation:
    """The expectation of one call: ``positions`` from :func:`~.oracle.call_positions` or
    :func:`~.oracle.mask_positions`."""
    conv = get_convention(convention)
    tolerance = bias_tolerance(num_heads, positions, conv, out_dtype)
    shifted = tolerance if conv.up_to_row_constant else row_constant_tolerance(num_heads, positions, conv, out_dtype)
    return BiasExpectation(num_heads, positions, conv, dtype_name(out_dtype), oracle.bias(num_heads, positions, conv),
                           tolerance, oracle.judged(conv, positions), shifted)


def _result(name, passed, message, worst: Worst | None = None) -> CheckResult:
    return CheckResult(name, "passed" if passed else "failed", message, worst)


def _table(table, exp: BiasExpectation) -> np.ndarray:
    """``table`` as float64, after checking its shape."""
    values = np.asarray(table, dtype=np.float64)
    if values.shape != exp.table.shape:
        raise ValueError(f"shape {values.shape} differs from the expected {exp.table.shape}")
    return values


def _judged_result(name, measured, exact, bound, what, judged=None) -> CheckResult:
    """Judge ``|measured - exact|`` against ``bound`` element by element, only where ``judged``
    (broadcast over the heads; None: everywhere): elsewhere both stand at 0, so no value
    there (nor an expectation derived from one) is compared."""
    measured = np.asarray(measured, dtype=np.float64)
    exact = np.broadcast_to(exact, measured.shape)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), measured.shape)
    return _judged_by_heads(name, measured.shape, lambda heads: (measured[heads], exact[heads], bound[heads]), what,
                            judged)


def _judged_by_heads(name, shape, made, what, judged=None) -> CheckResult:
    """:func:`_judged_result` of a table of ``shape`` that ``made`` gives a block of heads (of
    the first axis) at a time: ``made(block)`` is that block's ``(measured, exact, bound)``, float64.
    Each block's temporaries stay in the processor's cache (:func:`~posenc_spec.tolerance.row_blocks`),
    where whole-table ones (6 MB each at 12 heads over 258 x 258) would each be another pass
    through memory; every element is worked out as on the whole table."""
    return _verdict(name, _compared_by_heads(shape, made, judged), what)


def _compared_by_heads(shape, made, judged=None):
    """The :class:`~posenc_spec.tolerance.Comparison` :func:`_judged_by_heads` judges (None for
    an empty table)."""
    if math.prod(shape) == 0:
        return None
    # The elements not judged stand at 0 (every element judged: none).
    ignored = None if judged is None or judged.all() else np.broadcast_to(~judged, shape)

    def blocks():
        for heads in row_blocks(shape):
            yield *made(heads), None if ignored is None else ignored[heads]

    return compare_blocks(blocks(), shape)


def _verdict(name, result, what) -> CheckResult:
    """The check ``name``'s verdict on a comparison, its message opening with ``what``."""
    if result is None:
        return skipped(name, f"{what}: nothing to measure")
    worst = comparison_worst(result)
    message = f"{what}: max error/bound {result.max_ratio:.3g}" + (
        "" if result.ok else f"; worst at {list(worst.index)}: got {worst.actual:.9g}, expected "
                             f"{worst.expected:.9g}, error {worst.error:.3g} > bound {worst.tolerance:.3g}")
    return _result(name, result.ok, message, worst)


# -- slopes -----------------------------------------------------------------------------


def check_slopes(values, num_heads, convention: str | AlibiConvention = "paper", out_dtype="float32",
                 name="slopes", distance: int = DEFAULT_DISTANCE) -> CheckResult:
    """Every slope within its bound of the exact one (0 for a head without a bias): the bound
    of the float32 bias it makes at ``distance``, over the distance
    (:func:`~.tolerance.slope_tolerance`), whatever ``out_dtype`` it came in."""
    conv = get_convention(convention)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size != num_heads:
        return _result(name, False, f"{values.size} slopes for {num_heads} heads")
    return _judged_result(name, values, oracle.slopes(num_heads, conv), slope_tolerance(num_heads, conv, distance),
                          f"{num_heads} slopes under {conv.name()}, {dtype_name(out_dtype)}, judged by the float32 "
                          f"bias they make at distance {distance}")


def check_head_ratio(values, num_heads, convention: str | AlibiConvention = "paper", name="head-ratio",
                     distance: int = DEFAULT_DISTANCE) -> CheckResult:
    """Consecutive biased heads' slopes stand in the rule's ratios (``2 ** (-B/n)`` for a power
    of two; ``2 ** (-B/P)`` within each half of the paper's interleave, and the first extra
    slope ``2 ** (-B/2P)``): a table with the right slopes in the wrong heads (reversed,
    shuffled) fails here. With relative bounds ``t/m``, a ratio is off by at most
    ``ratio (t_h/m_h + t_{h+1}/m_{h+1})`` to first order."""
    conv = get_convention(convention)
    count = conv.biased_heads(num_heads)
    values = np.asarray(values, dtype=np.float64).reshape(-1)[:count]
    if count < 2:
        return skipped(name, f"{count} biased head: no ratio")
    exact = oracle.slopes(num_heads, conv)[:count]
    relative = slope_tolerance(num_heads, conv, distance)[:count] / exact
    with np.errstate(divide="ignore", invalid="ignore"):
        measured = values[1:] / values[:-1]
    expected = exact[1:] / exact[:-1]
    measured = np.where(np.isfinite(measured), measured, np.inf)
    return _judged_result(name, measured, expected, expected * (relative[1:] + relative[:-1]),
                          f"slope ratios between {count} heads")


# -- bias tables ----------------------------------------------------------------------------


def check_finite(table, exp: BiasExpectation, name="finite") -> CheckResult:
    """Every judged element finite (the masked ones may hold ``-inf``)."""
    values = np.asarray(table, dtype=np.float64)
    bad = ~np.isfinite(values) & exp.judged[None]
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return _result(name, False, f"{int(bad.sum())} NaN or Inf values among the judged elements of {exp.size}, "
                                    f"first at {list(where)}: {values[where]}")
    return _result(name, True, f"all {int(exp.judged.sum()) * exp.num_heads} judged values finite")


def _row_constants(difference: np.ndarray, tolerance: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Per (head, row), the constant ``c`` with every judged ``|difference - c| <= tolerance``
    when one exists: the middle of ``[max(difference - t), min(difference + t)]``."""
    within = True if judged.all() else judged[None]  # the reductions skip the other elements: no masked copies
    low = (difference - tolerance).max(axis=2, initial=-np.inf, where=within)
    high = (difference + tolerance).min(axis=2, initial=np.inf, where=within)
    middle = (low + high) / 2
    return np.where(np.isfinite(middle), middle, 0.0)[:, :, None]


def _fitted_rows(values, reference, bound, region):
    """``made`` of :func:`_judged_by_heads` for ``values`` against ``reference`` plus the
    constant per head and row that fits best within ``bound`` at the ``region`` elements."""
    def made(heads):
        with np.errstate(invalid="ignore"):
            fitted = reference[heads] + _row_constants(values[heads] - reference[heads], bound[heads], region)
        return values[heads], fitted, bound[heads]

    return made


def _formula_what(exp: BiasExpectation) -> str:
    what = f"{exp.size} under {exp.convention.name()}, {exp.out_dtype}"
    return what + (", up to a constant per row" if exp.convention.up_to_row_constant else "")


_EQUIVALENT_WHAT = "against m (k - q) up to a constant per row"


def check_formula(table, exp: BiasExpectation, name="formula") -> CheckResult:
    """Every judged element within its bound of the exact bias; under ``up_to_row_constant``,
    after one constant per head and row (the one that fits best)."""
    values = _table(table, exp)
    if not exp.convention.up_to_row_constant:
        return _judged_result(name, values, exp.table, exp.tolerance, _formula_what(exp), exp.judged[None])
    return _judged_by_heads(name, values.shape, _fitted_rows(values, exp.table, exp.tolerance, exp.judged),
                            _formula_what(exp), exp.judged[None])


def check_equivalent(table, exp: BiasExpectation, name="equivalent") -> CheckResult:
    """The attention the bias gives is the paper's: at the keys each query may attend, the
    table minus ``m (k - q)`` is one constant per row (softmax cancels it). Within bounds:
    some ``c`` has ``|table - m (k - q) - c| <= t'`` at every such key of the row, ``t'`` the
    bound of a computation of ``m (d + c)`` (the constant within the key span: the bound
    :func:`~.tolerance.row_constant_tolerance` derives, never 0 where the target rounds)."""
    values = _table(table, exp)
    region = exp.causal_region
    return _judged_by_heads(name, values.shape, _fitted_rows(values, exp.causal, exp.shifted_tolerance, region),
                            f"{exp.size} {_EQUIVALENT_WHAT}", region[None])


def check_formula_and_equivalent(table, exp: BiasExpectation, names=("formula", "equivalent")) -> tuple:
    """:func:`check_formula` and :func:`check_equivalent`, compared once where they are one
    comparison: a causal form judged up to a row constant over its causal region (the exact
    bias is ``m (k - q)``, its bound the shifted one)."""
    if not exp.formula_is_equivalent:
        return check_formula(table, exp, names[0]), check_equivalent(table, exp, names[1])
    values = _table(table, exp)
    compared = _compared_by_heads(values.shape, _fitted_rows(values, exp.table, exp.tolerance, exp.judged),
                                  exp.judged[None])
    return (_verdict(names[0], compared, _formula_what(exp)),
            _verdict(names[1], compared, f"{exp.size} {_EQUIVALENT_WHAT}"))


def check_linear(table, exp: BiasExpectation, name="linear") -> CheckResult:
    """Along each row, neighbouring judged keys one position apart differ by the head's slope
    times the change of distance (``+m`` into the future for the causal and key forms, ``-m``
    past the query under ``symmetric``): the bias is linear in the distance, with the slope
    its head declares. A row constant cancels, so it holds under ``up_to_row_constant`` too.
    Bound: ``t_j + t_{j+1}``."""
    values = _table(table, exp)
    if exp.key_steps is None:
        return skipped(name, f"{exp.size}: no two judged keys one position apart")
    pick, pair = exp.key_steps
    steps, bounds = exp.key_step_expectation

    def made(heads):
        with np.errstate(invalid="ignore"):  # unjudged neighbours may be infinite: their step is never compared
            measured = np.diff(values[heads], axis=2)[:, :, pick]
        return measured, steps[heads], bounds[heads]

    return _judged_by_heads(name, (exp.num_heads, *pair.shape), made, f"{exp.size}: steps between neighbouring keys",
                            pair[None])


def check_toeplitz(table, exp: BiasExpectation, name="toeplitz") -> CheckResult:
    """The bias depends on ``k - q`` only: moving the query and the key one position on
    leaves it unchanged (``b[r+1, c+1] = b[r, c]``), for the forms with a row per query;
    under ``up_to_row_constant``, changes it by one constant per row (the two rows'
    constants differ). Bound: the two elements' ``t`` summed."""
    if exp.convention.key_only:
        return skipped(name, f"{exp.convention.bias_form} is one row of keys")
    values = _table(table, exp)
    if exp.diagonal_steps is None:
        return skipped(name, f"{exp.size}: no two rows and keys one position apart")
    rows, later_rows, cols, later_cols, both = exp.diagonal_steps
    shifted, bounds = exp.convention.up_to_row_constant, exp.diagonal_bound

    def made(heads):
        later = values[heads][:, later_rows][:, :, later_cols]
        earlier = values[heads][:, rows][:, :, cols]
        bound = bounds[heads]
        if shifted:
            with np.errstate(invalid="ignore"):
                earlier = earlier + _row_constants(later - earlier, bound, both)
        return later, earlier, bound

    what = f"{exp.size}: b[r+1, c+1] against b[r, c]" + (" up to a constant per row" if shifted else "")
    return _judged_by_heads(name, (exp.num_heads, *both.shape), made, what, both[None])


def check_diagonal(table, exp: BiasExpectation, name="diagonal") -> CheckResult:
    """Where the distance is 0 (a query's own key; the last key of ``key-last``; key 0 of
    ``key``) every correct idiom gives exactly 0: ``m * 0`` and ``m k - m k`` alike."""
    if exp.convention.up_to_row_constant:
        return skipped(name, "up_to_row_constant: any constant per row is accepted")
    zero = (oracle.distances(exp.convention, exp.positions) == 0) & exp.judged
    if not zero.any():
        return skipped(name, f"{exp.size}: no judged element at distance 0")
    values = np.asarray(table, dtype=np.float64)[:, zero]
    return _judged_result(name, values, 0.0, 0.0, f"{exp.size}: the {int(zero.sum())} elements at distance 0")


def check_unbiased_heads(table, exp: BiasExpectation, name="unbiased-heads") -> CheckResult:
    """Under partial ALiBi, the heads past ``alibi_heads`` add exactly nothing (under
    ``up_to_row_constant``, one constant per row: the same attention)."""
    count = exp.convention.biased_heads(exp.num_heads)
    if count == exp.num_heads:
        return skipped(name, "every head carries a bias")
    values = _table(table, exp)[count:]
    expected, what = np.zeros_like(values), f"heads {count}..{exp.num_heads - 1} of {exp.size}"
    if exp.convention.up_to_row_constant:
        with np.errstate(invalid="ignore"):
            expected = expected + _row_constants(values, np.zeros_like(values), exp.judged)
        what += " up to a constant per row"
    return _judged_result(name, values, expected, 0.0, what, exp.judged[None])


def check_decode(decode, prefill, decode_exp: BiasExpectation, prefill_exp: BiasExpectation,
                 name="decode") -> CheckResult:
    """A decoding call (one query at position ``p``, keys ``0 .. p``) made after a prefill
    of longer length, by the same module, agrees with the prefill's row for query ``p`` on
    those keys: the same values for the causal, symmetric and key forms, the same up to one
    constant for ``key-last`` (0 moves to the last key) and under ``up_to_row_constant``.
    Bound: the two calls' ``t`` summed."""
    conv = decode_exp.convention
    p = int(decode_exp.positions.keys[-1])
    rows = np.flatnonzero(prefill_exp.positions.queries == p) if not conv.key_only else np.array([0])
    if rows.size == 0 or prefill_exp.positions.keys.size <= p:
        return skipped(name, f"the prefill {prefill_exp.size} has no row for query {p}")
    keys = np.flatnonzero(decode_exp.judged[0])
    new = np.asarray(decode, dtype=np.float64)[:, 0, keys]
    old = np.asarray(prefill, dtype=np.float64)[:, rows[0], keys]
    bound = decode_exp.tolerance[:, 0, keys] + prefill_exp.tolerance[:, rows[0], keys]
    what = f"decode at position {p} against row {rows[0]} of the prefill {prefill_exp.size}"
    if conv.bias_form == "key-last" or conv.up_to_row_constant:
        judged = np.ones((1, keys.size), dtype=bool)
        with np.errstate(invalid="ignore"):
            shift = _row_constants((new - old)[:, None, :], bound[:, None, :], judged)[:, 0, :]
        old = old + shift
        what += ", up to a constant"
    return _judged_result(name, new, old, bound, what)
