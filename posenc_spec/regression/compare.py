"""Two recordings of the same calls, compared output by output in ULPs (:mod:`.ulp`).

A call passes when it raised the same exception type both times, or returned as many
outputs both times, each with the same dtype, shape and container, and every element within
``max_ulp`` of its old value (0 by default: bit for bit, except that the sign of a zero and
the payload of a NaN do not count). Anything else fails, and says what changed: a shape
or dtype (naming both), raising instead of returning (or the reverse, or another type),
the number of outputs, or the largest distance with its index and both values. Distances
are computed a block of elements at a time (:data:`CHUNK_ELEMENTS`), so that comparing
outputs at the snapshot's cap takes little memory beyond the outputs themselves.

Two recordings can only be compared when they are of the same calls: the same labels, each
with bit-identical arguments. When they are not, :class:`SnapshotError` names the first
difference.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np

from .records import RecordedArray, RecordedCall, Snapshot, SnapshotError
from .ulp import HISTOGRAM_BUCKETS, INFINITE_ULP, bfloat16_values, ulp_distance, ulp_histogram

CHUNK_ELEMENTS = 1 << 20  # distances computed at a time: 8 MiB of uint64, not 8 bytes per element of the output
HISTOGRAM_LABELS = tuple(label for label, _ in HISTOGRAM_BUCKETS)


@dataclass(frozen=True)
class OutputDiff:
    """One output of a call: ``problem`` when its dtype, shape or container changed (and
    ``max_ulp`` is ``math.inf``: no number of ULPs covers it), else the distances: the
    largest (``math.inf`` for an infinite one), where, both values there, how many elements
    changed and the histogram (bucket label -> count)."""

    position: int
    passed: bool
    problem: str | None = None
    max_ulp: int | float = 0
    worst_index: tuple | None = None
    old_value: float | complex | int | None = None
    new_value: float | complex | int | None = None
    num_changed: int = 0
    size: int = 0
    histogram: dict = field(default_factory=dict)

    def describe(self) -> str:
        if self.problem:
            return self.problem
        if not self.num_changed:
            return f"0 ULP over {self.size} elements"
        where = ", ".join(str(i) for i in self.worst_index)
        buckets = ", ".join(f"{label}: {count}" for label, count in self.histogram.items() if count and label != "0")
        return (f"max {'inf' if self.max_ulp == math.inf else self.max_ulp} ULP at [{where}]: "
                f"old {self.old_value!r}, new {self.new_value!r}; {self.num_changed} of {self.size} elements "
                f"changed (ULPs {buckets})")

    def as_dict(self) -> dict:
        return {"output": self.position, "passed": self.passed, "problem": self.problem,
                "max_ulp": _json_number(self.max_ulp),
                "worst_index": None if self.worst_index is None else list(self.worst_index),
                "old_value": _json_number(self.old_value), "new_value": _json_number(self.new_value),
                "changed": self.num_changed, "size": self.size, "histogram": dict(self.histogram)}


@dataclass(frozen=True)
class CallDiff:
    """One call of the grid compared: ``problem`` for a call-level change (raising, the number
    of outputs), else one :class:`OutputDiff` per output. ``bound_ratio``, when the call was
    judged within a convention's tolerance rather than ``max_ulp_allowed``: the largest
    distance over the bound that applied (<= 1 passes)."""

    label: str
    passed: bool
    max_ulp_allowed: int
    problem: str | None = None
    outputs: tuple[OutputDiff, ...] = ()
    raised: str | None = None
    bound_ratio: float | None = None

    @property
    def max_ulp(self) -> int | float:
        """The largest distance over the outputs (``math.inf`` for a call-level change)."""
        if self.problem:
            return math.inf
        return max((output.max_ulp for output in self.outputs), default=0)

    def describe(self) -> str:
        """One line for the text report."""
        verdict = "passed" if self.passed else "FAILED"
        if self.problem:
            detail = self.problem
        elif self.raised:
            detail = f"raised {self.raised} both times"
        elif not self.outputs:
            detail = "no outputs both times"
        elif len(self.outputs) == 1:
            detail = self.outputs[0].describe()
        else:
            detail = "; ".join(f"output {output.position}: {output.describe()}" for output in self.outputs)
        rule = (f"max_ulp {self.max_ulp_allowed}" if self.bound_ratio is None
                else f"distance/tolerance {self.bound_ratio:.3g}")
        return f"{self.label}: {verdict} ({rule}): {detail}"

    def as_dict(self) -> dict:
        """For a JSON report: finite numbers only; an infinite distance or a non-finite value is
        the string ``"inf"``, ``"-inf"`` or ``"nan"``, a complex value a pair [real, imaginary]."""
        return {"label": self.label, "passed": self.passed, "max_ulp_allowed": self.max_ulp_allowed,
                "problem": self.problem, "raised": self.raised,
                "max_ulp": _json_number(self.max_ulp), "outputs": [output.as_dict() for output in self.outputs],
                "bound_ratio": _json_number(self.bound_ratio)}


def _json_number(value):
    if isinstance(value, complex):
        return [_json_number(value.real), _json_number(value.imag)]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def compare_call(old: RecordedCall, new: RecordedCall, max_ulp: int = 0) -> CallDiff:
    """``new`` against ``old``, two recordings of the same call (same label, bit-identical args)."""
    _check_types(old, new, RecordedCall)
    allowed = _check_max_ulp(max_ulp)
    difference = input_difference(old, new)
    if difference:
        raise SnapshotError(f"cannot compare call {old.label!r}: {difference}")
    return _compare_outputs(old, new, allowed)


def _compare_outputs(old: RecordedCall, new: RecordedCall, allowed: int) -> CallDiff:
    """:func:`compare_call` once the inputs are known to be the same."""

    def fail(problem: str) -> CallDiff:
        return CallDiff(old.label, False, allowed, problem=problem)

    if old.raised or new.raised:
        if old.raised == new.raised:
            return CallDiff(old.label, True, allowed, raised=old.raised)
        return fail(f"{_outcome(old)} before, {_outcome(new)} now")
    if len(old.outputs) != len(new.outputs):
        return fail(f"returned {len(old.outputs)} outputs before, {len(new.outputs)} now")
    outputs = tuple(_compare_output(i, before, after, allowed)
                    for i, (before, after) in enumerate(zip(old.outputs, new.outputs, strict=True)))
    return CallDiff(old.label, all(output.passed for output in outputs), allowed, outputs=outputs)


def compare_snapshots(old: Snapshot, new: Snapshot, max_ulp: int = 0) -> list[CallDiff]:
    """Every call of ``old`` against the call of the same label in ``new``, in ``old``'s order."""
    _check_types(old, new, Snapshot)
    allowed = _check_max_ulp(max_ulp)
    new_calls = {call.label: call for call in new.calls}
    old_labels = {call.label for call in old.calls}
    for call in old.calls:
        if call.label not in new_calls:
            raise SnapshotError(f"cannot compare the snapshots: call {call.label!r} is in the old one, not the new")
    for call in new.calls:
        if call.label not in old_labels:
            raise SnapshotError(f"cannot compare the snapshots: call {call.label!r} is in the new one, not the old")
    for call in old.calls:
        difference = input_difference(call, new_calls[call.label])
        if difference:
            raise SnapshotError(f"cannot compare the snapshots: call {call.label!r}: {difference}")
    return [_compare_outputs(call, new_calls[call.label], allowed) for call in old.calls]


def input_difference(old: RecordedCall, new: RecordedCall) -> str | None:
    """How the inputs of two recorded calls differ (label, then arguments bit by bit), or None."""
    if old.label != new.label:
        return f"labels {old.label!r} and {new.label!r} differ"
    if len(old.args) != len(new.args):
        return f"{len(old.args)} arguments in the old, {len(new.args)} in the new"
    for i, (before, after) in enumerate(zip(old.args, new.args, strict=True)):
        if type(before) is not type(after):
            return f"argument {i} is a {type(before).__name__} in the old, a {type(after).__name__} in the new"
        if isinstance(before, float) and struct.pack("<d", before) != struct.pack("<d", after):
            return f"argument {i} is {before!r} in the old, {after!r} in the new"
        if isinstance(before, int) and before != after:
            return f"argument {i} is {before} in the old, {after} in the new"
        if isinstance(before, RecordedArray) and before != after:
            return f"argument {i}: {_array_difference(before, after)}"
    return None


def _array_difference(old: RecordedArray, new: RecordedArray) -> str:
    for what in ("dtype", "container"):
        if getattr(old, what) != getattr(new, what):
            return f"{what} {getattr(old, what)} in the old, {getattr(new, what)} in the new"
    if old.values.shape != new.values.shape:
        return f"shape {old.values.shape} in the old, {new.values.shape} in the new"
    width = old.values.dtype.itemsize
    old_bytes = np.ascontiguousarray(old.values).reshape(-1).view(np.uint8).reshape(-1, width)
    new_bytes = np.ascontiguousarray(new.values).reshape(-1).view(np.uint8).reshape(-1, width)
    first = int(np.flatnonzero((old_bytes != new_bytes).any(axis=1))[0])
    index = [int(i) for i in np.unravel_index(first, old.values.shape)]
    return f"element {index} is {_value(old, first)!r} in the old, {_value(new, first)!r} in the new"


def _compare_output(position: int, old: RecordedArray, new: RecordedArray, allowed: int) -> OutputDiff:
    for what, before, after in (("dtype", old.dtype, new.dtype), ("shape", old.values.shape, new.values.shape),
                                ("container", old.container, new.container)):
        if before != after:
            return OutputDiff(position, False, problem=f"output {position} changed {what} from {before} to {after}",
                              max_ulp=math.inf)
    size, histogram, worst, largest_distance = old.values.size, dict.fromkeys(HISTOGRAM_LABELS, 0), 0, None
    old_flat, new_flat = old.values.reshape(-1), new.values.reshape(-1)
    for start in range(0, size, CHUNK_ELEMENTS):  # a few MiB of distances at a time, whatever the size
        distances = ulp_distance(old_flat[start:start + CHUNK_ELEMENTS], new_flat[start:start + CHUNK_ELEMENTS],
                                 old.dtype)
        for label, count in ulp_histogram(distances).items():
            histogram[label] += count
        index = int(np.argmax(distances))
        if largest_distance is None or distances[index] > largest_distance:  # the first of the largest, as argmax
            worst, largest_distance = start + index, distances[index]
    num_changed = size - histogram["0"]
    if not num_changed:
        return OutputDiff(position, True, size=size, histogram=histogram)
    largest = math.inf if largest_distance == INFINITE_ULP else int(largest_distance)
    return OutputDiff(position, largest <= allowed, None, largest,
                      tuple(int(i) for i in np.unravel_index(worst, old.values.shape)),
                      _value(old, worst), _value(new, worst), num_changed, size, histogram)


def _value(array: RecordedArray, flat_index: int):
    """The element as a Python number: exact (bfloat16 widened from its bits to float32)."""
    value = array.values.reshape(-1)[flat_index]
    if array.dtype == "bfloat16":
        value = bfloat16_values(value)[()]
    return value.item()


def _outcome(call: RecordedCall) -> str:
    if call.raised:
        return f"raised {call.raised}"
    return f"returned {len(call.outputs)} output{'s' if len(call.outputs) != 1 else ''}"


def _check_types(old, new, kind) -> None:
    for name, value in (("old", old), ("new", new)):
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def _check_max_ulp(max_ulp) -> int:
    if isinstance(max_ulp, bool) or not isinstance(max_ulp, (int, np.integer)):
        raise TypeError(f"max_ulp must be an int, got {max_ulp!r} ({type(max_ulp).__name__})")
    if max_ulp < 0:
        raise ValueError(f"max_ulp must be >= 0, got {max_ulp}")
    return int(max_ulp)
