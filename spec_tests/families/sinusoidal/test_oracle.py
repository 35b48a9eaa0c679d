"""The float64 oracle against the mpmath one, within the bound the oracle states, and both
against values that share no code with them: the formula written out per element in
mpmath, and closed forms."""

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import Convention, UndefinedWidthError
from spec_tests.assertions import assert_within, float64_rounded_tolerance


@pytest.mark.parametrize("num_positions, width", [(8192, 1024), (4096, 1024), (1024, 768)])
def test_float64_table_within_its_stated_bound_at_sampled_elements(num_positions, width):
    """Sampled rows and columns of large tables (the far end included) match mpmath."""
    rng = np.random.default_rng(20261122)
    rows = np.unique(np.append(rng.integers(0, num_positions, 30), num_positions - 1))
    cols = np.unique(rng.integers(0, width, 40))
    positions = rows.astype(np.float64)
    exact = oracle.exact_values(positions, width, "vaswani", columns=cols)
    # Row p of the n-row table is the same arithmetic on the same float64 p as this one-row
    # table of position p: only the sampled rows are formed (the whole 8192 x 1024 took 0.75 s).
    fast = oracle.table(positions, width)[:, cols]
    assert_within(fast, exact, float64_rounded_tolerance(positions, width, "vaswani", "float64", columns=cols),
                  f"float64 oracle at {num_positions}x{width}")


conventions = st.builds(
    Convention,
    layout=st.sampled_from(["interleaved", "concat"]), first=st.sampled_from(["sin", "cos"]),
    freq_shift=st.sampled_from([0, 1]), base=st.floats(1.5, 1e5), offset=st.integers(0, 3),
    scale=st.floats(0.5, 1000), odd=st.sampled_from(["error", "zero-pad"]),
)


@given(convention=conventions, width=st.integers(2, 40), num_positions=st.integers(0, 30))
def test_float64_table_matches_mpmath_for_drawn_conventions(convention, width, num_positions):
    """Any member of the family, any width it defines: float64 within bound of mpmath."""
    try:
        fast = oracle.table(num_positions, width, convention)
    except UndefinedWidthError:
        h = width // 2
        assert (width % 2 and convention.odd == "error") or h - convention.freq_shift <= 0
        return
    exact = oracle.exact_values(num_positions, width, convention)
    assert_within(fast, exact, float64_rounded_tolerance(num_positions, width, convention, "float64"),
                  f"{convention}, width {width}")


def test_exact_values_are_correctly_rounded_at_known_points():
    """sin(1) and cos(1) to 17 digits, for the first pair at position 1."""
    exact = oracle.exact_values(np.array([1.0]), 8, "vaswani", columns=[0, 1])
    assert exact[0, 0] == 0.8414709848078965 and exact[0, 1] == 0.5403023058681398


# Elements of width-8 tables (h = 4), each written out from the formula by hand: which
# function, which exponent e_k = numerator / denominator, where the offset goes.
def _written_out(function, numerator, denominator=1, offset=0, base=10000):
    """``function((p + offset) * base ** -(numerator / denominator))``, at the caller's mpmath precision."""
    return lambda p: function((p + offset) * mpmath.mpf(base) ** -(mpmath.mpf(numerator) / denominator))


WRITTEN_OUT = [
    ("vaswani", 0, _written_out(mpmath.sin, 0)),
    ("vaswani", 5, _written_out(mpmath.cos, 2, 4)),  # column 2k+1 = cos of pair k = 2, e = 2k/d
    ("vaswani", 6, _written_out(mpmath.sin, 3, 4)),  # column 2k = sin of pair 3
    ("concat", 2, _written_out(mpmath.sin, 2, 4)),  # the h sines first
    ("concat", 5, _written_out(mpmath.cos, 1, 4)),  # then the cosines: column h + k
    ("tensor2tensor", 1, _written_out(mpmath.sin, 1, 3)),  # e = k/(h-1)
    ("tensor2tensor", 3, _written_out(mpmath.sin, 1)),  # the lowest frequency is 1/base
    ("tensor2tensor", 7, _written_out(mpmath.cos, 1)),
    ("fairseq", 3, _written_out(mpmath.sin, 1, offset=2)),  # row p is position p + 2
    ("fairseq", 6, _written_out(mpmath.cos, 2, 3, offset=2)),
    ("guided-diffusion", 1, _written_out(mpmath.cos, 1, 4)),  # the cosines first
    ("guided-diffusion", 7, _written_out(mpmath.sin, 3, 4)),
]


@pytest.mark.parametrize("position", [3.0, 1000.0])
@pytest.mark.parametrize("preset, column, formula", WRITTEN_OUT,
                         ids=[f"{preset}-column{column}" for preset, column, _ in WRITTEN_OUT])
def test_exact_values_match_the_formula_written_out(preset, column, formula, position):
    """mpmath through the convention's column map and exponents gives the same correctly
    rounded float64 as the formula written out by hand for that element (both carry 40
    digits: they could round apart only within 1e-38 of a float64 boundary); the float64
    table is within its bound of it."""
    with mpmath.workdps(oracle.EXACT_DIGITS):
        by_hand = float(formula(mpmath.mpf(position)))
    exact = oracle.exact_values(np.array([position]), 8, preset, columns=[column])[0, 0]
    assert exact == by_hand, f"{preset} column {column} at {position}: exact_values {exact!r}, by hand {by_hand!r}"
    fast = oracle.table(np.array([position]), 8, preset)[0, column]
    bound = float64_rounded_tolerance(np.array([position]), 8, preset, "float64")[0, column]
    assert abs(fast - by_hand) <= bound, f"{preset} column {column}: table {fast!r}, by hand {by_hand!r}"


def test_degenerate_limit_gives_omega_one():
    """At d = 2 under shift 1, the limit tensor2tensor's guard takes is omega = 1: the table
    is ``[sin p, cos p]``; without the guard the width has no value."""
    positions = np.arange(50.0)
    closed_form = np.stack([np.sin(positions), np.cos(positions)], axis=1)
    table = oracle.table(50, 2, "tensor2tensor", degenerate_limit=True)
    assert_within(table, closed_form, 2 * float64_rounded_tolerance(50, 2, "concat", "float64"),
                  "tensor2tensor at d = 2, omega = 1")
    with pytest.raises(UndefinedWidthError):
        oracle.table(3, 2, "tensor2tensor")


def test_relative_offset_check_works_at_the_degenerate_limit():
    """At d = 2 under shift 1 the derived checks use the same omega = 1 limit as the formula:
    the closed-form table ``[sin p, cos p]`` passes, its rows reversed fail."""
    exp = checks.expectation(60, 2, "tensor2tensor", "float64", degenerate_limit=True)
    positions = np.arange(60.0)
    closed_form = np.stack([np.sin(positions), np.cos(positions)], axis=1)
    assert checks.check_relative_offset(closed_form, exp).passed
    assert not checks.check_relative_offset(closed_form[::-1], exp).passed
