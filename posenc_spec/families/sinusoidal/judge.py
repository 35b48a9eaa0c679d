"""The sinusoidal family's judge (table and timesteps APIs): one verdict per check id.

The grid and check ids are :mod:`.grid`'s, the properties :mod:`.properties`'.
:class:`SinusoidalJudge` judges call after call (:func:`judge_table` and the judges of odd
widths, degenerate widths, tables added to ``x`` and sequences) and keeps, when asked, the
table a picture of a failing target is best drawn from; the checks every family shares
(determinism, aliasing, global state) are the engine's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from posenc_spec.families.sinusoidal import grid
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.tolerance import addition_bound
from posenc_spec.gate.calls import Outcome, shape_problem
from posenc_spec.gate.judge import Results, failed, passed
from posenc_spec.gate.report import KeptTable
from posenc_spec.results import CheckResult, check_finite, noted, skipped

# The grid's slots identify fits on, and those it is checked on afterwards.
FIT_SLOTS = {"table": ("128x64", "50x8"), "timesteps": ("every-step-x128", "first-50x8")}
CHECK_SLOTS = {"table": ("300x512", "1024x768"), "timesteps": ("int-draws-x320", "float-draws-x64")}
NEAREST_SLOTS = {slot for slots in (*FIT_SLOTS.values(), *CHECK_SLOTS.values()) for slot in slots}


def probes(declaration) -> list[grid.Probe]:
    return grid.probes_for(declaration.api, declaration.t_max, declaration.max_positions, declaration.spec.skip_odd,
                           declaration.spec.x_layout)


def prepare(declaration, dtype: str = "float32") -> None:
    """Compute the expected tables of the grid for the most common output dtype while the
    template boots (they are cached; another dtype gets its own)."""
    for probe in probes(declaration):
        if probe.role == "odd" and declaration.spec.convention.odd == "error":
            continue
        degenerate = probe.width == 2 and declaration.spec.convention.freq_shift == 1
        try:
            checks.expectation(probe.positions, probe.width, declaration.spec.convention, dtype, degenerate)
        except ValueError:  # a width this convention does not define
            pass


class SinusoidalJudge:
    """Checks of one table or timesteps target, call by call (``results`` is the engine's)."""

    def __init__(self, declaration, results, keep_table: bool):
        self.convention, self.results, self.keep_table = declaration.spec.convention, results, keep_table
        self.required = grid.input_dtypes(probes(declaration))
        self.kept, self.worst_ratio, self.full = None, 0.0, {}
        self.tables: dict = {}  # slot -> (positions, table, dtype) of the slots advice.nearest reads

    def judge(self, probe, outcome) -> bool:
        """Judge one call; whether it returned a table (the determinism repeat compares with it)."""
        if probe.role == "odd":
            self.results.add(judge_odd(probe, outcome, self.convention))
            return False
        if probe.role == "degenerate":
            self.results.add(judge_degenerate(probe, outcome, self.convention))
            return False
        if probe.role == "adds":
            self.results.add(judge_adds(probe, outcome, self.convention))
            return False
        if probe.role == "sequence":
            self.results.merge(judge_sequence_call(probe, outcome, self.convention, self.required))
            return False
        judge_table(probe, outcome, self.convention, self.results)
        if not outcome.ok or call_problem(probe, outcome):
            return False
        if probe.slot in NEAREST_SLOTS:
            self.tables[probe.slot] = (probe.positions, outcome.table, outcome.dtype)
        if probe.full:
            self.full[probe.slot] = (probe, outcome)
        formula = self.results.by_id.get(f"formula[{probe.slot}]")
        if self.keep_table and formula is not None and formula.status == "failed" and formula.worst is not None:
            if self.kept is None or formula.worst.ratio > self.worst_ratio:  # the most telling size
                self.kept = KeptTable(probe.slot, probe.positions, outcome.table, outcome.dtype)
                self.worst_ratio = formula.worst.ratio
        return True

    def kept_table(self) -> KeptTable | None:
        """The table to draw: where the formula failed worst, else the largest size with
        every property check (300x512 on the default grid)."""
        if self.kept is not None or not self.full:
            return self.kept
        probe, outcome = max(self.full.values(), key=lambda item: item[0].length * item[0].width)
        return KeptTable(probe.slot, probe.positions, outcome.table, outcome.dtype)


def _for_checks(probe, table: np.ndarray) -> np.ndarray:
    """The table the probe's checks read: as it came for the bulk checks (finite, formula and
    range read float16 and float32 exactly), in float64 once for a probe whose derived
    checks all square and sum it in float64."""
    return table.astype(np.float64) if probe.full and table.dtype != np.float64 else table


def call_problem(probe, outcome: Outcome) -> str | None:
    """Why a call's outcome is not a table of the probe's size (None when it is)."""
    if not outcome.ok:
        return outcome.message
    if outcome.is_tuple or len(outcome.arrays) != 1:
        return f"returned a tuple of {len(outcome.arrays)} arrays, not one table"
    return shape_problem(outcome.table.shape, (probe.length, probe.width))


def judge_table(probe, outcome: Outcome, convention, results: Results) -> None:
    """``call[S]`` and every table check of the probe."""
    call_id = f"call[{probe.slot}]"
    names = [f"{name}[{probe.slot}]" for name in probe.table_check_names()]
    if outcome.status == "not-run":
        results.add(skipped(call_id, outcome.message))
        results.not_run(names, call_id, f"the call for {probe.slot} was not made")
        return
    problem = call_problem(probe, outcome)
    if problem:
        results.add(failed(call_id, f"{probe.size}: {problem}"))
        results.not_run(names, call_id, f"the call for {probe.slot} did not return a table")
        return
    results.add(passed(call_id, f"returned a {probe.length}x{probe.width} {outcome.message}"))
    table = _for_checks(probe, outcome.table)
    finite = check_finite(table, names[0])
    results.add(finite)
    if not finite.passed:
        results.not_run(names[1:], names[0], f"the {probe.slot} table holds NaN or Inf")
        return
    expectation = checks.expectation(probe.positions, probe.width, convention, outcome.dtype)
    for name, check_id in zip(probe.table_check_names()[1:], names[1:], strict=True):
        results.add(grid.CHECK_FUNCTIONS[name](table, expectation, name=check_id))


def _formula_verdict(check_id, probe, outcome, convention, degenerate_limit=False, note="") -> CheckResult:
    """One check for a whole call: its outcome, then finite, then the formula."""
    if outcome.status == "not-run":
        return skipped(check_id, outcome.message)
    problem = call_problem(probe, outcome)
    if problem:
        return failed(check_id, f"{probe.size}: {problem}{note}")
    table = outcome.table
    finite = check_finite(table, check_id)
    if not finite.passed:
        return finite
    expectation = checks.expectation(probe.positions, probe.width, convention, outcome.dtype, degenerate_limit)
    result = checks.check_formula(table, expectation, name=check_id)
    if degenerate_limit:
        result = dataclasses.replace(result, message="against the limit omega = 1: " + result.message)
    return result


def judge_adds(probe, outcome: Outcome, convention) -> CheckResult:
    """A module that returns ``x + table``, handed seeded ``x``: what it returns minus ``x``
    (exact in float64) against the table, within the table's bound and one rounding of the
    sum (:func:`posenc_spec.families.sinusoidal.tolerance.addition_bound`)."""
    check_id = probe.check_id
    if outcome.status == "not-run":
        return skipped(check_id, outcome.message)
    problem = call_problem(probe, outcome)
    if problem:
        return failed(check_id, f"{probe.size}: {problem}")
    x = grid.adds_x(probe.length, probe.width).astype(np.float64)
    added = outcome.table.astype(np.float64) - x
    expectation = checks.expectation(probe.positions, probe.width, convention, outcome.dtype)
    bound = expectation.tolerance + addition_bound(x, expectation.table, outcome.dtype)
    result = checks.check_formula(added, dataclasses.replace(expectation, tolerance=bound), name=check_id)
    return dataclasses.replace(result, message="what it adds to x: " + result.message)


def judge_sequence_call(probe, outcome: Outcome, convention, required=None) -> CheckResult:
    """One call of a sequence (:mod:`posenc_spec.families.sinusoidal.sequences`): its outcome, finite, then
    the formula, said of the call (``probe.note``). A call that raises on timesteps of a dtype
    the grid does not require (``required``: :func:`.grid.input_dtypes`) is noted, not failed:
    the target refuses that dtype, and the sequence's other calls judge it in those it takes."""
    if outcome.status == "raised" and probe.input_dtype is not None and probe.input_dtype not in (required or ()):
        takes = " and ".join(sorted(required or ()))
        return noted(probe.check_id, f"{probe.note}: {outcome.message}; the grid requires {takes} timesteps, "
                                     f"not {probe.input_dtype}: a target may refuse {probe.input_dtype}, and the "
                                     "sequence judges it in the dtypes it takes")
    result = _formula_verdict(probe.check_id, probe, outcome, convention)
    return dataclasses.replace(result, message=f"{probe.note}: {result.message}")


def judge_odd(probe, outcome: Outcome, convention) -> CheckResult:
    check_id = probe.check_id
    if outcome.status == "not-run":
        return skipped(check_id, outcome.message)
    if convention.odd != "error":
        return _formula_verdict(check_id, probe, outcome, convention,
                                note=f" (odd='{convention.odd}' declares a {probe.length}x{probe.width} table)")
    if outcome.status == "raised":
        return passed(check_id, f"{outcome.message} (odd='error' declares an exception)")
    if outcome.ok:
        return failed(check_id, f"returned a {probe.length}x{probe.width} table ({outcome.message}) where odd='error' "
                                "declares an exception; declare --odd zero-pad, ceil or skip if the table is intended")
    return failed(check_id, f"{outcome.message} (odd='error' declares an exception)")


def judge_degenerate(probe, outcome: Outcome, convention) -> CheckResult:
    check_id = probe.check_id
    if outcome.status == "not-run":
        return skipped(check_id, outcome.message)
    undefined = probe.width == 2 and convention.freq_shift == 1
    if not undefined:
        return _formula_verdict(check_id, probe, outcome, convention)
    if outcome.status == "raised":
        return passed(check_id, f"{outcome.message} (fine: at d = 2 under shift 1 the formula has no value)")
    if outcome.ok and not call_problem(probe, outcome) and np.isnan(outcome.table).any():
        count = int(np.isnan(outcome.table).sum())
        return failed(check_id, f"silent NaN: {count} NaN values in the {probe.length}x2 table (at d = 2 under shift 1 "
                                "the formula has no value: raise, or use the limit omega = 1)")
    return _formula_verdict(check_id, probe, outcome, convention, degenerate_limit=True)
