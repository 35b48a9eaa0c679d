"""Values in [-1, 1], unit pairs, row norms sqrt(d/2), PE(0), a geometric ladder of frequencies."""

import numpy as np
import pytest

from posenc_spec import checks
from posenc_spec.conventions import PRESETS
from spec_tests.assertions import assert_check
from spec_tests.implementations import IMPLEMENTATIONS, by_dtype, ids

PAIRS = by_dtype(IMPLEMENTATIONS)
SIZES = [(50, 512), (1024, 768), (4096, 64)]
BOUND_CHECKS = (checks.check_finite, checks.check_value_range, checks.check_pair_norms, checks.check_row_norms,
                checks.check_first_row, checks.check_frequencies)


@pytest.mark.parametrize("num_positions, width", SIZES, ids=[f"{n}x{d}" for n, d in SIZES])
@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
@pytest.mark.parametrize("check", BOUND_CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_reference_tables_keep_the_bounds(check, impl, dtype, num_positions, width):
    """Each bound holds for every reference table, within the propagated tolerance."""
    table = impl.make(num_positions, width, dtype)
    exp = checks.expectation(num_positions, width, impl.convention, dtype)
    result = check(table) if check is checks.check_finite else check(table, exp)
    assert_check(result, f"{impl}({num_positions}, {width}, {dtype})")


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("width", [8, 64, 768])
def test_frequencies_are_a_geometric_ladder_from_one(name, width):
    """omega_0 = 1, a constant ratio between neighbours, and the stated lowest frequency:
    base^-(d-2)/d at shift 0, exactly 1/base at shift 1."""
    conv = PRESETS[name]
    omega = conv.frequencies(width)
    h = width // 2
    lowest = conv.base ** (-(h - 1) / h) if conv.freq_shift == 0 else 1 / conv.base
    assert omega[0] == 1.0
    ratios = omega[1:] / omega[:-1]
    # Each omega is base**-e to within a few float64 ulps: ratios agree to ~1e-15 relative.
    np.testing.assert_allclose(ratios, ratios[0], rtol=8 * np.finfo(float).eps, err_msg=f"{name} d={width}")
    np.testing.assert_allclose(omega[-1], lowest, rtol=8 * np.finfo(float).eps, err_msg=f"{name} d={width}")


@pytest.mark.parametrize("check", BOUND_CHECKS[1:], ids=lambda check: check.__name__.removeprefix("check_"))
def test_bound_checks_reject_a_table_with_swapped_functions(check):
    """Each bound check can fail: cos where sin belongs breaks every one but the range and norms."""
    exp = checks.expectation(64, 16, "vaswani", "float64")
    swapped = exp.table[:, np.arange(16) ^ 1]
    result = check(swapped, exp)
    preserved = {checks.check_value_range, checks.check_pair_norms, checks.check_row_norms}
    assert result.passed == (check in preserved), result.message
    scaled = 1.001 * exp.table  # and a 0.1 % rescale breaks the range and the norms
    assert not check(scaled, exp).passed or check not in preserved, check(scaled, exp).message
