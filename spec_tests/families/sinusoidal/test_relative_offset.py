"""PE(p + k) is a fixed rotation M(k) of PE(p): the property the paper's §3.5 relies on.

The tables are the seed references' (for presets other than theirs, rearranged by hand by
:func:`spec_tests.implementations.seed_table`), never the oracle's: M(k) is built from the
same frequencies as the oracle, so an oracle table would pass whatever those frequencies were.
"""

import numpy as np
import pytest

from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention
from posenc_spec.families.sinusoidal.tolerance import element_tolerance
from spec_tests.assertions import assert_check, assert_within
from spec_tests.implementations import IMPLEMENTATIONS, by_dtype, ids, seed_table

PAIRS = by_dtype(IMPLEMENTATIONS)
OFFSETS = (1, 2, 7, 50, 123)
TABLE_SIZE = (1024, 512)  # the seeds' width, and long enough for every offset with room to spare
PRESET_SIZE = (512, 64)  # every preset once: enough rows for offset 123, enough pairs to tell presets apart
ROTATION_WIDTH = 16  # eight 2 x 2 blocks: every block shape the presets' layouts produce
FIT_LENGTH, FIT_WIDTH, FIT_BASE = 2048, 8, 100.0  # why these three: see the fit's docstring
# The fit says something only if its error bound is far below M's entries (cos and sin, of order 1).
FIT_MAX_BOUND = 1e-2


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
    exp = checks.expectation(*TABLE_SIZE, impl.convention, dtype)
    assert_check(checks.check_relative_offset(impl.make(*TABLE_SIZE, dtype), exp, OFFSETS), f"{impl}[{dtype}]")


@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
def test_dot_product_depends_only_on_the_offset(impl, dtype):
    """PE(p) . PE(p + k) is sum cos(k omega) whatever p is."""
    exp = checks.expectation(*TABLE_SIZE, impl.convention, dtype)
    assert_check(checks.check_dot_products(impl.make(*TABLE_SIZE, dtype), exp, OFFSETS), f"{impl}[{dtype}]")


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_maps_rows_by_rotation_and_keeps_dot_products(preset):
    """Each preset's table, built from the seed reference in float32, satisfies M(k) PE(p) =
    PE(p + k) and PE(p) . PE(p + k) = sum cos(k omega) with M(k) and omega of that preset."""
    exp = checks.expectation(*PRESET_SIZE, preset, "float32")
    table = seed_table(*PRESET_SIZE, preset, "float32")
    assert_check(checks.check_relative_offset(table, exp, OFFSETS), f"seed table of {preset}")
    assert_check(checks.check_dot_products(table, exp, OFFSETS), f"seed table of {preset}")


@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_rotation_is_orthogonal_and_its_inverse_is_minus_k(convention, offset):
    """M(k) M(k)^T = I and M(-k) = M(k)^T."""
    width = ROTATION_WIDTH
    m = checks.rotation(offset, width, convention)
    entry = rotation_entry_bound(offset, width, convention)
    # Each entry of M M^T sums two products of entries: 2 * (2 * entry bound) covers it.
    assert_within(m @ m.T, np.eye(width), 4 * entry, f"M({offset}) M({offset})^T under {convention}")
    assert_within(checks.rotation(-offset, width, convention), m.T, 2 * entry, f"M(-{offset}) vs M({offset})^T")


@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("a, b", [(1, 1), (3, 4), (50, -7), (123, 77)])
def test_rotations_compose(convention, a, b):
    """M(a + b) = M(a) M(b)."""
    width = ROTATION_WIDTH
    bound = (2 * (rotation_entry_bound(a, width, convention) + rotation_entry_bound(b, width, convention))
             + rotation_entry_bound(a + b, width, convention))
    assert_within(checks.rotation(a, width, convention) @ checks.rotation(b, width, convention),
                  checks.rotation(a + b, width, convention), bound, f"M({a}) M({b}) vs M({a + b}) under {convention}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("offset", [1, 5, 37])
def test_least_squares_fit_recovers_the_rotation(convention, dtype, offset):
    """Fitting PE(p + k) on PE(p) over all p of the seed-built table recovers M(k) to rounding.

    Base 100 at width 8 over 2048 positions keeps the fit well conditioned (the lowest
    frequency turns through 20 radians or more; with base 10000 it would turn through 0.2 and
    the columns would be nearly collinear). The bound is the first-order least-squares
    perturbation bound."""
    width = FIT_WIDTH
    conv = get_convention(convention, base=FIT_BASE)
    table = seed_table(FIT_LENGTH, width, conv, dtype)
    exp = checks.expectation(FIT_LENGTH, width, conv, dtype)
    fitted, bound = checks.fit_rotation(table, exp, offset)
    expected = checks.rotation(offset, width, conv)[np.ix_(exp.paired, exp.paired)]
    assert bound < FIT_MAX_BOUND, \
        f"the fit at {FIT_LENGTH}x{width} is too ill-conditioned to say anything (bound {bound:.3g})"
    assert_within(fitted, expected, bound, f"least-squares M({offset}) under {convention} [{dtype}]")
