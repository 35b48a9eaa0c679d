"""The reference implementations under test, each with the convention it follows and the
output dtypes it offers, behind one calling shape: ``make(num_positions, width, dtype)``.

Only the seed references are here, never ``reference_impls.family``: family is the float64
oracle rounded to a dtype, so judging it against the oracle would compare the oracle with
itself. Its tests compare it with mpmath, closed forms and :func:`seed_table`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from posenc_spec.families.sinusoidal.conventions import Convention, get_convention
from reference_impls import numpy_loop, numpy_vectorized, timestep, torch_impl

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16}
# What reference_impls.family is tested at (test_agreement, test_bounds, test_formula): the
# dtypes it offers, and a table long enough for angles near 1000 and wide enough for 32
# frequencies.
FAMILY_DTYPES = ("float64", "float32", "float16")
FAMILY_SIZE = (1024, 64)


@dataclass(frozen=True)
class Implementation:
    name: str
    convention: str
    dtypes: tuple[str, ...]
    make: Callable[[int, int, str], np.ndarray]  # returns float64 values of a table stored in `dtype`

    def __str__(self):
        return self.name


def _as_float64(tensor: torch.Tensor) -> np.ndarray:
    return tensor.to(torch.float64).numpy()


IMPLEMENTATIONS = (
    Implementation("numpy_loop", "vaswani", ("float64",),
                   lambda n, d, dtype: numpy_loop.positional_encoding(n, d)),
    Implementation("numpy_vectorized", "vaswani", ("float64",),
                   lambda n, d, dtype: numpy_vectorized.positional_encoding(n, d)),
    Implementation("torch_impl", "vaswani", tuple(TORCH_DTYPES),
                   lambda n, d, dtype: _as_float64(torch_impl.positional_encoding(n, d, dtype=TORCH_DTYPES[dtype]))),
    Implementation("timestep", "concat", ("float32",),
                   lambda n, d, dtype: _as_float64(timestep.timestep_embedding(torch.arange(n), d))),
    # A float64 table rounded once to a narrower dtype: the other way correct code reaches float16.
    Implementation("numpy_loop[rounded]", "vaswani", ("float32", "float16"),
                   lambda n, d, dtype: numpy_loop.positional_encoding(n, d).astype(dtype).astype(np.float64)),
)

SEED_REFERENCES = IMPLEMENTATIONS[:4]


def by_dtype(implementations=IMPLEMENTATIONS):
    """(implementation, dtype) pairs for parametrize, with readable ids."""
    return [(impl, dtype) for impl in implementations for dtype in impl.dtypes]


def ids(pairs):
    return [f"{impl.name}-{dtype}" for impl, dtype in pairs]


def seed_table(num_positions: int, width: int, convention: str | Convention, dtype: str = "float64") -> np.ndarray:
    """Any member with an even width, scale 1 and a whole offset >= 0, built from the seed
    torch reference (the paper's interleaved ``sin, cos`` at base b, positions 0 .. n-1) by
    rearrangements written out here, without the family's column map or exponent code:

    - shift 1, ``e_k = k/(h-1)`` at base b, is the paper's ``e_k = k/h`` at base ``b ** (h/(h-1))``;
    - offset o: rows o .. o+n-1 of a table o rows longer;
    - concat: the sine columns 0, 2, 4, ... then the cosine columns 1, 3, 5, ...;
      cos first: the cosines first, in either layout.

    Returns the float64 values of the table as stored in ``dtype`` (a key of TORCH_DTYPES).
    """
    conv = get_convention(convention)
    if width % 2 or conv.scale != 1 or conv.offset != int(conv.offset) or conv.offset < 0:
        raise ValueError(f"seed_table builds even widths at scale 1 and whole offsets >= 0; got width {width}, "
                         f"{conv.name()}")
    half = width // 2
    if conv.freq_shift and half < 2:
        raise ValueError(f"width must be at least 4 under freq_shift=1, got {width}")
    base = conv.base ** (half / (half - 1)) if conv.freq_shift else conv.base
    offset = int(conv.offset)
    table = torch_impl.positional_encoding(num_positions + offset, width, base, dtype=TORCH_DTYPES[dtype])[offset:]
    sines, cosines = list(range(0, width, 2)), list(range(1, width, 2))
    firsts, seconds = (sines, cosines) if conv.first == "sin" else (cosines, sines)
    if conv.layout == "concat":
        order = firsts + seconds
    else:
        order = [column for pair in zip(firsts, seconds, strict=True) for column in pair]
    return _as_float64(table[:, order])
