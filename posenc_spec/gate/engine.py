"""The gate's engine: run a target on the grid and judge every table against a convention.

This is the one implementation: ``posenc-spec check``, the pytest plugin and the mutation
meta-tests all call :func:`check_target` or :func:`check_many`. The grid and the check ids
are in :mod:`posenc_spec.gate.grid`, the properties in :mod:`posenc_spec.checks`, the
bounds in :mod:`posenc_spec.tolerance`; the target runs in a child process
(:mod:`posenc_spec.gate.worker`), so raising, exiting, crashing, hanging and returning
rubbish all end as failed checks with a one-line reason.

Example::

    from posenc_spec.conventions import get_convention
    from posenc_spec.gate import GateSpec, check_target

    report = check_target(GateSpec("mypkg.pe:table", get_convention("vaswani")))
    report.conforms, [check.name for check in report.failures()]
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from posenc_spec import checks
from posenc_spec.checks import CheckResult
from posenc_spec.conventions import Convention, get_convention

from . import grid
from .loader import parse_target
from .worker import Outcome, Worker, boot_in_background, load, run_calls, run_worker

APIS = ("table", "timesteps")
DEFAULT_TIMEOUT = 60.0
XFAIL_PREFIX = "[xfail] "


def _positive_number(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


@dataclass(frozen=True)
class GateSpec:
    """What to check: a TARGET, the convention it declares, its API and the grid's limits.

    ``api="table"`` calls ``fn(num_positions, dim)``; ``api="timesteps"`` calls
    ``fn(timesteps, dim)`` with 1-D int64 and float32 torch tensors of values in
    ``[0, t_max]``. ``max_positions`` caps every length of the grid. ``skip_odd`` tests no
    odd width (otherwise ``convention.odd`` decides). ``xfails`` holds check ids whose
    failure is a known deviation. ``timeout`` bounds each import and each call, in seconds.
    """

    target: str
    convention: Convention
    api: str = "table"
    t_max: float = 1000.0
    max_positions: int | None = None
    skip_odd: bool = False
    xfails: frozenset[str] = frozenset()
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self):
        parse_target(self.target)
        if not isinstance(self.convention, Convention):
            object.__setattr__(self, "convention", get_convention(self.convention))
        if self.api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, got {self.api!r}")
        _positive_number("t_max", self.t_max)
        if self.max_positions is not None and (
                isinstance(self.max_positions, bool) or not isinstance(self.max_positions, (int, np.integer))
                or self.max_positions < 1):
            raise ValueError(f"max_positions must be a positive int or None, got {self.max_positions!r}")
        if not isinstance(self.skip_odd, bool):
            raise TypeError(f"skip_odd must be a bool, got {self.skip_odd!r}")
        if isinstance(self.xfails, str) or not all(isinstance(name, str) for name in self.xfails):
            raise TypeError(f"xfails must be a collection of check ids (str), got {self.xfails!r}")
        object.__setattr__(self, "xfails", frozenset(self.xfails))
        _positive_number("timeout", self.timeout)

    def probes(self) -> list[grid.Probe]:
        return grid.probes_for(self.api, self.t_max, self.max_positions, self.skip_odd)

    def plan(self) -> list[str]:
        """Every check id this spec's report holds, in order."""
        return grid.plan_ids(self.probes())


@dataclass(frozen=True, eq=False)
class KeptTable:
    """A table the target returned, kept for pictures of a report that does not conform:
    the call's ``label`` (its size), the ``positions`` the expected table is computed at
    (a length, or the timesteps passed), the ``table`` in the dtype produced and ``dtype``,
    the name its tolerance follows."""

    label: str
    positions: int | np.ndarray
    table: np.ndarray
    dtype: str


def _finite_or_none(value):
    return value if value is None or math.isfinite(value) else None


@dataclass
class GateReport:
    """The verdict on one target. ``checks`` holds every id of ``GateSpec.plan()`` in
    order (a check that could not run is a failure saying why); ``excused`` names the
    failures the xfails list accepts; ``importable`` is False when the target did not
    import (exit status 2). ``kept_table`` is None unless the run was asked to keep a
    table (:func:`check_many`'s ``keep_table``) and this target does not conform."""

    target: str
    convention: Convention
    conforms: bool
    checks: list[CheckResult]
    api: str = "table"
    skip_odd: bool = False
    importable: bool = True
    excused: frozenset[str] = frozenset()
    warnings: list[str] = field(default_factory=list)
    kept_table: KeptTable | None = None

    def failures(self) -> list[CheckResult]:
        """Failed checks that the xfails list does not excuse."""
        return [check for check in self.checks if not check.passed and check.name not in self.excused]

    def result(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check {name!r} in the report on {self.target}")

    def convention_dict(self) -> dict:
        values = self.convention.as_dict()
        if self.skip_odd:
            values["odd"] = "skip"
        return values

    def as_dict(self) -> dict:
        """The ``--json`` entry; NaN and Inf errors become null (the message says which)."""
        entries = []
        for check in self.checks:
            entry = check.as_dict()
            entry["max_error"] = _finite_or_none(entry["max_error"])
            entry["tolerance"] = _finite_or_none(entry["tolerance"])
            entries.append(entry)
        return {"target": self.target, "convention": self.convention_dict(), "conforms": self.conforms,
                "checks": entries}


def exit_status(reports) -> int:
    """2 if a target did not import, else 1 if one does not conform, else 0."""
    reports = list(reports)
    if any(not report.importable for report in reports):
        return 2
    return 0 if all(report.conforms for report in reports) else 1


# -- judging one call --------------------------------------------------------------------------


def _passed(name, message, max_error=None, tolerance=None) -> CheckResult:
    return CheckResult(name, True, message, max_error, tolerance)


def _failed(name, message, max_error=None, tolerance=None) -> CheckResult:
    return CheckResult(name, False, message, max_error, tolerance)


class _Results:
    """Check results by id, and for each check that could not run, the id that stopped it."""

    def __init__(self):
        self.by_id: dict[str, CheckResult] = {}
        self.causes: dict[str, str] = {}

    def add(self, result: CheckResult) -> None:
        self.by_id[result.name] = result

    def not_run(self, names, cause: str, reason: str) -> None:
        for name in names:
            self.add(_failed(name, f"not run: {reason}"))
            self.causes[name] = cause


def _float64(table: np.ndarray) -> np.ndarray:
    return table if table.dtype == np.float64 else table.astype(np.float64)


def _size(probe) -> str:
    return f"{probe.length}x{probe.width}"


def _judge_table(probe, outcome: Outcome, convention, results: _Results) -> None:
    call_id = f"call[{probe.label}]"
    names = [f"{name}[{probe.label}]" for name in probe.table_check_names()]
    if not outcome.ok:
        results.add(_failed(call_id, outcome.message))
        results.not_run(names, call_id, f"the call for {probe.label} did not return a table")
        return
    results.add(_passed(call_id, f"returned a {_size(probe)} {outcome.message}"))
    table = _float64(outcome.table)
    finite = checks.check_finite(table, names[0])
    results.add(finite)
    if not finite.passed:
        results.not_run(names[1:], names[0], f"the {probe.label} table holds NaN or Inf")
        return
    expectation = checks.expectation(probe.positions, probe.width, convention, outcome.dtype)
    for name, check_id in zip(probe.table_check_names()[1:], names[1:], strict=True):
        results.add(grid.CHECK_FUNCTIONS[name](table, expectation, name=check_id))


def _formula_verdict(check_id, probe, outcome, convention, degenerate_limit=False, note="") -> CheckResult:
    """One check for a whole call: its outcome, then finite, then the formula."""
    if not outcome.ok:
        return _failed(check_id, outcome.message + note)
    table = _float64(outcome.table)
    finite = checks.check_finite(table, check_id)
    if not finite.passed:
        return finite
    expectation = checks.expectation(probe.positions, probe.width, convention, outcome.dtype, degenerate_limit)
    result = checks.check_formula(table, expectation, name=check_id)
    if degenerate_limit:
        result = dataclasses.replace(result, message="against the limit omega = 1: " + result.message)
    return result


def _judge_odd(probe, outcome: Outcome, convention) -> CheckResult:
    check_id = probe.check_id
    if convention.odd != "error":
        return _formula_verdict(check_id, probe, outcome, convention,
                                note=f" (odd='{convention.odd}' declares a {_size(probe)} table)")
    if outcome.status == "raised":
        return _passed(check_id, f"{outcome.message} (odd='error' declares an exception)")
    if outcome.ok:
        return _failed(check_id, f"returned a {_size(probe)} table ({outcome.message}) where odd='error' declares an "
                                 "exception; declare --odd zero-pad, ceil or skip if the table is intended")
    return _failed(check_id, f"{outcome.message} (odd='error' declares an exception)")


def _judge_degenerate(probe, outcome: Outcome, convention) -> CheckResult:
    check_id = probe.check_id
    undefined = probe.width == 2 and convention.freq_shift == 1
    if not undefined:
        return _formula_verdict(check_id, probe, outcome, convention)
    if outcome.status == "raised":
        return _passed(check_id, f"{outcome.message} (fine: at d = 2 under shift 1 the formula has no value)")
    if outcome.ok and np.isnan(outcome.table).any():
        count = int(np.isnan(outcome.table).sum())
        return _failed(check_id, f"silent NaN: {count} NaN values in the {_size(probe)} table (at d = 2 under shift 1 "
                                 "the formula has no value: raise, or use the limit omega = 1)")
    return _formula_verdict(check_id, probe, outcome, convention, degenerate_limit=True)


def _judge_determinism(probe, outcome: Outcome, first: Outcome | None) -> CheckResult:
    check_id = probe.check_id
    if first is None:
        return _failed(check_id, f"not run: the first call for {probe.label} did not return a table")
    if not outcome.ok:
        return _failed(check_id, f"the second call for {probe.label} {outcome.message}")
    if first.dtype != outcome.dtype:
        return _failed(check_id, f"two calls for {probe.label} returned {first.dtype} and then {outcome.dtype}")
    if np.array_equal(first.table, outcome.table, equal_nan=True):
        return _passed(check_id, f"two calls for {probe.label} returned the same {outcome.dtype} table, bit for bit",
                       0.0, 0.0)
    a, b = _float64(first.table), _float64(outcome.table)
    difference = np.abs(a - b)
    difference = np.where(np.isnan(a) != np.isnan(b), np.inf, np.nan_to_num(difference, nan=0.0))
    worst = np.unravel_index(int(np.argmax(difference)), difference.shape)
    where = [int(i) for i in worst]
    return _failed(check_id, f"two calls for {probe.label} differ in {int((difference > 0).sum())} elements; "
                             f"worst at {where}: {a[worst]:.9g} then {b[worst]:.9g}", float(difference[worst]), 0.0)


def _judge_state(changes: list[str], ran: bool) -> CheckResult:
    if changes:
        return _failed("global-state", f"{changes[0]} (restored)"
                       + (f"; {len(changes) - 1} more change(s)" if len(changes) > 1 else ""))
    if not ran:
        return _failed("global-state", "not run: no call returned")
    return _passed("global-state", "no call changed torch's default dtype, device, grad mode or flags, "
                                   "NumPy's error state or print options, a global random number generator, "
                                   "the working directory, or its timesteps argument")


# -- one target --------------------------------------------------------------------------------


def _fallback_label(probes) -> str | None:
    """The largest size that gets every property check (300x512 on the default table grid)."""
    full = [probe for probe in probes if probe.role == "table" and probe.full]
    return max(full, key=lambda probe: probe.length * probe.width).label if full else None


def _check_one(spec: GateSpec, worker: Worker, keep_table: bool = False) -> GateReport:
    probes = spec.probes()
    plan = grid.plan_ids(probes)
    results = _Results()
    imported, message = load(worker, spec.target, spec.timeout)
    if not imported:
        results.add(_failed("import", message))
        results.not_run(plan[1:], "import", "the target could not be imported")
        return _finish(spec, plan, results, importable=False)
    results.add(_passed("import", message))
    convention = spec.convention
    changes, kept, ran = [], {}, False
    repeated = {probe.repeats for probe in probes if probe.role == "repeat"}
    # At most two tables are held: the first one whose formula check fails (unexcused),
    # and the fallback size's, drawn when no formula check fails.
    first_wrong = fallback = None
    fallback_label = _fallback_label(probes) if keep_table else None
    outcomes = run_calls(worker, spec.target, [probe.request() for probe in probes], spec.timeout)
    with contextlib.closing(outcomes):
        for probe, outcome in zip(probes, outcomes, strict=True):
            ran = ran or outcome.status not in ("not-run", "hung", "died")
            changes += [f"the call for {probe.label} changed {change}" for change in outcome.state]
            if probe.role == "table":
                _judge_table(probe, outcome, convention, results)
                if probe.label in repeated and outcome.ok:
                    kept[probe.label] = outcome
                if keep_table and outcome.ok and first_wrong is None:
                    formula_id = f"formula[{probe.label}]"
                    if (not results.by_id[formula_id].passed and formula_id not in spec.xfails
                            and results.causes.get(formula_id) not in spec.xfails):
                        first_wrong = KeptTable(probe.label, probe.positions, outcome.table, outcome.dtype)
                    elif probe.label == fallback_label:
                        fallback = KeptTable(probe.label, probe.positions, outcome.table, outcome.dtype)
            elif probe.role == "odd":
                results.add(_judge_odd(probe, outcome, convention))
            elif probe.role == "degenerate":
                results.add(_judge_degenerate(probe, outcome, convention))
            else:
                result = _judge_determinism(probe, outcome, kept.get(probe.repeats))
                results.add(result)
                if probe.repeats not in kept:
                    results.causes[result.name] = f"call[{probe.repeats}]"
    results.add(_judge_state(changes, ran))
    report = _finish(spec, plan, results, importable=True)
    if not report.conforms:
        report.kept_table = first_wrong or fallback
    return report


def _finish(spec: GateSpec, plan: list[str], results: _Results, importable: bool) -> GateReport:
    ordered = [results.by_id[name] for name in plan]
    excused = frozenset(check.name for check in ordered if not check.passed
                        and (check.name in spec.xfails or results.causes.get(check.name) in spec.xfails))
    ordered = [dataclasses.replace(check, message=XFAIL_PREFIX + check.message) if check.name in excused else check
               for check in ordered]
    warnings = []
    for name in sorted(spec.xfails):
        if name not in results.by_id:
            warnings.append(f"xfails entry {name!r} matches no check of this run")
        elif results.by_id[name].passed:
            warnings.append(f"xfails entry {name!r} passed: the known deviation is gone, remove the entry")
    conforms = importable and all(check.passed or check.name in excused for check in ordered)
    return GateReport(spec.target, spec.convention, conforms, ordered, spec.api, spec.skip_odd, importable,
                      excused, warnings)


# -- public entry points -----------------------------------------------------------------------


def check_many(specs, keep_table: bool = False) -> list[GateReport]:
    """One report per spec, in the given order, from one worker process (the
    :func:`~posenc_spec.gate.worker.session`'s when one is open).

    With ``keep_table`` each report that does not conform keeps one table the target
    returned (:attr:`GateReport.kept_table`), for pictures: the first size whose formula
    check failed, else the largest size that gets every property check; None when no
    such call returned a table.

    Targets are run grouped by API and convention so that the expected tables
    (:func:`posenc_spec.checks.expectation`, cached per size, convention and dtype) are
    computed once per group.
    """
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, GateSpec):
            raise TypeError(f"check_many takes GateSpec objects, got {type(spec).__name__}")
    order = sorted(range(len(specs)), key=lambda i: (specs[i].api, repr(specs[i].convention)))
    reports: list[GateReport | None] = [None] * len(specs)
    with run_worker() as worker:
        if specs and boot_in_background() is not None:
            _prepare_expectations(specs[order[0]])
        for index in order:
            reports[index] = _check_one(specs[index], worker, keep_table)
    return reports


def _prepare_expectations(spec: GateSpec, dtype: str = "float32") -> None:
    """Compute the expected tables of ``spec``'s grid for the most common output dtype while
    the worker process boots (they are cached; a target of another dtype gets its own)."""
    for probe in spec.probes():
        if probe.role == "odd" and spec.convention.odd == "error":
            continue
        degenerate = probe.width == 2 and spec.convention.freq_shift == 1
        try:
            checks.expectation(probe.positions, probe.width, spec.convention, dtype, degenerate)
        except ValueError:  # a width this convention does not define
            pass


def check_target(spec: GateSpec) -> GateReport:
    """The report on one target (see :class:`GateSpec` and :mod:`posenc_spec.gate.grid`)."""
    return check_many([spec])[0]
