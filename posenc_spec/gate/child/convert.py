"""What a call returned, as raw arrays the gate can check: run in the child.

A result becomes a list of NumPy arrays in native byte order, C-contiguous, each with the
name of the dtype it was produced in: a torch tensor (any device, with grad, with the
negative or conjugate bit set), a NumPy array (any byte order, a view, a ``memmap``), a
nested list, or a Python number. A Python ``tuple`` (or a list of tensors or arrays, where
the call may return several) gives one array per item. bfloat16 travels as its uint16 bit
pattern; ``longdouble`` as float64. Booleans, objects and strings are refused with a reason
naming the dtype; complex values only where the call allows them, and integers likewise:
int32 and int64 as they are, narrower ones widened exactly (int8, int16, uint8, uint16 to
int32; uint32 to int64), uint64 refused (int64 does not hold it).

The judge reads bytes, not methods. A result is whatever its memory holds, read through
the base class, and nothing the result's own class defines runs while it is read: one
rule for every subclass, with no list of trusted ones.

- A ``torch.Tensor`` of any class (``nn.Parameter`` included) is read as a plain tensor
  aliasing its storage (``TensorBase.as_subclass``), with torch function overrides and
  Python dispatch switched off (``__torch_function__``, ``__torch_dispatch__``, and any
  mode the target left entered). Its size, strides and offset must lie within its
  storage. A tensor whose values are not in its storage is refused, naming its type:
  a class with ``__torch_dispatch__`` (wrapper, fake, distributed and jagged tensors,
  whose values and even sizes are computed in Python), a sparse or nested layout, the
  ``meta`` device.
- A ``numpy.ndarray`` of any class (``memmap``, ``matrix``, masked) is read as a base
  ndarray over the same memory (``ndarray.view``, which calls none of the subclass's
  hooks: ``__array__``, ``__array_interface__``, ``__array_finalize__``, ``astype`` ...).
- A ``list`` or ``tuple`` (or a subclass: read with ``list``'s and ``tuple``'s own
  methods, never its ``__len__`` or ``__iter__``) is read item by item under the same
  rules, and a Python number of a subclass by the base type's value.
- A JAX ``Array`` or a TensorFlow ``EagerTensor``, once :mod:`.frameworks` has prepared
  the target's framework, is materialised and copied to the host by the framework's own
  class functions (:data:`FOREIGN_READERS`); neither class can be subclassed. A
  ``tf.Variable`` or a Keras ``Variable``, of any class, is read by its framework's own
  functions from what it holds, never by its class's methods.
- Anything else (a CuPy array, a pandas frame, a flax variable) offers no memory of
  its own to read: it is what NumPy's array protocols make of it, and the array they hand
  back is read by the rules above.

bfloat16 NumPy arrays (ml_dtypes', as JAX and TensorFlow hand them to NumPy) are read as
bfloat16.

Type checks use ``type()``, never ``isinstance``, which a lying ``__class__`` fools; a
result's type is named by ``type``'s own ``__name__``.

This guards against the result, not against the process: a target runs in this process
and could rewrite it. The parent checks everything again (dtype, shape, byte count): what
this module says can make a call fail, never pass.
"""

from __future__ import annotations

import contextlib

import numpy as np

from posenc_spec.text import describe_exception, one_line

try:
    import torch
except ImportError:
    torch = None
# The C class every tensor's methods come from, below torch.Tensor's Python overrides
# (named _TensorBase before torch 2.3).
TENSOR_BASE = None if torch is None else getattr(torch._C, "TensorBase", None) or torch._C._TensorBase

FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
INTEGERS = ("int32", "int64")
# The narrower integers, each widened exactly to the first of INTEGERS that holds it.
WIDENED = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32", "uint32": "int64"}
# NumPy's limit on dimensions: a list nested deeper is not an array (and a list holding
# itself would nest forever).
MAX_DEPTH = 64
_EXACT_NUMBERS = {float, int}
# Readers of a framework's arrays, by framework: ``(owns(value) -> bool, read(value) ->
# (host array, description))``, added by .frameworks for the target's framework only.
FOREIGN_READERS: dict = {}


class BadResult(Exception):
    """The call returned, but nothing the gate can check."""


def _type_name(value) -> str:
    # type's own descriptor: a metaclass may define a __name__ of its own.
    return one_line(type.__dict__["__name__"].__get__(type(value)), 60)


def _is_tensor(value) -> bool:
    return torch is not None and issubclass(type(value), torch.Tensor)


def foreign_reader(value):
    """The ``read`` of the framework that owns ``value``, or None."""
    for owns, read in FOREIGN_READERS.values():
        if owns(value):
            return read
    return None


def is_array(value) -> bool:
    """Whether ``value`` is a torch tensor, a NumPy array (of any class) or a prepared
    framework's array: read by its memory."""
    return issubclass(type(value), np.ndarray) or _is_tensor(value) or foreign_reader(value) is not None


@contextlib.contextmanager
def _no_python_overrides():
    """Torch functions and dispatch go straight to torch's kernels: no subclass's or
    mode's ``__torch_function__`` or ``__torch_dispatch__`` runs."""
    with torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
        yield


def _unreadable(value) -> str | None:
    """Why ``value``'s storage does not hold its values, or None (call under
    :func:`_no_python_overrides`; reads nothing but the tensor's own fields)."""
    base = TENSOR_BASE
    # First, before any getter: a Python-dispatch class may compute even its layout in Python.
    if torch._C._dispatch_keys(value).has(torch._C.DispatchKey.Python):
        return ("its class computes its values in Python (__torch_dispatch__, as wrapper, fake, distributed and "
                "jagged tensors do); return a plain tensor")
    layout = base.layout.__get__(value)
    if base.is_nested.__get__(value) or layout != torch.strided:
        form = "nested" if base.is_nested.__get__(value) else str(layout).removeprefix("torch.")
        return f"it is a {form} tensor; return a dense one"
    if base.device.__get__(value).type == "meta":
        return "it is on the meta device, which holds no values"
    size, stride = base.size(value), base.stride(value)
    if 0 in size:
        return None
    itemsize = base.dtype.__get__(value).itemsize
    reach = (base.storage_offset(value) + sum((n - 1) * step for n, step in zip(size, stride, strict=True)) + 1)
    held = base.untyped_storage(value).nbytes()
    if reach * itemsize > held:
        return f"its size and strides reach {reach * itemsize} bytes into a storage of {held}"
    return None


def _not_numbers(what: str, allow_integer: bool) -> str:
    """Why values of ``what`` (``bool``, ``uint64``, ``object`` ...) are refused."""
    if not allow_integer:
        return f"{what}, not floating point"
    if what.startswith("uint64"):
        return f"{what}, not integers int64 holds (return int64 or int32)"
    return f"{what}, not integers or floating point"


def _integers(array: np.ndarray) -> np.ndarray:
    """An integer array of :data:`INTEGERS` as it is, a narrower one widened exactly."""
    return array.astype(WIDENED[array.dtype.name]) if array.dtype.name in WIDENED else array


def _tensor(value, allow_complex: bool, allow_integer: bool = False):
    kind = _type_name(value)
    plain_class = type(value) is torch.Tensor
    with _no_python_overrides():
        try:
            reason = _unreadable(value)
        except Exception as error:
            reason = f"reading it {describe_exception(error)}"
        if reason:
            what = "torch.Tensor" if plain_class else f"{kind} (a torch.Tensor subclass)"
            raise BadResult(f"returned a {what} whose storage cannot be read: {reason}")
        plain = TENSOR_BASE.as_subclass(value, torch.Tensor)
        return _tensor_values(plain, "tensor" if plain_class else kind, allow_complex, allow_integer)


def _tensor_values(plain, kind: str, allow_complex: bool, allow_integer: bool = False):
    """A plain tensor as an array (under :func:`_no_python_overrides`)."""
    dtype = str(plain.dtype).removeprefix("torch.")
    description = f"torch {dtype} {kind} on {plain.device}" + (" (requires grad)" if plain.requires_grad else "")
    if plain.is_complex() and not allow_complex:
        raise BadResult(f"returned a complex tensor ({dtype}), not real numbers")
    integer = allow_integer and dtype in (*INTEGERS, *WIDENED)
    if not (plain.is_floating_point() or plain.is_complex() or integer):
        raise BadResult(f"returned {_not_numbers(f'{dtype} values', allow_integer)}")
    tensor = plain.detach().resolve_neg().resolve_conj().cpu().contiguous()
    if integer:
        array = _integers(tensor.numpy())
        return array, array.dtype.name, description
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16), "bfloat16", description
    if dtype == "complex32":  # torch's complex half: judged as complex64
        tensor, dtype = tensor.to(torch.complex64), "complex64"
    elif dtype not in FLOATS + COMPLEX:  # float8 and friends: judged as float32
        tensor, dtype = tensor.float(), "float32"
    return tensor.numpy(), dtype, description


def _number(value):
    """A Python number of a subclass as the base type's value (its ``__float__`` unasked)."""
    for base, read in ((float, float.__float__), (int, int.__int__), (complex, complex.__complex__)):
        if issubclass(type(value), base):
            return read(value)
    return None


def _plain(value, depth: int = 0):
    """``value`` with every tensor, array, container and number read by the module's rule:
    plain lists, base ndarrays and exact numbers, which NumPy converts without running
    anything of the target's."""
    if depth > MAX_DEPTH:
        raise BadResult(f"returned lists nested deeper than {MAX_DEPTH} levels")
    cls = type(value)
    if cls in (float, int, bool, complex) or issubclass(cls, np.generic):
        return value  # NumPy reads scalars' values, never their methods
    if issubclass(cls, np.ndarray):
        return _widened(np.ndarray.view(value, np.ndarray))
    read = foreign_reader(value)
    if read is not None:
        return _widened(read(value)[0])
    if _is_tensor(value):  # every kind of number read: the whole result's dtype is judged once
        array, dtype, _ = _tensor(value, allow_complex=True, allow_integer=True)
        return (array.astype(np.uint32) << 16).view(np.float32) if dtype == "bfloat16" else array
    if issubclass(cls, list | tuple):
        items = list.copy(value) if issubclass(cls, list) else list(tuple.__getitem__(value, slice(None)))
        if set(map(type, items)) <= _EXACT_NUMBERS:  # a row of a nested list: no item needs a look
            return items
        return [_plain(item, depth + 1) for item in items]
    number = _number(value)
    if number is not None:
        return number
    try:  # a foreign array: NumPy's protocols are all it offers
        return np.asarray(value)
    except BaseException as error:  # noqa: BLE001 - the object's own code: sys.exit included
        raise BadResult(f"returned a {_type_name(value)} that NumPy cannot convert "
                        f"({describe_exception(error)})") from None


def _widened(array: np.ndarray) -> np.ndarray:
    """An array of a float type NumPy has no name for among :data:`FLOATS` (ml_dtypes'
    bfloat16 and float8 kinds, in a nested result) as float32, which holds them exactly."""
    return array.astype(np.float32) if array.dtype.kind == "V" and array.dtype.name.startswith(("bfloat", "float")) \
        else array


def _array(value, allow_complex: bool, allow_integer: bool = False):
    kind = _type_name(value)
    read = foreign_reader(value)
    if read is not None:
        array, description = read(value)
        if array.dtype.name == "bfloat16":
            return np.ascontiguousarray(array).view(np.uint16), "bfloat16", description
        array = _widened(array)
    elif issubclass(type(value), np.ndarray):
        array = np.ndarray.view(value, np.ndarray)
        if array.dtype.name == "bfloat16":
            return np.ascontiguousarray(array).view(np.uint16), "bfloat16", f"{kind} of bfloat16"
        array = _widened(array)
        description = f"{kind} of {array.dtype}"
    else:
        plain = _plain(value)
        try:
            array = np.asarray(plain)
        except Exception as error:
            raise BadResult(f"returned a {kind} that NumPy cannot convert ({describe_exception(error)})") from None
        description = f"{kind} (as {array.dtype})"
    if array.dtype.kind == "c":
        if not allow_complex:
            raise BadResult(f"returned complex values ({array.dtype}), not real numbers")
        if array.dtype.name not in COMPLEX:
            array = array.astype(np.complex128)
    elif allow_integer and array.dtype.name in (*INTEGERS, *WIDENED):
        array = _integers(array)
    elif array.dtype.kind != "f":
        what = "values that are not numbers" if array.dtype.kind in "USVMm" else f"{array.dtype} values"
        raise BadResult(f"returned a {kind} of {_not_numbers(what, allow_integer)}")
    elif array.dtype.name not in FLOATS:  # longdouble: judged as float64
        array = array.astype(np.float64)
    return array.astype(array.dtype.newbyteorder("="), copy=False), array.dtype.name, description


def _items(result, max_items: int):
    """The items of a result that holds several, read with the base class's own methods;
    None for a single result."""
    cls = type(result)
    if issubclass(cls, tuple):
        items = list(tuple.__getitem__(result, slice(None)))
    elif max_items > 1 and issubclass(cls, list):
        items = list.copy(result)
        if not items or not all(is_array(item) for item in items):
            return None
    else:
        return None
    if not 1 <= len(items) <= max(max_items, 1):
        raise BadResult(f"returned a {_type_name(result)} of {len(items)} items")
    return items


def to_arrays(result, allow_complex: bool = False, max_items: int = 1, allow_integer: bool = False):
    """``(is_tuple, [(array, dtype name, description), ...])`` or :class:`BadResult`."""
    if result is None:
        raise BadResult("returned None")
    for text_type in (str, bytes):
        if issubclass(type(result), text_type):
            raise BadResult(f"returned a {_type_name(result)} ({one_line(text_type.__repr__(result), 60)}), "
                            "not numbers")
    items = _items(result, max_items)
    converted = []
    for item in [result] if items is None else items:
        if _is_tensor(item):
            array, dtype, description = _tensor(item, allow_complex, allow_integer)
        else:
            array, dtype, description = _array(item, allow_complex, allow_integer)
        # ascontiguousarray makes a 0-d array 1-d: the shape is kept as returned.
        converted.append((np.ascontiguousarray(array).reshape(array.shape), dtype, description))
    return items is not None, converted
