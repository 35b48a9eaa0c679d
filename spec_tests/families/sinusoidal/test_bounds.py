"""Values in [-1, 1], unit pairs, row norms sqrt(d/2), PE(0), a geometric ladder of frequencies.

The checks of :mod:`posenc_spec.families.sinusoidal.properties` judge the seed references; ``reference_impls.family``
(the float64 oracle rounded) is held to the same properties as closed forms written out
here: PE(0) per layout, ``sin^2 + cos^2 = 1`` over partner columns named by hand, and the
highest and lowest frequencies (1, and exactly ``1/base`` under shift 1).
"""

import numpy as np
import pytest

from posenc_spec import results
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention
from posenc_spec.families.sinusoidal.tolerance import element_tolerance
from reference_impls import family
from spec_tests.assertions import assert_check, assert_within, float64_rounded_tolerance
from spec_tests.implementations import FAMILY_DTYPES, FAMILY_SIZE, IMPLEMENTATIONS, by_dtype, ids

PAIRS = by_dtype(IMPLEMENTATIONS)
SIZES = [(50, 512), (1024, 768), (4096, 64)]
BOUND_CHECKS = (results.check_finite, checks.check_value_range, checks.check_pair_norms, checks.check_row_norms,
                checks.check_first_row, checks.check_frequencies)


@pytest.mark.parametrize("num_positions, width", SIZES, ids=[f"{n}x{d}" for n, d in SIZES])
@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
@pytest.mark.parametrize("check", BOUND_CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_reference_tables_keep_the_bounds(check, impl, dtype, num_positions, width):
    """Each bound holds for every reference table, within the propagated tolerance."""
    table = impl.make(num_positions, width, dtype)
    exp = checks.expectation(num_positions, width, impl.convention, dtype)
    result = check(table) if check is results.check_finite else check(table, exp)
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
    # The oracle's table serves as data here: the subject is each check's power to fail.
    swapped = exp.table[:, np.arange(16) ^ 1]
    result = check(swapped, exp)
    preserved = {checks.check_value_range, checks.check_pair_norms, checks.check_row_norms}
    assert result.passed == (check in preserved), result.message
    scaled = 1.001 * exp.table  # and a 0.1 % rescale breaks the range and the norms
    assert not check(scaled, exp).passed or check not in preserved, check(scaled, exp).message


# Written out per preset at width 8: the first row for position 0 (sin 0 = 0, cos 0 = 1)...
POSITION_ZERO = {"vaswani": [0, 1, 0, 1, 0, 1, 0, 1], "concat": [0, 0, 0, 0, 1, 1, 1, 1],
                 "tensor2tensor": [0, 0, 0, 0, 1, 1, 1, 1], "fairseq": [0, 0, 0, 0, 1, 1, 1, 1],
                 "guided-diffusion": [1, 1, 1, 1, 0, 0, 0, 0]}
# ... and, at width d with h = d/2: the (sine column, cosine column) of the highest frequency
# (omega 1) and of the lowest, and the lowest frequency itself (base ** -1 under shift 1).
HAND_COLUMNS = {
    "vaswani": lambda d, h: ((0, 1), (d - 2, d - 1)),
    "concat": lambda d, h: ((0, h), (h - 1, d - 1)),
    "tensor2tensor": lambda d, h: ((0, h), (h - 1, d - 1)),
    "fairseq": lambda d, h: ((0, h), (h - 1, d - 1)),
    "guided-diffusion": lambda d, h: ((h, 0), (d - 1, h - 1)),
}
LOWEST = {"vaswani": lambda base, h: base ** (-(h - 1) / h), "concat": lambda base, h: base ** (-(h - 1) / h),
          "tensor2tensor": lambda base, h: 1 / base, "fairseq": lambda base, h: 1 / base,
          "guided-diffusion": lambda base, h: base ** (-(h - 1) / h)}


@pytest.mark.parametrize("dtype", FAMILY_DTYPES)
@pytest.mark.parametrize("preset", PRESETS)
def test_family_position_zero_is_sin_0_and_cos_0(preset, dtype):
    """The row of position 0 (after the offset) is exactly 0 under sine and 1 under cosine,
    placed as written out above, in every dtype."""
    offset = PRESETS[preset].offset
    row = family.sinusoidal_encoding(np.array([-offset]), 8, preset, np.dtype(dtype))[0]
    assert row.tolist() == POSITION_ZERO[preset], f"family {preset} [{dtype}] PE(0) = {row.tolist()}"


@pytest.mark.parametrize("dtype", FAMILY_DTYPES)
@pytest.mark.parametrize("preset", PRESETS)
def test_family_pairs_have_unit_norm_and_values_in_range(preset, dtype):
    """Every value lies in [-1, 1], and each (sine, cosine) pair, its columns named by hand
    (2k and 2k+1 interleaved, k and k + h concatenated), has ``sin^2 + cos^2 = 1`` within
    ``2(t1 + t2) + t1^2 + t2^2`` for element bounds t1, t2."""
    num_positions, width = FAMILY_SIZE
    half = width // 2
    table = family.sinusoidal_encoding(num_positions, width, preset, np.dtype(dtype)).astype(np.float64)
    assert np.abs(table).max() <= 1, f"family {preset} [{dtype}]: |value| up to {np.abs(table).max()!r}"
    if PRESETS[preset].layout == "interleaved":
        first, second = np.arange(0, width, 2), np.arange(1, width, 2)
    else:
        first, second = np.arange(half), half + np.arange(half)
    bound = float64_rounded_tolerance(num_positions, width, preset, dtype)
    t1, t2 = bound[:, first], bound[:, second]
    norms = table[:, first] ** 2 + table[:, second] ** 2
    assert_within(norms, np.ones_like(norms), 2 * (t1 + t2) + t1**2 + t2**2,
                  f"family {preset} [{dtype}] sin^2 + cos^2")


@pytest.mark.parametrize("base", [10000.0, 500.0])
@pytest.mark.parametrize("preset", PRESETS)
def test_family_highest_and_lowest_frequencies_are_closed_forms(preset, base):
    """The first pair turns at omega = 1 (``sin(p + offset)``) and the last at the lowest
    frequency: ``base ** -((h-1)/h)`` under shift 0, exactly ``1/base`` under shift 1. Each
    column is within the float64 bound of NumPy's sine and cosine of the closed-form angle,
    plus that bound again for NumPy's own evaluation."""
    width, half = 64, 32
    conv = get_convention(preset, base=base)
    positions = np.arange(2000, dtype=np.float64) + conv.offset
    table = family.sinusoidal_encoding(2000, width, preset, base=base)
    for (sin_column, cos_column), omega in zip(HAND_COLUMNS[preset](width, half), (1.0, LOWEST[preset](base, half)),
                                               strict=True):
        theta = positions * omega
        bound = 2 * element_tolerance(theta, -np.log(omega), "float64", "float64")
        what = f"family {preset} base {base:g} at omega {omega:.6g}"
        assert_within(table[:, sin_column], np.sin(theta), bound, f"{what}: column {sin_column} vs sin")
        assert_within(table[:, cos_column], np.cos(theta), bound, f"{what}: column {cos_column} vs cos")
