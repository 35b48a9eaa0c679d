"""The verdict on one target: every check of its plan with its final status.

:func:`finish` turns the judged results into a :class:`GateReport`: the xfails entries
turn failures into ``xfailed`` (and passes into ``xpassed``, with a warning that the
known deviation is gone), and a check that could not run because of an excused failure is
excused with it; under ``strict`` a ``noted`` check fails (before the xfails apply, so an
entry can excuse it). Nothing here reads files or prints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from posenc_spec.results import STATUSES, CheckResult

from .declaration import Declaration

STATUS_CONFORMS, STATUS_FAILS, STATUS_ERROR = "conforms", "does-not-conform", "error"


@dataclass(frozen=True, eq=False)
class KeptTable:
    """A table the target returned, kept for pictures of a report that does not conform:
    the probe's ``slot``, the ``positions`` the expected table is computed at (a length or
    the timesteps passed), the ``table`` as produced and ``dtype``, the name its tolerance
    follows."""

    slot: str
    positions: int | np.ndarray
    table: np.ndarray
    dtype: str


@dataclass
class GateReport:
    """The verdict on one target. ``checks`` holds every id of the plan in order;
    ``importable`` is False when the target did not import (exit status 2); ``warnings``
    are said in the report and change nothing; ``kept`` is a table for pictures (only
    when asked for, and only when the target does not conform)."""

    declaration: Declaration
    checks: list[CheckResult]
    importable: bool = True
    warnings: list[str] = field(default_factory=list)
    kept: KeptTable | None = None
    seconds: float = 0.0
    where: tuple | None = None  # (file, line) of the target's function, as its child reported it
    advice: list = field(default_factory=list)  # one cause said once, with its likely fix
    nearest: dict | None = None  # the member of the family the target computes, when a formula check failed
    hints: list = field(default_factory=list)  # the slips its tables show (posenc_spec.gate.identify.hint.Hint)

    @property
    def target(self) -> str:
        return self.declaration.target

    @property
    def conforms(self) -> bool:
        return self.importable and not self.failures()

    @property
    def status(self) -> str:
        if not self.importable:
            return STATUS_ERROR
        return STATUS_CONFORMS if self.conforms else STATUS_FAILS

    def failures(self) -> list[CheckResult]:
        return [check for check in self.checks if check.status == "failed"]

    def result(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check {name!r} in the report on {self.target}")

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for check in self.checks:
            counts[check.status] += 1
        return counts


def finish(declaration: Declaration, plan: list[str], by_id: dict, causes: dict, importable: bool,
           warnings=(), kept: KeptTable | None = None) -> GateReport:
    """The report: the plan's checks in order, with the xfails applied."""
    xfails = declaration.xfails
    checks, notes = [], list(warnings)
    unmatched = xfails.unmatched_warning(plan)  # first: its one pass over the entries answers each match below
    for name in plan:
        check = by_id[name]
        if check.status == "noted" and declaration.strict:
            check = dataclasses.replace(check, status="failed", message=f"strict: {check.message}")
        entry = xfails.match(name) or (xfails.match(causes[name]) if name in causes else None)
        if entry is not None and check.status in ("failed", "skipped") and (check.status == "failed"
                                                                             or name in causes):
            reason = f" ({entry.reason})" if entry.reason else ""
            check = dataclasses.replace(check, status="xfailed", message=f"known deviation{reason}: {check.message}")
        elif entry is not None and check.status == "noted" and xfails.match(name) is entry:
            notes.append(f"{xfails.path}, line {entry.line}: {entry.pattern!r} names {name}, a note, not a failure "
                         "(strict makes it one): the entry is needed only under strict")
        elif entry is not None and check.status == "passed" and xfails.match(name) is entry:
            check = dataclasses.replace(check, status="xpassed")
            notes.append(f"{xfails.path}, line {entry.line}: {entry.pattern!r} passed at {name}: the known deviation "
                         "is gone, remove the entry")
        checks.append(check)
    if unmatched is not None:
        notes.append(unmatched)
    report = GateReport(declaration, checks, importable, notes)
    if not report.conforms:
        report.kept = kept
    return report
