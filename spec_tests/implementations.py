"""The reference implementations under test, each with the convention it follows and the
output dtypes it offers, behind one calling shape: ``make(num_positions, width, dtype)``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from reference_impls import family, numpy_loop, numpy_vectorized, timestep, torch_impl

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16}


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
    Implementation("family[vaswani]", "vaswani", ("float64", "float32", "float16"),
                   lambda n, d, dtype: family.sinusoidal_encoding(n, d, "vaswani", dtype).astype(np.float64)),
)

SEED_REFERENCES = IMPLEMENTATIONS[:4]


def by_dtype(implementations=IMPLEMENTATIONS):
    """(implementation, dtype) pairs for parametrize, with readable ids."""
    return [(impl, dtype) for impl in implementations for dtype in impl.dtypes]


def ids(pairs):
    return [f"{impl.name}-{dtype}" for impl, dtype in pairs]
