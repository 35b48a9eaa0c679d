"""The float64 oracle against the mpmath one, within the bound the oracle states."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec import checks, oracle
from posenc_spec.conventions import Convention, UndefinedWidthError
from posenc_spec.tolerance import element_tolerance
from spec_tests.assertions import assert_within


def float64_bound(positions, width, convention):
    theta, log_omega = oracle.angles(positions, width, convention)
    return element_tolerance(theta, log_omega, "float64", "float64")


@pytest.mark.parametrize("num_positions, width", [(8192, 1024), (4096, 1024), (1024, 768)])
def test_float64_table_within_its_stated_bound_at_sampled_elements(num_positions, width):
    """Sampled rows and columns of large tables (the far end included) match mpmath."""
    rng = np.random.default_rng(20261122)
    rows = np.unique(np.append(rng.integers(0, num_positions, 30), num_positions - 1))
    cols = np.unique(rng.integers(0, width, 40))
    exact = oracle.exact_values(rows.astype(float), width, "vaswani", columns=cols)
    fast = oracle.table(num_positions, width)[np.ix_(rows, cols)]
    assert_within(fast, exact, float64_bound(num_positions, width, "vaswani")[np.ix_(rows, cols)],
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
    assert_within(fast, exact, float64_bound(num_positions, width, convention), f"{convention}, width {width}")


def test_exact_values_are_correctly_rounded_at_known_points():
    """sin(1) and cos(1) to 17 digits, for the first pair at position 1."""
    exact = oracle.exact_values(np.array([1.0]), 8, "vaswani", columns=[0, 1])
    assert exact[0, 0] == 0.8414709848078965 and exact[0, 1] == 0.5403023058681398


def test_degenerate_limit_gives_omega_one():
    """At d = 2 under shift 1, the limit tensor2tensor's guard takes is omega = 1."""
    assert oracle.table(3, 2, "tensor2tensor", degenerate_limit=True).tolist() == oracle.table(3, 2, "concat").tolist()
    with pytest.raises(UndefinedWidthError):
        oracle.table(3, 2, "tensor2tensor")


def test_relative_offset_check_works_at_the_degenerate_limit():
    """At d = 2 under shift 1 the derived checks use the same omega = 1 limit as the formula."""
    exp = checks.expectation(60, 2, "tensor2tensor", "float64", degenerate_limit=True)
    assert checks.check_relative_offset(exp.table, exp).passed
    assert not checks.check_relative_offset(exp.table[::-1], exp).passed
