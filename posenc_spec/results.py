"""What every family's checks return: one :class:`CheckResult` per check, with the
:class:`Worst` element a numeric check judged, and the judgements every family shares
(finite values; a measured quantity against its exact value within a derived bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .tolerance import compare, compare_blocks

# ``noted``: the check found something only on inputs no use of the target produces (a value
# that is never the difference of two positions, a size beyond what the gate may allocate):
# said in the report, never a failure, unless the declaration is ``strict``.
STATUSES = ("passed", "failed", "skipped", "xfailed", "xpassed", "noted")


@dataclass(frozen=True)
class Worst:
    """The element a check judged worst: its ``index`` in an array of ``shape`` (a table,
    or the rows x pairs a derived check measures), the ``actual`` and ``expected`` values,
    their ``error`` and the ``tolerance`` of that same element."""

    index: tuple
    shape: tuple
    actual: float
    expected: float
    error: float
    tolerance: float

    @property
    def ratio(self) -> float:
        if self.error == 0:
            return 0.0
        return float("inf") if self.tolerance == 0 else self.error / self.tolerance

    def as_dict(self) -> dict:
        return {"index": list(self.index), "size": list(self.shape), "actual": self.actual,
                "expected": self.expected, "error": self.error, "tolerance": self.tolerance, "ratio": self.ratio}


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict: ``status`` is one of :data:`STATUSES`; ``worst`` the element a
    failed (or passed) numeric check judged worst, when it has one; ``details`` what a
    check reports beyond one element (the regression check: one entry per recorded call)."""

    name: str
    status: str
    message: str
    worst: Worst | None = None
    details: tuple = ()

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def result(name, passed, message, worst: Worst | None = None) -> CheckResult:
    return CheckResult(name, "passed" if passed else "failed", message, worst)


def skipped(name, reason) -> CheckResult:
    return CheckResult(name, "skipped", reason)


def noted(name, message, worst: Worst | None = None) -> CheckResult:
    """A finding outside what the declaration promises (see :data:`STATUSES`): ``message``
    says the input, what the target gave and what belongs there."""
    return CheckResult(name, "noted", message, worst)


def comparison_worst(result) -> Worst | None:
    """The :class:`Worst` of a :class:`~posenc_spec.tolerance.Comparison`."""
    if result.size == 0:
        return None
    return Worst(result.worst_index, result.shape, result.worst_actual, result.worst_expected,
                 result.worst_error, result.worst_tolerance)


def real(table) -> np.ndarray:
    """``table`` as an array of real floats: float16 and float32 as they are (every check that
    only reads or orders values reads them exactly so), anything else as float64."""
    table = np.asarray(table)
    return table if table.dtype in (np.float16, np.float32, np.float64) else np.asarray(table, dtype=np.float64)


def check_finite(table, name="finite") -> CheckResult:
    table = real(table)
    # NaN propagates through max and min, and an Inf is one of them: two passes and no mask
    # over a table that holds neither, the common case.
    if table.size and not (np.isfinite(table.max()) and np.isfinite(table.min())):
        bad = ~np.isfinite(table)
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return result(name, False, f"{int(bad.sum())} NaN or Inf values in the {'x'.join(map(str, table.shape))} "
                                    f"table, first at {list(where)}: {table[where]}")
    return result(name, True, f"all {table.size} values finite")


def deviation_result(name, measured, exact, bound, what) -> CheckResult:
    """Judge ``|measured - exact|`` against ``bound``, element by element, as
    :func:`posenc_spec.tolerance.compare` judges a table."""
    measured = np.asarray(measured, dtype=np.float64)
    if measured.size == 0:
        return skipped(name, f"{what}: nothing to measure")
    outcome = compare(measured, np.broadcast_to(np.asarray(exact, dtype=np.float64), measured.shape), bound)
    return _deviation(name, outcome, what)


def deviation_result_blocks(name, blocks, shape, what) -> CheckResult:
    """:func:`deviation_result` of deviations of ``shape`` measured a block of rows at a time:
    ``blocks`` yields ``(measured, exact, bound)`` of consecutive rows, in order
    (:func:`posenc_spec.tolerance.compare_blocks`)."""
    if math.prod(shape) == 0:
        return skipped(name, f"{what}: nothing to measure")
    return _deviation(name, compare_blocks(blocks, shape), what)


def _deviation(name, outcome, what) -> CheckResult:
    element = comparison_worst(outcome)
    message = (f"{what}: max {element.error:.3g} vs bound {element.tolerance:.3g}"
               + ("" if outcome.ok else f" at {list(element.index)} ({outcome.num_failing} out of bound)"))
    return result(name, outcome.ok, message, element)
