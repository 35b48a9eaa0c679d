"""Every reference implementation against the formula, element by element."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec import checks, oracle
from posenc_spec.conventions import Convention, get_convention
from reference_impls import family, numpy_loop, numpy_vectorized, timestep, torch_impl
from spec_tests.assertions import assert_matches_formula
from spec_tests.implementations import IMPLEMENTATIONS, TORCH_DTYPES, by_dtype, ids

# The seeds' sizes, GPT-2's and a long wide one, and the small widths where members coincide.
GRID = [(50, 512), (300, 512), (1024, 768), (4096, 1024), (0, 8), (1, 2), (7, 2), (64, 4), (100, 6), (50, 8)]
PAIRS = by_dtype(IMPLEMENTATIONS)


@pytest.mark.parametrize("num_positions, width", GRID, ids=[f"{n}x{d}" for n, d in GRID])
@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
def test_matches_formula(impl, dtype, num_positions, width):
    """Each element lies within its own bound of the exact formula, in every dtype offered."""
    table = impl.make(num_positions, width, dtype)
    assert_matches_formula(table, f"{impl}({num_positions}, {width}, {dtype})",
                           checks.expectation(num_positions, width, impl.convention, dtype))


@given(num_positions=st.integers(0, 400), half_width=st.integers(1, 256),
       base=st.floats(2.0, 1e5), impl_index=st.integers(0, 2))
def test_seed_references_match_formula_at_drawn_sizes(num_positions, half_width, base, impl_index):
    """Drawn lengths, even widths and bases: the float64 seed references follow the formula."""
    make = (numpy_loop.positional_encoding, numpy_vectorized.positional_encoding,
            lambda n, d, base: torch_impl.positional_encoding(n, d, base, dtype=torch.float64).numpy())[impl_index]
    width = 2 * half_width
    exp = checks.expectation(num_positions, width, Convention(base=base), "float64")
    assert_matches_formula(make(num_positions, width, base), f"reference {impl_index} base {base!r}", exp)


@given(steps=st.lists(st.floats(0, 1000, width=32), min_size=1, max_size=64), half_width=st.integers(1, 64))
def test_timestep_embedding_matches_formula_at_fractional_steps(steps, half_width):
    """Fractional (continuous-time) steps: the embedding follows the concat formula at the exact steps."""
    timesteps = torch.tensor(steps, dtype=torch.float32)
    width = 2 * half_width
    exp = checks.expectation(timesteps.numpy(), width, "concat", "float32")
    assert_matches_formula(timestep.timestep_embedding(timesteps, width).numpy(), f"timestep({steps[:3]}..)", exp)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; runs where torch.cuda.is_available()")
def test_timestep_embedding_stays_on_the_timesteps_device():
    """The result lives where the timesteps live."""
    steps = torch.arange(4, device="cuda")
    assert timestep.timestep_embedding(steps, 8).device == steps.device


ODD_CASES = [(preset, odd, width) for preset in ("vaswani", "concat", "tensor2tensor", "guided-diffusion")
             for odd in ("zero-pad", "ceil") for width in (3, 5, 9, 33)
             if preset != "tensor2tensor" or (odd == "zero-pad" and width > 3)]  # ceil needs shift 0


@pytest.mark.parametrize("preset, odd, width", ODD_CASES, ids=[f"{p}-{o}-{w}" for p, o, w in ODD_CASES])
def test_family_odd_widths_match_exact_formula(preset, odd, width):
    """Odd widths follow the convention's odd behaviour, checked against the mpmath values."""
    table = family.sinusoidal_encoding(40, width, preset, odd=odd)
    exp = checks.expectation(40, width, get_convention(preset, odd=odd), "float64")
    exact = np.asarray(oracle.exact_values(40, width, exp.convention))
    assert_matches_formula(exact, "mpmath", exp)
    assert_matches_formula(table, f"family {preset} odd={odd}", exp)


@pytest.mark.parametrize("width, odd", [(2, "error"), (3, "zero-pad")])
def test_family_has_no_value_with_one_frequency_under_shift_one(width, odd):
    """With one frequency, shift 1 makes e_0 = 0/0: the family raises rather than return NaN."""
    with pytest.raises(family.UndefinedWidthError, match="0/0"):
        family.sinusoidal_encoding(4, width, "tensor2tensor", odd=odd)


def test_torch_reference_leaves_the_default_dtype_alone():
    """Asking for float16 output does not change torch's default dtype."""
    before = torch.get_default_dtype()
    torch_impl.positional_encoding(4, 8, dtype=TORCH_DTYPES["float16"])
    assert torch.get_default_dtype() == before
