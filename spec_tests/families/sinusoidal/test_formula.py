"""Every reference implementation against the formula, element by element.

The seed references are judged against the float64 oracle; ``reference_impls.family`` IS
that oracle rounded to a dtype, so it is judged against mpmath (:func:`oracle.exact_values`)
instead, within its own stated bound: float64 arithmetic, then one rounding.
"""

import functools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import PRESETS, Convention, get_convention
from reference_impls import family, numpy_loop, numpy_vectorized, timestep, torch_impl
from spec_tests.assertions import assert_matches_formula, assert_within, float64_rounded_tolerance
from spec_tests.implementations import (
    FAMILY_DTYPES,
    FAMILY_SIZE,
    IMPLEMENTATIONS,
    TORCH_DTYPES,
    by_dtype,
    ids,
    seed_table,
)

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


# Every preset, and one member with every field overridden through family's keywords.
FAMILY_MEMBERS = {name: (name, {}) for name in PRESETS} | {
    "overridden": ("vaswani", {"layout": "concat", "first": "cos", "freq_shift": 1, "base": 500.0, "offset": 3,
                               "scale": 0.5}),
}
SAMPLED_ROWS = 40  # with every column: 2600 mpmath elements, about 0.03 s per member


@functools.cache
def _mpmath_sample(member: str):
    """Seeded rows (the first and last included) of a 1024 x 64 table, every column, in mpmath."""
    name, overrides = FAMILY_MEMBERS[member]
    conv = get_convention(name, **overrides)
    num_positions, width = FAMILY_SIZE
    rng = np.random.default_rng(sum(map(ord, member)))
    rows = np.unique(np.concatenate([[0, num_positions - 1], rng.integers(0, num_positions, SAMPLED_ROWS)]))
    return conv, rows, oracle.exact_values(rows.astype(np.float64), width, conv)


@pytest.mark.parametrize("dtype", FAMILY_DTYPES)
@pytest.mark.parametrize("member", FAMILY_MEMBERS)
def test_family_matches_mpmath_at_sampled_rows(member, dtype):
    """Every preset (and every field overridden by keyword), in every dtype, within the bound
    of float64 arithmetic rounded once to the dtype, of the mpmath values."""
    name, overrides = FAMILY_MEMBERS[member]
    conv, rows, exact = _mpmath_sample(member)
    num_positions, width = FAMILY_SIZE
    table = family.sinusoidal_encoding(num_positions, width, name, np.dtype(dtype), **overrides)
    assert table.dtype == np.dtype(dtype), f"family {member}: dtype {table.dtype}, asked {dtype}"
    assert_within(table[rows], exact, float64_rounded_tolerance(num_positions, width, conv, dtype, rows),
                  f"family {member} [{dtype}] against mpmath")


ODD_CASES = [(preset, odd, width) for preset in ("vaswani", "concat", "tensor2tensor", "guided-diffusion")
             for odd in ("zero-pad", "ceil") for width in (3, 5, 9, 33)
             if preset != "tensor2tensor" or (odd == "zero-pad" and width > 3)]  # ceil needs shift 0


@pytest.mark.parametrize("preset, odd, width", ODD_CASES, ids=[f"{p}-{o}-{w}" for p, o, w in ODD_CASES])
def test_family_odd_widths_match_exact_formula(preset, odd, width):
    """Odd widths follow the convention's odd behaviour: every element within the float64
    bound of the mpmath value, and a zero-padded last column exactly 0."""
    conv = get_convention(preset, odd=odd)
    table = family.sinusoidal_encoding(40, width, preset, odd=odd)
    assert table.shape == (40, width), f"family {preset} odd={odd} width {width}: shape {table.shape}"
    exact = oracle.exact_values(40, width, conv)
    assert_within(table, exact, float64_rounded_tolerance(40, width, conv, "float64"),
                  f"family {preset} odd={odd} width {width} against mpmath")
    if odd == "zero-pad":
        assert not table[:, -1].any(), f"family {preset} zero-pad width {width}: last column {table[:5, -1]}"


@pytest.mark.parametrize("preset", PRESETS)
def test_family_zero_pad_is_the_even_table_and_a_zero_column(preset):
    """Under zero-pad, width 9 is the width-8 table (built from the seed reference) and a zero column."""
    conv = get_convention(preset, odd="zero-pad")
    table = family.sinusoidal_encoding(300, 9, conv)
    even = seed_table(300, 8, preset, "float64")
    bound = float64_rounded_tolerance(300, 8, preset, "float64")
    # Both are float64 arithmetic within this bound of the exact value: their difference within twice it.
    assert_within(table[:, :8], even, 2 * bound, f"family {preset} zero-pad width 9 vs the seed's width 8")
    assert not table[:, 8].any(), f"family {preset} zero-pad: last column {table[:5, 8]}"


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
