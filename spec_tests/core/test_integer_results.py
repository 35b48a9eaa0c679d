"""Integer results, where a request expects them (``CallRequest.allow_integer``): a family
whose values are indices (bucket numbers) gets int32 and int64 arrays, exactly, from the
child (:mod:`posenc_spec.gate.child.convert`), over the wire (:mod:`posenc_spec.gate.wire`)
and from a real sealed child; every other call refuses them as before, and what is not an
integer int64 holds (bool, uint64, objects, Python ints beyond 64 bits) is refused even
where integers are expected, with a reason naming the dtype."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_spec.gate.calls import CallRequest
from posenc_spec.gate.child.convert import BadResult, to_arrays
from posenc_spec.gate.child.protocol import ChannelError
from posenc_spec.gate.runner import Slot
from posenc_spec.gate.sandbox import Limits, root_template
from posenc_spec.gate.wire import read_outcome

HERE = Path(__file__).resolve()
INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def _read(result, **keys):
    """The one array ``to_arrays`` makes of ``result``, and its dtype name."""
    _, [(array, dtype, _)] = to_arrays(result, **keys)
    return array, dtype


# What a call may return where integers are expected, and the dtype and values it arrives as.
KEPT = {
    "int64-tensor": (lambda: torch.tensor([INT64_MIN, -1, 0, INT64_MAX]), "int64", [INT64_MIN, -1, 0, INT64_MAX]),
    "int32-tensor": (lambda: torch.tensor([-(2**31), 2**31 - 1], dtype=torch.int32), "int32", [-(2**31), 2**31 - 1]),
    "int64-array-big-endian": (lambda: np.array([1, -2], dtype=">i8"), "int64", [1, -2]),
    "int32-array-view": (lambda: np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2], "int32",
                         [[0, 2], [4, 6], [8, 10]]),
    "int8-tensor-widened": (lambda: torch.tensor([-128, 127], dtype=torch.int8), "int32", [-128, 127]),
    "uint8-array-widened": (lambda: np.array([0, 255], dtype=np.uint8), "int32", [0, 255]),
    "uint32-array-widened": (lambda: np.array([2**32 - 1], dtype=np.uint32), "int64", [2**32 - 1]),
    "python-ints": (lambda: [[1, 2], [3, INT64_MAX]], "int64", [[1, 2], [3, INT64_MAX]]),
    "list-of-int-tensors": (lambda: [torch.tensor([1, 2]), torch.tensor([3, 4])], "int64", [[1, 2], [3, 4]]),
    "floats-still-read": (lambda: torch.tensor([0.5, 1.5]), "float32", [0.5, 1.5]),
}


@pytest.mark.parametrize("make, dtype, values", KEPT.values(), ids=KEPT)
def test_integers_arrive_exactly_where_expected(make, dtype, values):
    """int32 and int64 arrive as they are, narrower integers widened exactly, the extremes of
    int64 included; floating-point results still arrive where integers are expected."""
    array, name = _read(make(), allow_integer=True)
    assert name == dtype and array.dtype == np.dtype(dtype) and array.dtype.isnative, (name, array.dtype)
    assert array.tolist() == values, array.tolist()


# What is refused even where integers are expected, with the words its reason holds.
REFUSED_AS_INTEGERS = {
    "bool-tensor": (lambda: torch.ones(2, dtype=torch.bool), "bool values, not integers or floating point"),
    "bool-array": (lambda: np.zeros(2, dtype=bool), "bool values, not integers or floating point"),
    "uint64-array": (lambda: np.array([2**64 - 1], dtype=np.uint64), "uint64 values, not integers int64 holds"),
    "uint64-tensor": (lambda: torch.tensor([1], dtype=torch.uint64), "uint64 values, not integers int64 holds"),
    "python-int-beyond-uint64": (lambda: [2**70], "object values, not integers or floating point"),
    "python-int-2**63": (lambda: [2**63], "uint64 values, not integers int64 holds"),
    "object-array": (lambda: np.array([object()]), "object values, not integers or floating point"),
    "strings": (lambda: np.array(["3"]), "values that are not numbers, not integers or floating point"),
    "complex-without-leave": (lambda: np.zeros(2, dtype=np.complex64), "complex values (complex64), not real"),
}


@pytest.mark.parametrize("make, words", REFUSED_AS_INTEGERS.values(), ids=REFUSED_AS_INTEGERS)
def test_what_int64_does_not_hold_is_refused_where_integers_are_expected(make, words):
    """bool, uint64, objects, text and Python ints beyond int64 are refused, naming the dtype."""
    with pytest.raises(BadResult) as refused:
        to_arrays(make(), allow_integer=True)
    assert words in str(refused.value), str(refused.value)


@pytest.mark.parametrize("make, words", [
    (lambda: torch.zeros(2, dtype=torch.int64), "int64 values, not floating point"),
    (lambda: np.zeros(2, dtype=np.int32), "int32 values, not floating point"),
    (lambda: [1, 2], "int64 values, not floating point"),
    (lambda: torch.ones(2, dtype=torch.bool), "bool values, not floating point"),
])
def test_integers_stay_refused_where_floats_are_expected(make, words):
    """A call that does not expect integers refuses them as it always did."""
    with pytest.raises(BadResult, match=words):
        to_arrays(make())


def _reply(dtype: str, shape: list) -> dict:
    return {"op": "result", "id": 1, "status": "ok", "arrays": [{"dtype": dtype, "shape": shape}]}


def test_the_wire_reads_integers_only_for_a_request_that_expects_them():
    """An int64 reply is read exactly for a request that allows integers; the same reply to a
    float request is a refused result ("bad"), never a pass; a wrong byte count or a dtype
    that is not int32, int64 or a float is a malformed reply."""
    values = np.array([INT64_MIN, INT64_MAX], dtype=np.int64)
    integers = CallRequest("int64", (), (2,), allow_integer=True)
    outcome = read_outcome(_reply("int64", [2]), [values.tobytes()], integers, 1)
    assert outcome.ok and outcome.dtype == "int64" and outcome.table.tolist() == values.tolist()
    refused = read_outcome(_reply("int64", [2]), [values.tobytes()], CallRequest("50x8", (), (2,)), 1)
    assert (refused.status, refused.message) == ("bad", "returned int64 values, not floating point")
    for header, payload, words in [(_reply("int32", [2]), values.tobytes(), "byte count"),
                                   (_reply("uint64", [2]), values.tobytes(), "bad dtype"),
                                   (_reply("bool", [2]), b"\x01\x00", "bad dtype"),
                                   (_reply("object", [2]), values.tobytes(), "bad dtype")]:
        with pytest.raises(ChannelError, match=words):
            read_outcome(header, [payload], integers, 1)


def extremes():
    """int64 values as large as int64 holds."""
    return torch.tensor([INT64_MIN, INT64_MAX, 7])


def int32_buckets():
    return np.arange(4, dtype=np.int32)


def bool_buckets():
    return np.ones(4, dtype=bool)


def unsigned_buckets():
    return torch.full((4,), 2**64 - 1, dtype=torch.uint64)


def huge_buckets():
    """Far more integers than the call's largest legitimate result."""
    return torch.zeros(1 << 16, dtype=torch.int64)


@pytest.fixture(scope="module")
def slot():
    with root_template() as root:
        made = Slot(root, Limits(2**30, 16, 10.0))
        try:
            yield made
        finally:
            made.close()


@pytest.mark.parametrize("target, allow, status, words", [
    ("extremes", True, "ok", "torch int64 tensor"),
    ("int32_buckets", True, "ok", "ndarray of int32"),
    ("extremes", False, "bad", "returned int64 values, not floating point"),
    ("bool_buckets", True, "bad", "bool values, not integers or floating point"),
    ("unsigned_buckets", True, "bad", "uint64 values, not integers int64 holds"),
    ("huge_buckets", True, "bad", "more than this call's largest legitimate result"),
])
def test_a_sealed_child_returns_integers_only_where_expected(slot, target, allow, status, words):
    """Through a real sealed child: int32 and int64 results arrive exactly where the request
    expects integers; the same int64 result fails a float request; bool, uint64 and a result
    beyond the call's size are refused with their reason."""
    request = CallRequest("buckets", (), (4,), allow_integer=allow)
    outcome = slot.run(f"{HERE}:{target}", [request]).outcomes[0]
    assert (outcome.status, words in outcome.message) == (status, True), outcome
    if target == "extremes" and allow:
        assert outcome.table.tolist() == [INT64_MIN, INT64_MAX, 7] and outcome.dtype == "int64"
