"""What a call returned, as raw arrays the gate can check: run in the child.

A result becomes a list of NumPy arrays in native byte order, C-contiguous, each with the
name of the dtype it was produced in: a torch tensor (any device, with grad, with the
negative or conjugate bit set), a NumPy array (any byte order, a view, a ``memmap``), a
nested list, or a Python number. A Python ``tuple`` (or a list of tensors or arrays, where
the call may return several) gives one array per item. bfloat16 travels as its uint16 bit
pattern; ``longdouble`` as float64. Booleans, integers, objects and strings are refused
with a reason naming the dtype; complex values only where the call allows them.

The parent checks everything again (dtype, shape, byte count): what this module says can
make a call fail, never pass.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.text import describe_exception, one_line

try:
    import torch
except ImportError:
    torch = None

FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")


class BadResult(Exception):
    """The call returned, but nothing the gate can check."""


def _tensor(value, allow_complex: bool):
    dtype = str(value.dtype).removeprefix("torch.")
    description = f"torch {dtype} tensor on {value.device}" + (" (requires grad)" if value.requires_grad else "")
    tensor = value.detach().resolve_neg().resolve_conj()
    if tensor.is_complex() and not allow_complex:
        raise BadResult(f"returned a complex tensor ({dtype}), not real numbers")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise BadResult(f"returned {dtype} values, not floating point")
    tensor = tensor.cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16), "bfloat16", description
    if dtype not in FLOATS + COMPLEX:  # float8 and friends: judged as float32
        tensor, dtype = tensor.float(), "float32"
    return tensor.numpy(), dtype, description


def _array(value, allow_complex: bool):
    kind = type(value).__name__
    try:
        array = np.asarray(value)
    except Exception as error:
        raise BadResult(f"returned a {kind} that NumPy cannot convert ({describe_exception(error)})") from None
    description = f"{kind} of {array.dtype}" if isinstance(value, np.ndarray) else f"{kind} (as {array.dtype})"
    if array.dtype.kind == "c":
        if not allow_complex:
            raise BadResult(f"returned complex values ({array.dtype}), not real numbers")
        if array.dtype.name not in COMPLEX:
            array = array.astype(np.complex128)
    elif array.dtype.kind != "f":
        what = "values that are not numbers" if array.dtype.kind in "USVMm" else f"{array.dtype} values"
        raise BadResult(f"returned a {kind} of {what}, not floating point")
    elif array.dtype.name not in FLOATS:  # longdouble: judged as float64
        array = array.astype(np.float64)
    return array.astype(array.dtype.newbyteorder("="), copy=False), array.dtype.name, description


def to_arrays(result, allow_complex: bool = False, max_items: int = 1):
    """``(is_tuple, [(array, dtype name, description), ...])`` or :class:`BadResult`."""
    if result is None:
        raise BadResult("returned None")
    if isinstance(result, (str, bytes)):
        raise BadResult(f"returned a {type(result).__name__} ({one_line(repr(result), 60)}), not numbers")
    items, is_tuple = [result], False
    if isinstance(result, tuple) or (max_items > 1 and isinstance(result, list) and result
                                     and all(_is_array(item) for item in result)):
        items, is_tuple = list(result), True
        if not 1 <= len(items) <= max(max_items, 1):
            raise BadResult(f"returned a {type(result).__name__} of {len(items)} items")
    converted = []
    for item in items:
        if torch is not None and isinstance(item, torch.Tensor):
            array, dtype, description = _tensor(item, allow_complex)
        else:
            array, dtype, description = _array(item, allow_complex)
        converted.append((np.ascontiguousarray(array), dtype, description))
    return is_tuple, converted


def _is_array(value) -> bool:
    return isinstance(value, np.ndarray) or (torch is not None and isinstance(value, torch.Tensor))
