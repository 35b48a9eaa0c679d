"""Comparing recordings: the verdict, the worst element, and each kind of change named."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from posenc_spec.regression import (
    RecordedArray,
    RecordedCall,
    Snapshot,
    SnapshotError,
    compare_call,
    compare_snapshots,
    read_snapshot,
    snapshot_meta,
    write_snapshot,
)
from posenc_spec.regression.ulp import HISTOGRAM_BUCKETS

SHAPE = (30, 16)


def _table(dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(20240229).uniform(-1, 1, SHAPE).astype(dtype)


def _call(*outputs: np.ndarray, label="30x16", args=(30, 16), raised=None, container="numpy") -> RecordedCall:
    recorded = None if raised else tuple(RecordedArray(values, values.dtype.name, container) for values in outputs)
    return RecordedCall(label, args, recorded, raised)


def _snapshot(*calls: RecordedCall) -> Snapshot:
    return Snapshot(snapshot_meta("pkg.mod:fn", "table"), calls)


def _one_line(diff) -> str:
    text = diff.describe()
    assert "\n" not in text and text.startswith(diff.label), text
    return text


def test_identical_recordings_are_zero_ulp_apart():
    """Two recordings of the same values (separate copies) pass at 0 ULP with nothing changed."""
    [diff] = compare_snapshots(_snapshot(_call(_table())), _snapshot(_call(_table())))
    [output] = diff.outputs
    assert diff.passed and diff.max_ulp == 0 and output.num_changed == 0 and output.worst_index is None
    assert output.histogram == {label: (output.size if label == "0" else 0) for label, _ in HISTOGRAM_BUCKETS}
    assert "passed" in _one_line(diff) and f"0 ULP over {np.prod(SHAPE)} elements" in diff.describe()


def test_one_ulp_fails_bit_for_bit_and_passes_at_one():
    """A value moved to the next float32 is 1 ULP away: a failure at max_ulp 0, a pass at 1."""
    old = _table()
    new = old.copy()
    new[7, 3] = np.nextafter(old[7, 3], np.float32(np.inf))
    strict, lenient = compare_call(_call(old), _call(new)), compare_call(_call(old), _call(new), max_ulp=1)
    [output] = strict.outputs
    assert not strict.passed and lenient.passed and strict.max_ulp == lenient.max_ulp == 1
    assert output.worst_index == (7, 3) and output.num_changed == 1 and output.histogram["1"] == 1
    assert (output.old_value, output.new_value) == (float(old[7, 3]), float(new[7, 3]))
    assert "FAILED (max_ulp 0): max 1 ULP at [7, 3]" in _one_line(strict)


def test_a_large_change_names_the_worst_element_and_both_values():
    """Among small changes, a 1e-3 one is the worst: its index and old and new values are reported."""
    old = _table()
    new = old.copy()
    for index in [(0, 0), (12, 9), (29, 15)]:
        new[index] = np.nextafter(old[index], np.float32(2))
    new[21, 5] = old[21, 5] + np.float32(1e-3)
    [output] = compare_call(_call(old), _call(new), max_ulp=4).outputs
    assert not output.passed and output.worst_index == (21, 5) and output.num_changed == 4
    assert (output.old_value, output.new_value) == (float(old[21, 5]), float(new[21, 5]))
    assert output.max_ulp > 256 and output.histogram[">256"] == 1 and output.histogram["1"] == 3
    assert f"old {float(old[21, 5])!r}, new {float(new[21, 5])!r}" in output.describe()


def test_sign_of_zero_and_nan_payloads_do_not_count():
    """-0.0 for 0.0, and a NaN with another sign and payload, leave the recording unchanged."""
    old = _table()
    old[0, :2] = [0.0, np.nan]
    new = old.copy()
    new[0, 0] = -0.0
    new.view(np.uint32)[0, 1] |= 0x80000001  # the NaN with another sign and payload
    diff = compare_call(_call(old), _call(new))
    assert diff.passed and diff.outputs[0].num_changed == 0


def test_inf_against_a_finite_value_is_infinitely_far():
    """No max_ulp lets an infinity through; the JSON report stays strict JSON."""
    old = _table()
    new = old.copy()
    new[4, 4] = np.inf
    diff = compare_call(_call(old), _call(new), max_ulp=2**62)
    assert not diff.passed and diff.max_ulp == math.inf and "max inf ULP at [4, 4]" in _one_line(diff)
    report = json.loads(json.dumps(diff.as_dict(), allow_nan=False))
    assert report["max_ulp"] == "inf" and report["outputs"][0]["new_value"] == "inf"
    assert report["outputs"][0]["old_value"] == float(old[4, 4])


@pytest.mark.parametrize(("new", "container", "message"), [
    (_table()[:, :15], "numpy", "output 0 changed shape from (30, 16) to (30, 15)"),
    (_table(np.float64), "numpy", "output 0 changed dtype from float32 to float64"),
    (_table(), "torch", "output 0 changed container from numpy to torch"),
])
def test_shape_dtype_and_container_changes_are_named(new, container, message):
    """Each fails whatever max_ulp allows, and the line names the old and the new."""
    diff = compare_call(_call(_table()), _call(new, container=container), max_ulp=1000)
    assert not diff.passed and diff.max_ulp == math.inf and diff.outputs[0].problem == message
    assert message in _one_line(diff)


@pytest.mark.parametrize(("old", "new", "message"), [
    (_call(_table()), _call(raised="ValueError"), "returned 1 output before, raised ValueError now"),
    (_call(raised="ValueError"), _call(_table()), "raised ValueError before, returned 1 output now"),
    (_call(raised="ValueError"), _call(raised="TypeError"), "raised ValueError before, raised TypeError now"),
    (_call(_table()), _call(_table(), _table()), "returned 1 outputs before, 2 now"),
])
def test_raising_and_output_counts_are_named(old, new, message):
    """Raising instead of returning, the reverse, another exception type, another number of outputs."""
    diff = compare_call(old, new)
    assert not diff.passed and diff.problem == message and message in _one_line(diff)
    assert json.loads(json.dumps(diff.as_dict(), allow_nan=False))["problem"] == message


def test_raising_the_same_type_both_times_passes():
    """A call that raised the same exception type again (an odd width refused twice) passes."""
    diff = compare_call(_call(raised="ValueError"), _call(raised="ValueError"))
    assert diff.passed and "raised ValueError both times" in _one_line(diff)


def test_bfloat16_and_several_outputs():
    """bfloat16 outputs (as bits) are compared in bfloat16 ULPs and reported as their float values;
    with two outputs each is described."""
    old_tensor = torch.linspace(-1, 1, 8, dtype=torch.bfloat16)
    new_tensor = old_tensor.clone()
    new_tensor[2] = torch.nextafter(old_tensor[2], torch.tensor(2.0, dtype=torch.bfloat16))
    old = RecordedCall("steps", (8,), (RecordedArray.of(old_tensor), RecordedArray(_table(), "float32")))
    new = RecordedCall("steps", (8,), (RecordedArray.of(new_tensor), RecordedArray(_table(), "float32")))
    diff = compare_call(old, new)
    first, second = diff.outputs
    assert not diff.passed and first.max_ulp == 1 and second.passed
    assert (first.old_value, first.new_value) == (float(old_tensor[2]), float(new_tensor[2]))
    assert "output 0: max 1 ULP at [2]" in _one_line(diff) and "output 1: 0 ULP" in diff.describe()


def test_complex_values_are_reported_as_pairs():
    """The JSON report gives a complex value as [real, imaginary]: JSON has no complex numbers."""
    old = np.array([1 + 2j, 3 - 1j], np.complex64)
    new = old.copy()
    new[1] = complex(3, np.nextafter(np.float32(-1), np.float32(0)))
    report = compare_call(_call(old), _call(new)).as_dict()["outputs"][0]
    assert report["max_ulp"] == 1 and report["old_value"] == [3.0, -1.0] and report["worst_index"] == [1]


@pytest.mark.parametrize(("new_calls", "message"), [
    ((_call(_table(), label="other"),), "call '30x16' is in the old one, not the new"),
    ((_call(_table()), _call(_table(), label="extra")), "call 'extra' is in the new one, not the old"),
    ((_call(_table(), args=(30, 17)),), "call '30x16': argument 1 is 16 in the old, 17 in the new"),
    ((_call(_table(), args=(30, 16.0)),), "argument 1 is a int in the old, a float in the new"),
    ((_call(_table(), args=(30,)),), "2 arguments in the old, 1 in the new"),
])
def test_snapshots_of_other_calls_cannot_be_compared(new_calls, message):
    """Other labels or other arguments: a SnapshotError naming the first difference."""
    with pytest.raises(SnapshotError, match=message):
        compare_snapshots(_snapshot(_call(_table())), _snapshot(*new_calls))


def test_arguments_must_be_bit_identical():
    """-0.0 is not 0.0 as an input, and an input array names its first differing element."""
    with pytest.raises(SnapshotError, match=r"argument 0 is 0.0 in the old, -0.0 in the new"):
        compare_call(_call(_table(), args=(0.0,)), _call(_table(), args=(-0.0,)))
    steps = np.arange(10, dtype=np.float32)
    moved = steps.copy()
    moved[6] = np.nextafter(steps[6], np.float32(0))
    old_call = _call(_table(), args=(RecordedArray(steps, "float32"), 16))
    with pytest.raises(SnapshotError, match=rf"argument 0: element \[6\] is 6.0 in the old, {float(moved[6])!r} in"):
        compare_call(old_call, _call(_table(), args=(RecordedArray(moved, "float32"), 16)))


def test_results_follow_the_old_snapshots_order():
    """Calls are matched by label; the results come in the old snapshot's order."""
    old = _snapshot(_call(_table(), label="a"), _call(raised="ValueError", label="b"))
    new = _snapshot(_call(raised="ValueError", label="b"), _call(_table(), label="a"))
    assert [diff.label for diff in compare_snapshots(old, new)] == ["a", "b"]


def test_snapshots_compare_the_same_after_a_round_trip(tmp_path):
    """``diff OLD NEW`` on files: what was written compares as the recordings did."""
    old_table = _table()
    new_table = old_table.copy()
    new_table[2, 2] = np.nextafter(old_table[2, 2], np.float32(-2))
    old = write_snapshot(tmp_path / "old.npz", _snapshot(_call(old_table), _call(raised="ValueError", label="7")))
    new = write_snapshot(tmp_path / "new.npz", _snapshot(_call(new_table), _call(raised="ValueError", label="7")))
    diffs = compare_snapshots(read_snapshot(old), read_snapshot(new))
    assert [(diff.passed, diff.max_ulp) for diff in diffs] == [(False, 1), (True, 0)]


@pytest.mark.parametrize(("max_ulp", "error", "message"), [
    (-1, ValueError, "max_ulp must be >= 0, got -1"),
    (0.5, TypeError, r"max_ulp must be an int, got 0.5 \(float\)"),
    (True, TypeError, "max_ulp must be an int, got True"),
])
def test_bad_max_ulp_is_named(max_ulp, error, message):
    """max_ulp is a non-negative int."""
    with pytest.raises(error, match=message):
        compare_call(_call(_table()), _call(_table()), max_ulp)


def test_arguments_of_the_wrong_kind_are_named():
    """compare_call takes RecordedCalls, compare_snapshots Snapshots."""
    with pytest.raises(TypeError, match="new must be a RecordedCall, got Snapshot"):
        compare_call(_call(_table()), _snapshot())
    with pytest.raises(TypeError, match="old must be a Snapshot, got RecordedCall"):
        compare_snapshots(_call(_table()), _snapshot())
