"""Two recordings of the same calls, compared output by output in ULPs (:mod:`.ulp`).

A call passes when it raised the same exception type both times, or returned as many
outputs both times, each with the same dtype, shape and container, and every element within
``max_ulp`` of its old value (0 by default: bit for bit, except that the sign of a zero and
the payload of a NaN do not count). Anything else fails, and says what changed: a shape
or dtype (naming both), raising instead of returning (or the reverse, or another type),
the number of outputs, or the largest distance with its index and both values. Distances
are computed a block of elements at a time (:data:`CHUNK_ELEMENTS`); :func:`compare_files`
also reads the two files a block at a time, so that comparing snapshots at the cap takes a
few blocks of memory, not the arrays.

Two recordings can only be compared when they are of the same calls: the same labels, each
with bit-identical arguments. When they are not, :class:`SnapshotError` names the first
difference.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator
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
    return _outcome_diff(old.label, (old.raised, _arrays(old.outputs)), (new.raised, _arrays(new.outputs)), allowed)


def _outcome_diff(label: str, old: tuple, new: tuple, allowed: int) -> CallDiff:
    """A call's outcomes compared: each ``(raised, outputs)``, the outputs a list of :class:`_Array` or None."""

    def fail(problem: str) -> CallDiff:
        return CallDiff(label, False, allowed, problem=problem)

    (old_raised, old_outputs), (new_raised, new_outputs) = old, new
    if old_raised or new_raised:
        if old_raised == new_raised:
            return CallDiff(label, True, allowed, raised=old_raised)
        return fail(f"{_outcome(*old)} before, {_outcome(*new)} now")
    if len(old_outputs) != len(new_outputs):
        return fail(f"returned {len(old_outputs)} outputs before, {len(new_outputs)} now")
    outputs = tuple(_compare_output(i, before, after, allowed)
                    for i, (before, after) in enumerate(zip(old_outputs, new_outputs, strict=True)))
    return CallDiff(label, all(output.passed for output in outputs), allowed, outputs=outputs)


@dataclass(frozen=True)
class _Array:
    """An array as a comparison sees it: dtype, shape, container, and ``blocks()``, its
    elements flat in C order a block at a time (from memory, or read from a file)."""

    dtype: str
    shape: tuple
    container: str
    blocks: Callable[[], Iterator[np.ndarray]]

    @classmethod
    def of(cls, array: RecordedArray) -> _Array:
        flat = array.values.reshape(-1)
        return cls(array.dtype, array.values.shape, array.container,
                   lambda: (flat[start:start + CHUNK_ELEMENTS] for start in range(0, flat.size, CHUNK_ELEMENTS)))


def _arrays(values) -> list[_Array] | None:
    return None if values is None else [_Array.of(value) for value in values]


def _paired(first: Iterator[np.ndarray], second: Iterator[np.ndarray]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Two streams of blocks of the same number of elements as pairs of blocks of equal size;
    both streams are read to their end (where a file's reader checks what follows)."""
    left = right = None
    while True:
        if left is None or not left.size:
            left = next(first, None)
        if right is None or not right.size:
            right = next(second, None)
        if left is None or right is None:
            for _ in (second if left is None else first):
                pass
            return
        size = min(left.size, right.size)
        yield left[:size], right[:size]
        left, right = left[size:], right[size:]


def compare_snapshots(old: Snapshot, new: Snapshot, max_ulp: int = 0) -> list[CallDiff]:
    """Every call of ``old`` against the call of the same label in ``new``, in ``old``'s order."""
    _check_types(old, new, Snapshot)
    allowed = _check_max_ulp(max_ulp)
    new_calls = {call.label: call for call in new.calls}
    problem = _labels_difference([call.label for call in old.calls], list(new_calls))
    if problem:
        raise SnapshotError(f"cannot compare the snapshots: {problem}")
    for call in old.calls:
        difference = input_difference(call, new_calls[call.label])
        if difference:
            raise SnapshotError(f"cannot compare the snapshots: call {call.label!r}: {difference}")
    return [_compare_outputs(call, new_calls[call.label], allowed) for call in old.calls]


def compare_files(old_path, new_path, max_ulp: int = 0) -> tuple[dict, dict, list[CallDiff]]:
    """The metadata of the snapshot files ``old_path`` and ``new_path`` and
    ``compare_snapshots(old, new, max_ulp)`` of what they hold, reading each array a block at
    a time (memory stays a few blocks whatever the files hold). The files are read as
    :func:`.snapshot_reader.read_snapshot` reads them (``new`` recorded for ``old``'s API);
    a damaged file is refused before a difference of their calls is said."""
    from .snapshot_reader import opened_snapshot

    allowed = _check_max_ulp(max_ulp)
    with opened_snapshot(old_path) as old, opened_snapshot(new_path, expect_api=old.api) as new:
        new_calls = {call["label"]: call for call in new.calls}
        problem = _labels_difference([call["label"] for call in old.calls], list(new_calls))
        diffs = []
        for call in old.calls if problem is None else ():
            other = new_calls[call["label"]]
            difference = _arguments_difference([_argument(old, arg) for arg in call["args"]],
                                               [_argument(new, arg) for arg in other["args"]])
            if difference:
                problem = f"call {call['label']!r}: {difference}"
                break
            diffs.append(_outcome_diff(call["label"], _streamed_outcome(old, call), _streamed_outcome(new, other),
                                       allowed))
        old.check_hash()
        new.check_hash()
    if problem:
        raise SnapshotError(f"cannot compare the snapshots: {problem}")
    return old.meta, new.meta, diffs


def _argument(snapshot, arg: dict):
    if arg["kind"] == "float":
        return struct.unpack(">d", bytes.fromhex(arg["bits"]))[0]
    if arg["kind"] == "int":
        return arg["value"]
    return _streamed(snapshot, arg)


def _streamed(snapshot, ref: dict) -> _Array:
    return _Array(ref["dtype"], tuple(ref["shape"]), ref["container"], lambda: snapshot.blocks(ref))


def _streamed_outcome(snapshot, call: dict) -> tuple:
    outputs = call["outputs"]
    return call["raised"], None if outputs is None else [_streamed(snapshot, ref) for ref in outputs]


def _labels_difference(old: list[str], new: list[str]) -> str | None:
    """The first call of one recording that the other lacks, or None."""
    old_labels, new_labels = set(old), set(new)
    for label in old:
        if label not in new_labels:
            return f"call {label!r} is in the old one, not the new"
    for label in new:
        if label not in old_labels:
            return f"call {label!r} is in the new one, not the old"
    return None


def input_difference(old: RecordedCall, new: RecordedCall) -> str | None:
    """How the inputs of two recorded calls differ (label, then arguments bit by bit), or None."""
    if old.label != new.label:
        return f"labels {old.label!r} and {new.label!r} differ"
    return _arguments_difference(
        [_Array.of(value) if isinstance(value, RecordedArray) else value for value in old.args],
        [_Array.of(value) if isinstance(value, RecordedArray) else value for value in new.args])


def _arguments_difference(old: list, new: list) -> str | None:
    """How two calls' arguments (ints, floats, :class:`_Array`) differ bit by bit, or None."""
    if len(old) != len(new):
        return f"{len(old)} arguments in the old, {len(new)} in the new"
    for i, (before, after) in enumerate(zip(old, new, strict=True)):
        if type(before) is not type(after):
            return f"argument {i} is a {_kind(before)} in the old, a {_kind(after)} in the new"
        if isinstance(before, float) and struct.pack("<d", before) != struct.pack("<d", after):
            return f"argument {i} is {before!r} in the old, {after!r} in the new"
        if isinstance(before, int) and before != after:
            return f"argument {i} is {before} in the old, {after} in the new"
        if isinstance(before, _Array) and (difference := _array_difference(before, after)):
            return f"argument {i}: {difference}"
    return None


def _kind(value) -> str:
    return "RecordedArray" if isinstance(value, _Array) else type(value).__name__


def _array_difference(old: _Array, new: _Array) -> str | None:
    for what in ("dtype", "container", "shape"):
        if getattr(old, what) != getattr(new, what):
            return f"{what} {getattr(old, what)} in the old, {getattr(new, what)} in the new"
    start, found = 0, None
    for before, after in _paired(old.blocks(), new.blocks()):
        if found is None:
            width = before.dtype.itemsize
            differs = (before.view(np.uint8).reshape(-1, width) != after.view(np.uint8).reshape(-1, width)).any(axis=1)
            if differs.any():
                first = int(np.argmax(differs))
                found = (start + first, _element(before, first, old.dtype), _element(after, first, new.dtype))
        start += before.size
    if found is None:
        return None
    index = [int(i) for i in np.unravel_index(found[0], old.shape)]
    return f"element {index} is {found[1]!r} in the old, {found[2]!r} in the new"


def _compare_output(position: int, old: _Array, new: _Array, allowed: int) -> OutputDiff:
    for what, before, after in (("dtype", old.dtype, new.dtype), ("shape", old.shape, new.shape),
                                ("container", old.container, new.container)):
        if before != after:
            return OutputDiff(position, False, problem=f"output {position} changed {what} from {before} to {after}",
                              max_ulp=math.inf)
    size, histogram, worst, largest_distance = 0, dict.fromkeys(HISTOGRAM_LABELS, 0), None, None
    for before, after in _paired(old.blocks(), new.blocks()):  # a few MiB of distances at a time, whatever the size
        distances = ulp_distance(before, after, old.dtype)
        for label, count in ulp_histogram(distances).items():
            histogram[label] += count
        index = int(np.argmax(distances))
        if largest_distance is None or distances[index] > largest_distance:  # the first of the largest, as argmax
            largest_distance = distances[index]
            worst = (size + index, _element(before, index, old.dtype), _element(after, index, new.dtype))
        size += before.size
    num_changed = size - histogram["0"]
    if not num_changed:
        return OutputDiff(position, True, size=size, histogram=histogram)
    largest = math.inf if largest_distance == INFINITE_ULP else int(largest_distance)
    return OutputDiff(position, largest <= allowed, None, largest,
                      tuple(int(i) for i in np.unravel_index(worst[0], old.shape)),
                      worst[1], worst[2], num_changed, size, histogram)


def _element(values: np.ndarray, flat_index: int, dtype: str):
    """An element as a Python number: exact (bfloat16 widened from its bits to float32)."""
    value = values.reshape(-1)[flat_index]
    if dtype == "bfloat16":
        value = bfloat16_values(value)[()]
    return value.item()


def _outcome(raised: str | None, outputs: list | None) -> str:
    if raised:
        return f"raised {raised}"
    return f"returned {len(outputs)} output{'s' if len(outputs) != 1 else ''}"


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
