"""ULP distances: one step per representable value, the special values' rules, no overflow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec.regression.ulp import (
    HISTOGRAM_BUCKETS,
    INFINITE_ULP,
    MAX_FINITE_ULP,
    format_ulp,
    ulp_distance,
    ulp_histogram,
)

FLOATS = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
BITS = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}


def _distance(a, b, dtype: str) -> int:
    """One distance as a Python int (INFINITE_ULP stays 2**64 - 1)."""
    holding = np.uint16 if dtype == "bfloat16" else FLOATS[dtype]
    return int(ulp_distance(np.array([a], holding), np.array([b], holding), dtype)[0])


def _from_bits(bits: int, dtype: str):
    return np.array(bits, dtype=BITS[dtype]).view(FLOATS[dtype])[()]


def _rank_of_every_pattern(values: np.ndarray) -> np.ndarray:
    """Rank of each bit pattern among the distinct non-NaN values it can encode (-0 and +0 alike):
    the definition of the distance, by enumeration."""
    order = np.unique(values[~np.isnan(values)])
    return np.searchsorted(order, values)


def _every_16_bit_value(dtype: str) -> np.ndarray:
    patterns = np.arange(2**16, dtype=np.uint32)
    with np.errstate(invalid="ignore"):  # widening a signalling NaN pattern flags it as invalid
        if dtype == "bfloat16":  # the upper half of a float32
            return (patterns << 16).view(np.float32).astype(np.float64)
        return patterns.astype(np.uint16).view(np.float16).astype(np.float64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_distances_count_the_values_between(dtype):
    """For seeded random pairs of non-NaN patterns, the distance is the difference of their ranks
    among all representable values; infinities are only at distance 0 from themselves."""
    values = _every_16_bit_value(dtype)
    rank = _rank_of_every_pattern(values)
    patterns = np.random.default_rng(20240229).integers(0, 2**16, size=(2, 50_000)).astype(np.uint16)
    patterns = patterns[:, ~np.isnan(values[patterns]).any(axis=0)]
    old, new = patterns
    holding = (lambda bits: bits) if dtype == "bfloat16" else (lambda bits: bits.view(np.float16))
    distance = ulp_distance(holding(old), holding(new), dtype)
    expected = np.abs(rank[old].astype(np.int64) - rank[new]).astype(np.uint64)
    infinite = (np.isinf(values[old]) | np.isinf(values[new])) & (values[old] != values[new])
    expected[infinite] = INFINITE_ULP
    assert infinite.any() and (distance == expected).all(), \
        f"{dtype}: {int((distance != expected).sum())} pairs differ from the rank difference"


@pytest.mark.parametrize(("dtype", "old_bits", "new_bits", "steps"), [
    ("bfloat16", 0x3F80, 0x3F81, 1),                 # 1.0 and the next bfloat16 (1 + 2**-7)
    ("bfloat16", 0x0001, 0x8001, 2),                 # smallest subnormal, either side of zero
    ("bfloat16", 0x3F80, 0xBF80, 2 * 0x3F80),        # 1.0 and -1.0: 0x3F80 steps from zero each
    ("float16", 0x3C00, 0x3C01, 1),                  # 1.0 and 1 + 2**-10
    ("float16", 0x3BFF, 0x3C00, 1),                  # across a binade: 1 - 2**-11 and 1.0
    ("float16", 0x03FF, 0x0400, 1),                  # largest subnormal and smallest normal
    ("float16", 0x0000, 0x8000, 0),                  # +0 and -0
    ("float16", 0x7E00, 0xFC01, 0),                  # two NaNs with other signs and payloads
])
def test_16_bit_distances_by_hand(dtype, old_bits, new_bits, steps):
    """A few patterns whose distance is read off their bits."""
    holding = np.uint16 if dtype == "bfloat16" else np.float16
    old = np.array([old_bits], np.uint16).view(holding)
    new = np.array([new_bits], np.uint16).view(holding)
    assert int(ulp_distance(old, new, dtype)[0]) == steps, f"{dtype} {old_bits:#06x} vs {new_bits:#06x}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values(dtype):
    """Signed zeros and NaN payloads do not count; inf against anything else is infinite."""
    kind = FLOATS[dtype]
    width = np.dtype(kind).itemsize * 8
    quiet_nan = int(np.array(np.nan, kind).view(BITS[dtype]))
    other_nan = _from_bits((1 << (width - 1)) | quiet_nan | 1, dtype)  # negative, another payload
    biggest = np.finfo(kind).max
    assert _distance(0.0, -0.0, dtype) == 0
    assert _distance(np.nan, other_nan, dtype) == 0
    assert _distance(np.inf, np.inf, dtype) == 0 and _distance(-np.inf, -np.inf, dtype) == 0
    for a, b in [(np.inf, biggest), (np.inf, -np.inf), (np.nan, 0.0), (np.nan, np.inf), (-np.inf, 1.0)]:
        assert _distance(a, b, dtype) == _distance(b, a, dtype) == int(INFINITE_ULP), f"{dtype}: {a} vs {b}"
    assert format_ulp(INFINITE_ULP) == "inf" and format_ulp(np.uint64(3)) == "3"


def test_float64_across_zero_does_not_overflow():
    """From -max to +max is twice the number of steps from 0 to max: 2047 exponents of 2**52
    mantissas each, less one. That exceeds int64 and stays below the infinite sentinel."""
    biggest = np.finfo(np.float64).max
    steps_from_zero = 2047 * 2**52 - 1
    assert _distance(0.0, biggest, "float64") == steps_from_zero
    assert _distance(-biggest, biggest, "float64") == 2 * steps_from_zero
    assert 2**63 < 2 * steps_from_zero < int(INFINITE_ULP)
    tiny = np.nextafter(0.0, 1.0)
    assert _distance(-tiny, tiny, "float64") == 2


def test_complex_takes_the_larger_part():
    """Complex values: the larger of the real and imaginary parts' distances."""
    one = np.float32(1)
    three_steps = np.nextafter(np.nextafter(np.nextafter(one, 2 * one), 2 * one), 2 * one)
    old = np.array([1 + 1j, 1 + 1j], np.complex64)
    new = np.array([complex(np.nextafter(one, 2 * one), three_steps), complex(1, np.nan)], np.complex64)
    assert ulp_distance(old, new, "complex64").tolist() == [3, int(INFINITE_ULP)]


def test_integer_distances_are_exact_and_never_infinite():
    """Integers: |a - b|, computed without overflow, saturated below the infinite sentinel."""
    extremes = np.array([np.iinfo(np.int64).min, -3, 0]), np.array([np.iinfo(np.int64).max, 5, 0])
    assert ulp_distance(*extremes, "int64").tolist() == [int(MAX_FINITE_ULP), 8, 0]
    assert ulp_distance(np.array([True, False]), np.array([False, False]), "bool").tolist() == [1, 0]


def test_histogram_buckets_hold_their_edges():
    """Each bucket counts its smallest and largest distance; an infinite one lands in the last."""
    distances, expected, low = [], {}, 0
    for label, limit in HISTOGRAM_BUCKETS:
        edges = {low, int(INFINITE_ULP) if limit is None else limit}
        distances += sorted(edges)
        expected[label] = len(edges)
        low = None if limit is None else limit + 1
    assert ulp_histogram(np.array(distances, dtype=np.uint64)) == expected


@pytest.mark.parametrize(("old", "new", "dtype", "error", "message"), [
    (np.zeros(2, np.float32), np.zeros(2, np.float32), "float8", ValueError, "dtype must be one of"),
    (np.zeros(2, np.float64), np.zeros(2, np.float64), "float32", TypeError, "old holds float64 where float32"),
    (np.zeros(2, np.float32), np.zeros(3, np.float32), "float32", ValueError, r"same shape; got \(2,\) and \(3,\)"),
    ([0.0], np.zeros(1), "float64", TypeError, "old must be a NumPy array, got list"),
])
def test_bad_input_is_named(old, new, dtype, error, message):
    """Unknown dtypes, values held in the wrong dtype and mismatched shapes are refused by name."""
    with pytest.raises(error, match=message):
        ulp_distance(old, new, dtype)


# -- properties (hypothesis replays fixed examples under CI=true) -----------------------------------

float_bits = st.sampled_from(["float32", "float64"]).flatmap(
    lambda dtype: st.tuples(st.just(dtype), st.lists(st.integers(0, 2 ** (8 * np.dtype(FLOATS[dtype]).itemsize) - 1),
                                                     min_size=3, max_size=3)))


@given(float_bits)
def test_symmetric_and_zero_exactly_when_equal(case):
    """ulp(a, b) = ulp(b, a), and it is 0 exactly when a == b or both are NaN (any bit patterns)."""
    dtype, patterns = case
    a, b = (_from_bits(bits, dtype) for bits in patterns[:2])
    distance = _distance(a, b, dtype)
    assert distance == _distance(b, a, dtype)
    assert (distance == 0) == bool(a == b or (np.isnan(a) and np.isnan(b))), f"{dtype}: {a!r} vs {b!r}: {distance}"


@given(float_bits)
def test_nextafter_is_one_step(case):
    """The next representable value, up or down, is at distance 1 (across zero too)."""
    dtype, patterns = case
    a = _from_bits(patterns[0], dtype)
    for direction in (np.inf, -np.inf):
        step = np.nextafter(a, FLOATS[dtype](direction))
        if np.isfinite(a) and np.isfinite(step):
            assert _distance(a, step, dtype) == 1, f"{dtype}: {a!r} -> {step!r}"


@given(float_bits)
def test_distances_add_along_a_monotone_chain(case):
    """For finite a <= b <= c, ulp(a, c) = ulp(a, b) + ulp(b, c): the triangle inequality, with
    equality on a chain, summed as Python ints (no wrap-around)."""
    dtype, patterns = case
    values = sorted(float(v) for v in (_from_bits(bits, dtype) for bits in patterns) if np.isfinite(v))
    if len(values) == 3:
        a, b, c = values
        assert _distance(a, c, dtype) == _distance(a, b, dtype) + _distance(b, c, dtype), f"{dtype}: {values}"
