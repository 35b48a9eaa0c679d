"""Results turned into raw arrays in the child (:mod:`posenc_spec.gate.child.convert`): the
values a result's memory holds, exactly, in any container, byte order or layout; nothing
the result's own class defines runs while it is read; what holds no readable values is
refused with a reason naming its type."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from posenc_spec.gate.calls import CallRequest
from posenc_spec.gate.child.convert import MAX_DEPTH, BadResult, to_arrays
from posenc_spec.gate.wire import read_outcome


class Recorder:
    """The names of the methods that ran on a result while it was read (``armed``)."""

    def __init__(self):
        self.armed, self.ran = False, []

    def note(self, name: str) -> None:
        if self.armed:
            self.ran.append(name)

    def hook(self, name: str):
        """A method that notes it ran and refuses."""

        def method(*args, **kwargs):
            self.note(name)
            raise AssertionError(f"{name} ran")

        return method

    def read(self, result, **keys):
        """``to_arrays(result)`` with the recorder armed: (its one array, description, what ran)."""
        self.ran, self.armed = [], True
        try:
            _, [(array, _, description)] = to_arrays(result, **keys)
        finally:
            self.armed = False
        return array, description, self.ran


RECORDER = Recorder()


def _hooks(*names) -> dict:
    return {name: RECORDER.hook(name) for name in names}


def _getattribute(base):
    def method(self, name):
        RECORDER.note(f"attribute {name}")
        return base.__getattribute__(self, name)

    return method


def _lying_property(name, answer):
    def getter(self):
        RECORDER.note(name)
        return answer

    return property(getter)


class RecordingMeta(type):
    __name__ = _lying_property("the class's __name__", "Liar")


class RecordingTensorMeta(type(torch.Tensor)):
    __name__ = _lying_property("the class's __name__", "Liar")


# Classes that override whatever the child could ask a result, and lie about their class,
# dtype and name: reading one must run none of it.
RecordingTensor = RecordingTensorMeta("RecordingTensor", (torch.Tensor,), {
    "__torch_function__": classmethod(lambda cls, *args, **kwargs: RECORDER.hook("__torch_function__")()),
    **_hooks("detach", "resolve_neg", "resolve_conj", "cpu", "contiguous", "numpy", "view", "float", "to",
             "__array__", "__eq__", "__hash__", "__len__", "__iter__", "__bool__", "__getattr__"),
    "__getattribute__": _getattribute(torch.Tensor),
    "__class__": _lying_property("__class__", torch.Tensor), "dtype": _lying_property("dtype", torch.float64)})
RecordingArray = RecordingMeta("RecordingArray", (np.ndarray,), {
    **_hooks("__array__", "__array_function__", "__array_ufunc__", "__array_wrap__", "astype", "tobytes", "view",
             "copy", "__getitem__", "__len__", "__iter__", "__eq__", "__hash__", "__getattr__"),
    "__array_finalize__": lambda self, obj: RECORDER.note("__array_finalize__"),
    "__array_interface__": _lying_property("__array_interface__", {}),
    "__array_struct__": _lying_property("__array_struct__", None), "__getattribute__": _getattribute(np.ndarray),
    "__class__": _lying_property("__class__", np.ndarray), "dtype": _lying_property("dtype", np.dtype(np.float64))})
RecordingList = RecordingMeta("RecordingList", (list,), {
    **_hooks("__len__", "__iter__", "__getitem__", "__bool__", "__reversed__", "copy", "__array__"),
    "__getattribute__": _getattribute(list)})
RecordingTuple = RecordingMeta("RecordingTuple", (tuple,), {
    **_hooks("__len__", "__iter__", "__getitem__", "__bool__"), "__getattribute__": _getattribute(tuple)})
RecordingFloat = RecordingMeta("RecordingFloat", (float,), {
    **_hooks("__float__", "__index__", "__array__", "__eq__", "__hash__"), "__getattribute__": _getattribute(float)})

def _quietly(make):
    def made():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # prototype and deprecation notices
            return make()

    return made


STORED = np.arange(-3, 3, dtype=np.float32).reshape(2, 3) / 4


def test_nothing_the_results_class_defines_runs():
    """A tensor, an array, a list of float rows and a tuple of classes that override every
    method the child could call (torch functions, NumPy's protocols, ``__len__``,
    ``__iter__``, ``dtype``, ``__class__``, the class's ``__name__``) are read from their
    memory: none of those runs, the values are the stored ones and the true class is named."""
    rows = RecordingList([RecordingList([RecordingFloat(value) for value in row]) for row in STORED.tolist()])
    cases = [(torch.from_numpy(STORED.copy()).as_subclass(RecordingTensor), {}, "RecordingTensor"),
             (STORED.copy().view(RecordingArray), {}, "RecordingArray"), (rows, {}, "RecordingList"),
             (RecordingTuple((STORED.copy().view(RecordingArray),)), {"max_items": 2}, "RecordingArray")]
    for result, keys, name in cases:
        array, description, ran = RECORDER.read(result, **keys)
        assert ran == [], f"to_arrays({name}) ran {ran}"
        assert array.tobytes() == STORED.astype(array.dtype).tobytes(), f"to_arrays({name}) read {array}"
        assert description.startswith((f"torch float32 {name} ", f"{name} ")), f"to_arrays({name}): {description}"


class RecordingFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        RECORDER.note(f"function mode: {func}")
        return func(*args, **(kwargs or {}))


class RecordingDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        RECORDER.note(f"dispatch mode: {func}")
        return func(*args, **(kwargs or {}))


def test_modes_left_entered_see_nothing_of_the_reading():
    """A torch function mode and a dispatch mode a target entered and never left run
    nothing while a tensor is read (here with grad, the negative bit and on a strided view,
    which take the most operations)."""
    tensor = torch._neg_view(-torch.from_numpy(STORED.T.copy())).t().requires_grad_()
    with RecordingFunctionMode(), RecordingDispatchMode():
        array, _, ran = RECORDER.read(tensor)
    assert ran == [] and array.tobytes() == STORED.tobytes(), ran


def test_bfloat16_arrives_exactly():
    """bfloat16 travels as its bit pattern and becomes the float32 it converts to exactly."""
    values = torch.tensor([1.0, -0.0078125, 3.140625, 65280.0], dtype=torch.bfloat16)
    _, [(bits, dtype, _)] = to_arrays(values)
    reply = {"op": "result", "id": 0, "status": "ok", "arrays": [{"dtype": dtype, "shape": [4]}]}
    outcome = read_outcome(reply, [bits.tobytes()], CallRequest("x", (), (4,)), 0)
    assert outcome.dtype == "bfloat16" and np.array_equal(outcome.table, values.float().numpy())


def test_results_in_any_container_and_byte_order(tmp_path):
    """Big-endian arrays become native; negative and conjugate bits are resolved; views
    (overlapping ones too), subclasses users return (``Parameter``, ``matrix``, masked
    arrays), memmaps, nested lists, lists of rows and longdouble are read as the values
    they hold: exactly the table rounded once to the dtype reported (only the float32
    cases round)."""
    table = np.linspace(-1, 1, 12).reshape(3, 4)
    cases = [table.astype(">f8"), table.astype(">f4"), torch.from_numpy(table).neg()._neg_view(),
             table.T.copy().T, torch.from_numpy(table.copy())[:, ::1], table.tolist(), table.astype(np.longdouble),
             torch.nn.Parameter(torch.from_numpy(table.copy())), torch.from_numpy(table).requires_grad_(),
             _quietly(lambda: np.asmatrix(table))(), np.ma.masked_array(table, mask=table > 0),
             [torch.from_numpy(row) for row in table],
             list(table), list(map(tuple, table.tolist())), torch.from_numpy(table[:1]).expand(3, 4)[:1],
             torch.from_numpy(np.repeat(table, 2, axis=0).ravel()).as_strided((3, 4), (8, 1))]
    for case in cases:
        _, [(array, dtype, _)] = to_arrays(case)
        assert array.dtype.isnative and array.flags.c_contiguous and type(array) is np.ndarray, type(case)
        assert array.dtype == dtype and np.array_equal(array, table.astype(dtype)[:len(array)]), (type(case), dtype)
    table.astype(np.float32).tofile(tmp_path / "table.bin")
    memmap = np.memmap(tmp_path / "table.bin", dtype=np.float32, mode="r", shape=table.shape)
    _, [(array, dtype, _)] = to_arrays(memmap)
    assert dtype == "float32" and type(array) is np.ndarray and np.array_equal(array, table.astype(np.float32))
    conj = torch.complex(torch.ones(2), torch.ones(2)).conj()
    _, [(array, dtype, _)] = to_arrays(conj, allow_complex=True)
    assert dtype == "complex64" and np.array_equal(array, np.array([1 - 1j, 1 - 1j], np.complex64))


def test_the_negative_bit_flips_every_sign_bit():
    """A view with the negative bit set reads as its values with the sign bit flipped,
    bit for bit: zeros, NaN, infinity and subnormals included."""
    values = np.array([0.0, -0.0, np.nan, -np.inf, 1e-45, 3.0], np.float32)
    _, [(array, _, _)] = to_arrays(torch._neg_view(torch.from_numpy(values)))
    assert array.view(np.uint32).tolist() == (values.view(np.uint32) ^ 0x80000000).tolist(), array


def test_half_precision_kinds_widen_exactly():
    """float8 is judged as the float32 it widens to, torch's complex32 as complex64 (its
    imaginary part kept)."""
    eighths = torch.tensor([0.5, -1.75, 448.0]).to(torch.float8_e4m3fn)
    _, [(array, dtype, _)] = to_arrays(eighths)
    assert dtype == "float32" and array.tolist() == [0.5, -1.75, 448.0], (dtype, array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch calls complex32 experimental
        halves = torch.complex(torch.tensor([1.5]), torch.tensor([-2.0])).to(torch.complex32)
    _, [(array, dtype, _)] = to_arrays(halves, allow_complex=True)
    assert dtype == "complex64" and array.tolist() == [1.5 - 2j], (dtype, array)


def test_contiguous_native_results_are_not_copied():
    """A C-contiguous native float32 tensor (a Parameter too) or array is handed over as a
    view of its own memory: reading it by its storage costs no copy."""
    tensor, array = torch.zeros(4, 8), np.zeros((4, 8), np.float32)
    for result, memory in [(tensor, tensor.numpy()), (torch.nn.Parameter(tensor), tensor.numpy()), (array, array)]:
        _, [(converted, _, _)] = to_arrays(result)
        assert np.shares_memory(converted, memory), f"to_arrays({type(result).__name__}) copied"


class WrapperTensor(torch.Tensor):
    """A wrapper subclass (as DTensor and FakeTensor are): no storage of its own."""

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise AssertionError(f"{func} ran")


class Exits:
    def __array__(self, dtype=None, copy=None):
        raise SystemExit(3)


class Text(str):
    def __repr__(self):
        raise AssertionError("__repr__ ran")


def _dangling():
    tensor = torch.ones(2, 3)
    tensor.untyped_storage().resize_(0)
    return tensor


def _nested(depth):
    value = [1.0]
    for _ in range(depth):
        value = [value]
    return value


def _containing_itself():
    value = []
    value.append(value)
    return value


# What a call may return that holds no table, each with the words its reason must hold.
REFUSED = {
    "none": (lambda: None, "returned None"),
    "str": (lambda: "a table", "returned a str"),
    "str-subclass": (lambda: Text("a table"), "returned a Text ('a table'), not numbers"),
    "int64-array": (lambda: np.zeros((2, 2), dtype=np.int64), "int64 values, not floating point"),
    "bool-array": (lambda: np.zeros((2, 2), dtype=bool), "bool values, not floating point"),
    "object-array": (lambda: np.array([object()]), "object values, not floating point"),
    "int32-tensor": (lambda: torch.zeros(2, dtype=torch.int32), "int32 values, not floating point"),
    "complex-array": (lambda: np.zeros(2, dtype=np.complex64), "complex values (complex64), not real numbers"),
    "complex-tensor": (lambda: torch.zeros(2, dtype=torch.complex64), "complex tensor (complex64)"),
    "quantized": (_quietly(lambda: torch.quantize_per_tensor(torch.ones(2), 0.5, 0, torch.quint8)), "quint8 values"),
    "meta": (lambda: torch.empty(2, 2, device="meta"),
             "a torch.Tensor whose storage cannot be read: it is on the meta device"),
    "sparse": (lambda: torch.ones(2, 2).to_sparse(),
               "a torch.Tensor whose storage cannot be read: it is a sparse_coo tensor"),
    "nested": (_quietly(lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])), "it is a nested tensor"),
    "wrapper-subclass": (lambda: WrapperTensor(torch.ones(2, 2)), "a WrapperTensor (a torch.Tensor subclass) whose "
                         "storage cannot be read: its class computes its values in Python"),
    "dangling-storage": (_dangling, "its size and strides reach 24 bytes into a storage of 0"),
    "too-deep": (lambda: _nested(MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} levels"),
    "contains-itself": (_containing_itself, f"nested deeper than {MAX_DEPTH} levels"),
    "array-protocol-exits": (Exits, "returned a Exits that NumPy cannot convert (called sys.exit(3))"),
}


@pytest.mark.parametrize("make, words", REFUSED.values(), ids=REFUSED)
def test_results_that_are_not_tables_are_refused_by_name(make, words):
    """A result that holds no floating-point table, or no values the child can read, is
    refused with a reason naming its dtype or its type and why."""
    with pytest.raises(BadResult) as refused:
        to_arrays(make())
    assert words in str(refused.value), str(refused.value)
