"""PE(p + k) is a fixed rotation M(k) of PE(p): the property the paper's §3.5 relies on."""

import numpy as np
import pytest

from posenc_spec import checks
from posenc_spec.conventions import PRESETS, get_convention
from posenc_spec.tolerance import element_tolerance
from reference_impls import family
from spec_tests.assertions import assert_check, assert_within
from spec_tests.implementations import IMPLEMENTATIONS, by_dtype, ids

PAIRS = by_dtype(IMPLEMENTATIONS)
OFFSETS = (1, 2, 7, 50, 123)


def rotation_entry_bound(offset, width, convention):
    """M(k)'s entries are the formula at 'position' k in float64, so each is off by at most
    the float64 element bound at that angle."""
    conv = PRESETS[convention]
    omega = conv.frequencies(width)
    theta = conv.scale * offset * omega[conv.columns(width).pair]
    bound = element_tolerance(theta, -np.log(omega[conv.columns(width).pair]), "float64", "float64")
    return np.maximum.outer(bound, bound)


@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
def test_rotation_maps_each_row_to_the_row_k_later(impl, dtype):
    """M(k) PE(p) = PE(p + k) for every p and several k, within the propagated bounds."""
    exp = checks.expectation(1024, 512, impl.convention, dtype)
    assert_check(checks.check_relative_offset(impl.make(1024, 512, dtype), exp, OFFSETS), f"{impl}[{dtype}]")


@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
def test_dot_product_depends_only_on_the_offset(impl, dtype):
    """PE(p) . PE(p + k) is sum cos(k omega) whatever p is."""
    exp = checks.expectation(1024, 512, impl.convention, dtype)
    assert_check(checks.check_dot_products(impl.make(1024, 512, dtype), exp, OFFSETS), f"{impl}[{dtype}]")


@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_rotation_is_orthogonal_and_its_inverse_is_minus_k(convention, offset):
    """M(k) M(k)^T = I and M(-k) = M(k)^T."""
    width = 16
    m = checks.rotation(offset, width, convention)
    entry = rotation_entry_bound(offset, width, convention)
    # Each entry of M M^T sums two products of entries: 2 * (2 * entry bound) covers it.
    assert_within(m @ m.T, np.eye(width), 4 * entry, f"M({offset}) M({offset})^T under {convention}")
    assert_within(checks.rotation(-offset, width, convention), m.T, 2 * entry, f"M(-{offset}) vs M({offset})^T")


@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("a, b", [(1, 1), (3, 4), (50, -7), (123, 77)])
def test_rotations_compose(convention, a, b):
    """M(a + b) = M(a) M(b)."""
    width = 16
    bound = (2 * (rotation_entry_bound(a, width, convention) + rotation_entry_bound(b, width, convention))
             + rotation_entry_bound(a + b, width, convention))
    assert_within(checks.rotation(a, width, convention) @ checks.rotation(b, width, convention),
                  checks.rotation(a + b, width, convention), bound, f"M({a}) M({b}) vs M({a + b}) under {convention}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("offset", [1, 5, 37])
def test_least_squares_fit_recovers_the_rotation(convention, dtype, offset):
    """Fitting PE(p + k) on PE(p) over all p recovers M(k) to rounding.

    Base 100 at width 8 over 2048 positions keeps the fit well conditioned (the lowest
    frequency turns through 20 radians or more; with base 10000 it would turn through 0.2 and
    the columns would be nearly collinear). The bound is the first-order least-squares
    perturbation bound."""
    width = 8
    conv = get_convention(convention, base=100.0)
    table = family.sinusoidal_encoding(2048, width, conv, dtype).astype(np.float64)
    exp = checks.expectation(2048, width, conv, dtype)
    fitted, bound = checks.fit_rotation(table, exp, offset)
    expected = checks.rotation(offset, width, conv)[np.ix_(exp.paired, exp.paired)]
    # The fit says something only if its bound is far below M's entries (cos and sin, of order 1).
    assert bound < 1e-2, f"the fit at 2048x{width} is too ill-conditioned to say anything (bound {bound:.3g})"
    assert_within(fitted, expected, bound, f"least-squares M({offset}) under {convention} [{dtype}]")
