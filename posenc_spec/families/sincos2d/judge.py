"""Judge what a 2-D sincos target returned: one :class:`~posenc_spec.results.CheckResult` per check id.

A table call (:class:`~.calls.Call`, role ``table``) gives ``call[S]`` (the call returned one
array of real numbers), then the properties of :mod:`.properties` in :data:`~.calls.CHECK_NAMES`'
order; after a failed ``call``, ``finite`` or ``shape`` the checks that read the table are not
run, naming the check that stopped them. A call of a width with no value (role ``refuse``)
must raise: ``indivisible[d=D]`` (not a multiple of 4); ``undefined[d=4]`` under
``freq_shift = 1`` (``k / (D/4 - 1)`` is 0/0) also accepts a finite table equal to the
limit omega = 1, and fails a NaN.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from posenc_spec.caching import BoundedCache
from posenc_spec.gate.calls import shape_text
from posenc_spec.gate.judge import failed, passed
from posenc_spec.results import check_finite, skipped

from . import properties
from .conventions import Sincos2d
from .grid import CHECK_NAMES

# The checks after call, finite and shape, by name (the properties module's functions).
_READING = {name: check for name, check in properties.CHECKS if name not in ("finite", "shape")}


# The expectations of the grid's calls, bounded by their bytes: a convention's ~28 calls in one
# dtype hold about 10 MiB, so a run of targets of a dozen conventions keeps them all, where a
# count of entries (a least-recently-used 96) is emptied by each target before the next
# target of the convention asks again.
_EXPECTATIONS = BoundedCache(1 << 28)


def expectation(height: int, width: int, dim: int, conv: Sincos2d, dtype: str) -> properties.Expectation2d:
    """The expected grid and bounds of one call in one dtype (shared by every target of the convention)."""
    def make():
        exp = properties.expectation(height, width, dim, conv, dtype)
        return exp, exp.grid.nbytes + exp.tolerance.nbytes

    return _EXPECTATIONS.get((height, width, dim, conv, dtype), make)


def table_problem(outcome) -> str | None:
    """Why an outcome is not one table (None when it is)."""
    if not outcome.ok:
        return outcome.message
    if outcome.is_tuple or len(outcome.arrays) != 1:
        return f"returned a tuple of {len(outcome.arrays)} arrays, not one table"
    return None


class Sincos2dJudge:
    """The checks of one target, call after call (:class:`~posenc_spec.gate.family.FamilyJudge`);
    ``tables`` keeps each table call's ``(call, table, dtype)`` for the nearest member and hints."""

    def __init__(self, conv: Sincos2d, results):
        self.conv, self.results = conv, results
        self.tables: dict[str, tuple] = {}

    def judge(self, probe, outcome) -> bool:
        if probe.role == "refuse":
            self.results.add(judge_refusal(probe, outcome, self.conv))
            return False
        return self._table(probe, outcome)

    def kept_table(self):
        return None

    def _table(self, probe, outcome) -> bool:
        results = self.results
        names = [f"{name}[{probe.slot}]" for name in CHECK_NAMES]
        call_id = names[0]
        if outcome.status == "not-run":
            results.add(skipped(call_id, outcome.message))
            results.not_run(names[1:], call_id, f"the call for {probe.size} was not made")
            return False
        problem = table_problem(outcome)
        if problem:
            results.add(failed(call_id, f"{probe.size}: {problem}"))
            results.not_run(names[1:], call_id, f"the call for {probe.size} did not return a table")
            return False
        table = outcome.table
        results.add(passed(call_id, f"returned {shape_text(table.shape)} {outcome.message}"))
        finite = check_finite(table, names[1])
        results.add(finite)
        if not finite.passed:
            results.not_run(names[2:], names[1], f"the {probe.size} table holds NaN or Inf")
            return True
        exp = expectation(probe.height, probe.width, probe.dim, self.conv, outcome.dtype)
        shape = properties.check_shape(table, exp, names[2])
        results.add(shape)
        if not shape.passed:
            results.not_run(names[3:], names[2], f"the {probe.size} table does not have the declared shape")
            return True
        self.tables[probe.slot] = (probe, table, outcome.dtype)
        for name, check_id in zip(CHECK_NAMES[3:], names[3:], strict=True):
            results.add(_READING[name](table, exp, check_id))
        return True


def judge_refusal(probe, outcome, conv: Sincos2d):
    """A width with no value (see the module docstring)."""
    check_id = probe.check_id
    if outcome.status == "not-run":
        return skipped(check_id, outcome.message)
    if outcome.status == "raised":
        why = "not a multiple of 4" if probe.dim % 4 else "under freq_shift 1, k / (D/4 - 1) is 0/0"
        return passed(check_id, f"{outcome.message} (fine: width {probe.dim} has no value, {why})")
    if not outcome.ok:
        return failed(check_id, f"{probe.size}: {outcome.message} (width {probe.dim} has no value: raise)")
    problem = table_problem(outcome)
    if problem:
        return failed(check_id, f"{probe.size}: {problem}")
    if probe.dim % 4:
        return failed(check_id, f"{probe.size}: returned {shape_text(outcome.table.shape)} {outcome.dtype} for "
                                f"width {probe.dim}, which has no value (each axis takes D/2 columns of D/4 "
                                "sin/cos pairs): raise")
    table = outcome.table
    if np.isnan(table).any():
        return failed(check_id, f"{probe.size}: silent NaN: {int(np.isnan(table).sum())} NaN values (under "
                                "freq_shift 1, width 4 has no value: raise, or use the limit omega = 1)")
    limit = conv.replace(freq_shift=0)  # D = 4: one pair per axis, omega_0 = 1 (tensor2tensor's max(n - 1, 1))
    exp = expectation(probe.height, probe.width, probe.dim, limit, outcome.dtype)
    for check in (properties.check_shape, properties.check_formula):
        result = check(table, exp, check_id)
        if not result.passed:
            return dataclasses.replace(result, message=f"against the limit omega = 1: {result.message}")
    return dataclasses.replace(result, message=f"against the limit omega = 1: {result.message}")
