"""Results whose own methods lie about the values they hold, and tensors whose values are
not in their storage.

The lying ones hold zeros and answer every question the child could ask them (torch
functions, conversion methods, NumPy's protocols, a list's ``__len__`` and ``__iter__``, ``dtype``,
``__class__``) with the correct table. The child reads the memory, not the methods: each
gets the verdict of the zeros it holds (``formula`` fails), never "conforms". The others
(wrapper, fake, meta, sparse, nested, dangling) hold no readable values: ``call`` fails
with a reason naming why.
"""

from __future__ import annotations

import numpy as np
import torch
from hostile_tables import vaswani
from torch.utils._python_dispatch import TorchDispatchMode


def _table(tensor) -> torch.Tensor:
    """The correct table of ``tensor``'s shape and dtype."""
    rows, width = tensor.shape
    return torch.from_numpy(vaswani(rows, width)).to(tensor.dtype)


def _zeros(num_positions, dim) -> torch.Tensor:
    return torch.zeros(num_positions, dim)


def _unwrapped(value):
    return value.as_subclass(torch.Tensor) if isinstance(value, torch.Tensor) else value


class LyingTensor(torch.Tensor):
    """Zeros whose every torch function (``detach``, ``cpu``, ``numpy``, ``dtype`` ...)
    runs on the correct table instead."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            args = [_table(arg) if type(arg) is cls else arg for arg in args]
            return func(*args, **(kwargs or {}))


def lying_torch_function(num_positions, dim):
    """Zeros as a :class:`LyingTensor`. Verdict: does not conform (``formula`` fails)."""
    return _zeros(num_positions, dim).as_subclass(LyingTensor)


class OverridingTensor(torch.Tensor):
    """Zeros whose conversion methods, written in Python, return the correct table."""

    def _lie(self, *args, **kwargs):
        return _table(self.as_subclass(torch.Tensor))

    detach = resolve_neg = resolve_conj = cpu = contiguous = float = view = to = clone = _lie

    def numpy(self, *args, **kwargs):
        return self._lie().numpy()

    def __array__(self, dtype=None, copy=None):
        return self.numpy()


def overriding_methods(num_positions, dim):
    """Zeros as an :class:`OverridingTensor`. Verdict: does not conform (``formula`` fails)."""
    return _zeros(num_positions, dim).as_subclass(OverridingTensor)


class DisguisedTensor(LyingTensor):
    """A :class:`LyingTensor` whose ``__class__`` says it is a plain ``torch.Tensor`` and
    whose ``dtype`` says float64; ``__eq__`` and ``__hash__`` raise, and every attribute
    not found reads the correct table's."""

    __class__ = property(lambda self: torch.Tensor)
    dtype = property(lambda self: torch.float64)

    def __eq__(self, other):
        raise RuntimeError("DisguisedTensor refuses ==")

    def __hash__(self):
        raise RuntimeError("DisguisedTensor refuses hash()")

    def __getattr__(self, name):
        return getattr(_table(self.as_subclass(torch.Tensor)), name)


def disguised_tensor(num_positions, dim):
    """Zeros as a :class:`DisguisedTensor`. Verdict: does not conform (``formula`` fails)."""
    return _zeros(num_positions, dim).as_subclass(DisguisedTensor)


class LyingArray(np.ndarray):
    """Zeros whose NumPy protocols and conversion methods hand over the correct table."""

    def _lie(self):
        return vaswani(*np.ndarray.__getattribute__(self, "shape")).view(np.ndarray)

    def __array__(self, dtype=None, copy=None):
        return self._lie()

    __array_interface__ = property(lambda self: self._lie().__array_interface__)
    __array_struct__ = property(lambda self: self._lie().__array_struct__)

    def __array_function__(self, func, types, args, kwargs):
        return func(*[self._lie() if arg is self else arg for arg in args], **kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*[self._lie() if arg is self else arg for arg in inputs], **kwargs)

    def astype(self, *args, **kwargs):
        return self._lie().astype(*args, **kwargs)

    def tobytes(self, *args, **kwargs):
        return self._lie().tobytes(*args, **kwargs)

    def view(self, *args, **kwargs):
        return self._lie().view(*args, **kwargs)

    dtype = property(lambda self: np.dtype(np.float32))


def lying_array(num_positions, dim):
    """Zeros as a :class:`LyingArray`. Verdict: does not conform (``formula`` fails)."""
    return np.zeros((num_positions, dim), np.float32).view(LyingArray)


class LyingList(list):
    """A list of zero rows whose ``__len__``, ``__iter__`` and ``__getitem__`` give the
    correct table's rows."""

    def __init__(self, rows):
        super().__init__([[0.0] * len(row) for row in rows])
        self._rows = rows

    def __len__(self):
        return len(self._rows)

    def __iter__(self):
        return iter(self._rows)

    def __getitem__(self, index):
        return self._rows[index]


def lying_list(num_positions, dim):
    """Zero rows in a :class:`LyingList`. Verdict: does not conform (``formula`` fails)."""
    return LyingList(vaswani(num_positions, dim).tolist())


class LyingFloat(float):
    """A zero whose ``__float__`` gives another value."""

    def __new__(cls, claimed):
        self = super().__new__(cls, 0.0)
        self.claimed = claimed
        return self

    def __float__(self):
        return self.claimed


def lying_floats(num_positions, dim):
    """Nested lists of :class:`LyingFloat` zeros claiming the table's values.
    Verdict: does not conform (``formula`` fails)."""
    return [[LyingFloat(value) for value in row] for row in vaswani(num_positions, dim).tolist()]


class TableMode(TorchDispatchMode):
    """A dispatch mode that replaces every 2-D floating-point result with the correct table."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.dim() == 2 and out.is_floating_point() and out.device.type == "cpu":
            with torch._C._DisableTorchDispatch():
                return _table(out)
        return out


def zeros_under_a_mode(num_positions, dim):
    """Zeros, with :class:`TableMode` entered and left entered. Verdict: does not conform
    (``formula`` fails)."""
    zeros = _zeros(num_positions, dim)
    TableMode().__enter__()
    return zeros


class WrapperTensor(torch.Tensor):
    """A wrapper subclass (as DTensor is) holding the correct table as ``elem``: no storage
    of its own, every operation runs on ``elem`` in Python."""

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        args = [arg.elem if isinstance(arg, WrapperTensor) else arg for arg in args]
        return func(*args, **(kwargs or {}))


def wrapper_tensor(num_positions, dim):
    """The correct table inside a :class:`WrapperTensor`. Verdict: does not conform
    (``call`` fails: its storage cannot be read)."""
    return WrapperTensor(torch.from_numpy(vaswani(num_positions, dim)))


class FakeLikeTensor(torch.Tensor):
    """A wrapper subclass with no data at all (as FakeTensor is) whose every operation
    makes up the correct table."""

    @staticmethod
    def __new__(cls, shape):
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=torch.float32)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        shape = next(arg.shape for arg in args if isinstance(arg, FakeLikeTensor))
        return _table(torch.empty(shape))


def fake_tensor(num_positions, dim):
    """A :class:`FakeLikeTensor` of the table's shape. Verdict: does not conform (``call``
    fails: its storage cannot be read)."""
    return FakeLikeTensor((num_positions, dim))


def meta_tensor(num_positions, dim):
    """A float32 tensor of the table's shape on the ``meta`` device. Verdict: does not
    conform (``call`` fails: no values)."""
    return torch.empty(num_positions, dim, device="meta")


def sparse_tensor(num_positions, dim):
    """The correct table as a sparse COO tensor. Verdict: does not conform (``call`` fails:
    sparse_coo)."""
    return torch.from_numpy(vaswani(num_positions, dim)).to_sparse()


def dangling_storage(num_positions, dim):
    """A tensor whose storage was resized to nothing after it was made (its size and
    strides point past the end). Verdict: does not conform (``call`` fails naming the
    bytes), and the child does not read past the storage."""
    tensor = torch.from_numpy(vaswani(num_positions, dim)).clone()
    tensor.untyped_storage().resize_(0)
    return tensor


def parameter(num_positions, dim):
    """The correct table as a ``torch.nn.Parameter`` (a module's weight): a subclass users
    return. Verdict: conforms."""
    return torch.nn.Parameter(torch.from_numpy(vaswani(num_positions, dim)))
