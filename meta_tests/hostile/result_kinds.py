"""Results in unusual byte orders, memory layouts and tensor bits, and results that are
not real floating-point numbers.

The child must read the values the result holds, whatever its byte order, strides,
negative or conjugate bit, or backing file: the correct ones conform. Integers,
booleans, objects and complex values are not a table of real numbers: each is refused
with a reason naming its dtype.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import torch
from hostile_tables import vaswani


def big_endian_float32(num_positions, dim):
    """The correct table as ``>f4``. Verdict: conforms."""
    return vaswani(num_positions, dim).astype(">f4")


def big_endian_float64(num_positions, dim):
    """The correct table as ``>f8``. Verdict: conforms."""
    return vaswani(num_positions, dim, np.float64).astype(">f8")


def byte_swapped(num_positions, dim):
    """The correct float32 bytes read as big-endian: every value garbled.
    Verdict: does not conform."""
    return vaswani(num_positions, dim).view(">f4")


def signalling_nans(num_positions, dim):
    """A table of signalling NaNs (float32 bits 0x7fa00000).
    Verdict: does not conform (``finite`` fails), and judging it warns about nothing."""
    return np.full((num_positions, dim), 0x7FA00000, dtype=np.uint32).view(np.float32)


def negative_bit(num_positions, dim):
    """The correct table as a torch view with the negative bit set (``_neg_view`` of its
    negation). Verdict: conforms."""
    return torch._neg_view(-torch.from_numpy(vaswani(num_positions, dim)))


def conjugate_of_real(num_positions, dim):
    """``.conj()`` of the correct real tensor. Verdict: conforms."""
    return torch.from_numpy(vaswani(num_positions, dim)).conj()


def imaginary_part_of_conjugate(num_positions, dim):
    """The imaginary part of a conjugate view of ``0 - i table``: a real tensor whose
    negative bit is set. Verdict: conforms."""
    table = torch.from_numpy(vaswani(num_positions, dim))
    return torch.complex(torch.zeros_like(table), -table).conj().imag


def every_other_column(num_positions, dim):
    """A strided view: every other column of a table holding each column twice.
    Verdict: conforms."""
    return np.repeat(vaswani(num_positions, dim), 2, axis=1)[:, ::2]


def fortran_order(num_positions, dim):
    """The transpose of a C-ordered (dim, num_positions) array. Verdict: conforms."""
    return np.ascontiguousarray(vaswani(num_positions, dim).T).T


def reversed_rows(num_positions, dim):
    """A view with a negative row stride. Verdict: conforms."""
    return np.ascontiguousarray(vaswani(num_positions, dim)[::-1])[::-1]


def torch_transposed(num_positions, dim):
    """A non-contiguous torch view (``.t()`` of a contiguous transpose). Verdict: conforms."""
    return torch.from_numpy(vaswani(num_positions, dim)).t().contiguous().t()


def memory_mapped(num_positions, dim):
    """The correct table in a ``numpy.memmap`` of a temporary file (unlinked at once: the
    mapping keeps it). Verdict: conforms."""
    table = vaswani(num_positions, dim)
    handle, path = tempfile.mkstemp(suffix=".float32")
    os.close(handle)
    try:
        mapped = np.memmap(path, dtype=np.float32, mode="w+", shape=table.shape)
        mapped[:] = table
        mapped.flush()
    finally:
        os.unlink(path)
    return mapped


def object_array(num_positions, dim):
    """The correct values in an ``object`` array. Verdict: does not conform; the reason names object."""
    return vaswani(num_positions, dim).astype(object)


def integer_array(num_positions, dim):
    """The table rounded to int64. Verdict: does not conform; the reason names int64."""
    return np.rint(vaswani(num_positions, dim)).astype(np.int64)


def boolean_array(num_positions, dim):
    """``table > 0``. Verdict: does not conform; the reason names bool."""
    return vaswani(num_positions, dim) > 0


def complex_array(num_positions, dim):
    """The correct values as complex64. Verdict: does not conform; the reason names complex64."""
    return vaswani(num_positions, dim).astype(np.complex64)


def integer_tensor(num_positions, dim):
    """The table rounded to a torch int64 tensor. Verdict: does not conform; the reason names int64."""
    return torch.from_numpy(vaswani(num_positions, dim)).round().long()


def boolean_tensor(num_positions, dim):
    """``table > 0`` as a torch tensor. Verdict: does not conform; the reason names bool."""
    return torch.from_numpy(vaswani(num_positions, dim)) > 0


def complex_tensor(num_positions, dim):
    """The correct values plus ``0i`` as a torch complex64 tensor. Verdict: does not
    conform; the reason names complex64."""
    table = torch.from_numpy(vaswani(num_positions, dim))
    return torch.complex(table, torch.zeros_like(table))
