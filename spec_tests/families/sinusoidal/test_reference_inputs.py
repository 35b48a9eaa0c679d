"""Every reference implementation refuses bad input with a one-line ValueError or
TypeError that names the argument (and, for a scalar, its value), and accepts the
spellings of good input that callers use (NumPy integers and floats)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from posenc_spec.families.sinusoidal.conventions import MAX_POSITIONS
from reference_impls import family, numpy_loop, numpy_vectorized, timestep, torch_impl


@dataclass(frozen=True)
class Reference:
    """A reference, the name of each of its arguments by role, and valid values for all of them."""

    name: str
    function: object
    names: dict  # role ("length", "timesteps", "width", "base", "dtype") -> the argument's name
    valid: dict  # argument name -> a valid value
    dtype_library: str | None = None  # whose dtypes ``dtype`` takes, if it takes one

    def call(self, role, value):
        return self.function(**{**self.valid, self.names[role]: value})

    def __str__(self):
        return self.name


REFERENCES = (
    Reference("numpy_loop", numpy_loop.positional_encoding,
              {"length": "num_positions", "width": "d_model", "base": "base"}, {"num_positions": 4, "d_model": 8}),
    Reference("numpy_vectorized", numpy_vectorized.positional_encoding,
              {"length": "num_positions", "width": "d_model", "base": "base"}, {"num_positions": 4, "d_model": 8}),
    Reference("torch_impl", torch_impl.positional_encoding,
              {"length": "num_positions", "width": "d_model", "base": "base", "dtype": "dtype"},
              {"num_positions": 4, "d_model": 8}, "torch"),
    Reference("timestep", timestep.timestep_embedding,
              {"timesteps": "timesteps", "width": "dim", "base": "base"}, {"timesteps": torch.arange(4), "dim": 8}),
    Reference("family", family.sinusoidal_encoding,
              {"length": "positions", "width": "width", "base": "base", "dtype": "dtype"},
              {"positions": 4, "width": 8}, "numpy"),
)

NAN, INF = float("nan"), float("inf")
BAD = {  # role -> (value, the exception it must raise); every reference with the role refuses every value
    "length": [(-1, ValueError), (MAX_POSITIONS + 1, ValueError), (np.uint64(2**64 - 1), ValueError),
               (np.int64(-3), ValueError), (3.0, TypeError), (np.float64(3.0), TypeError), ("3", TypeError),
               (True, TypeError), (None, TypeError)],
    "width": [(1, ValueError), (3, ValueError), (0, ValueError), (-2, ValueError), (8.0, TypeError),
              (True, TypeError), ("8", TypeError)],
    "base": [(0, ValueError), (0.0, ValueError), (-10000.0, ValueError), (1, ValueError), (1.0, ValueError),
             (NAN, ValueError), (INF, ValueError), (-INF, ValueError), (np.float32(NAN), ValueError),
             ("10000", TypeError), (True, TypeError), (1j, TypeError)],
    "timesteps": [(torch.tensor([0.0, NAN]), ValueError), (torch.tensor([1.0, INF]), ValueError),
                  (torch.tensor([1.0, -INF]), ValueError), (torch.zeros(2, 3), ValueError),
                  (torch.tensor(3.0), ValueError), (torch.tensor([1 + 1j]), TypeError),
                  (torch.tensor([True, False]), TypeError), ([1, 2, 3], TypeError), (np.arange(3), TypeError)],
    "torch dtype": [(torch.int64, TypeError), (torch.bool, TypeError), (torch.complex64, TypeError),
                    (np.float32, TypeError), ("float32", TypeError), (None, TypeError)],
    "numpy dtype": [(np.int64, TypeError), (np.bool_, TypeError), (np.complex128, TypeError), ("int8", TypeError),
                    (torch.float32, TypeError), (None, TypeError)],
}


def _role(case_role):
    return "dtype" if case_role.endswith("dtype") else case_role


def _takes(reference, case_role):
    if case_role.endswith("dtype"):
        return reference.dtype_library is not None and case_role == f"{reference.dtype_library} dtype"
    return case_role in reference.names


CASES = [(reference, role, value, error) for reference in REFERENCES for role, values in BAD.items()
         if _takes(reference, role) for value, error in values]


def _case_id(case):
    reference, role, value, _ = case
    shown = f"tensor{tuple(value.shape)}{value.dtype}".replace("torch.", "") if torch.is_tensor(value) else repr(value)
    return f"{reference}-{role}-{shown}"


@pytest.mark.parametrize("reference, role, value, error", CASES, ids=[_case_id(case) for case in CASES])
def test_bad_input_is_refused_naming_the_argument(reference, role, value, error):
    """The right exception type, one line, naming the argument; for scalars also the value."""
    name = reference.names[_role(role)]
    with pytest.raises(error) as raised:
        reference.call(_role(role), value)
    message = str(raised.value)
    assert "\n" not in message, f"{reference}: a multi-line message: {message!r}"
    assert re.search(rf"\b{re.escape(name)}\b", message), f"{reference}: {message!r} does not name {name}"
    if np.ndim(value) == 0 and not torch.is_tensor(value):
        assert str(value) in message or repr(value) in message, f"{reference}: {message!r} does not show {value!r}"


GOOD = {  # role -> values every reference with the role must accept (the spellings callers use)
    "length": [np.int64(5), np.uint8(5), np.int32(0)],
    "width": [np.int64(6), np.uint16(6)],
    "base": [10000, np.float32(100.0), np.int64(500), 0.5],  # 0 < base < 1: frequencies rise, still defined
}
GOOD_CASES = [(reference, role, value) for reference in REFERENCES for role, values in GOOD.items()
              if role in reference.names for value in values]


@pytest.mark.parametrize("reference, role, value", GOOD_CASES,
                         ids=[f"{reference}-{role}-{value!r}" for reference, role, value in GOOD_CASES])
def test_numpy_scalars_and_integer_bases_are_accepted(reference, role, value):
    """NumPy integer lengths and widths, and int or NumPy-float bases, give a finite table of
    the asked shape. (family's conventions require base > 1: it refuses 0.5 by name.)"""
    if reference.name == "family" and role == "base" and value < 1:
        with pytest.raises(ValueError, match=r"\bbase\b.*0\.5"):
            reference.call(role, value)
        return
    table = np.asarray(reference.call(role, value), dtype=np.float64)
    rows = int(value) if role == "length" else 4
    columns = int(value) if role == "width" else 8
    assert table.shape == (rows, columns), f"{reference}({reference.names[role]}={value!r}): shape {table.shape}"
    assert np.isfinite(table).all(), f"{reference}({reference.names[role]}={value!r}): non-finite values"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_torch_reference_returns_every_floating_dtype(dtype):
    """Every floating torch dtype is accepted and returned as asked."""
    assert torch_impl.positional_encoding(4, 8, dtype=dtype).dtype == dtype


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, "float32", np.dtype("float16")])
def test_family_returns_every_floating_numpy_dtype(dtype):
    """Every floating NumPy dtype spelling is accepted and returned as asked."""
    assert family.sinusoidal_encoding(4, 8, dtype=dtype).dtype == np.dtype(dtype)
