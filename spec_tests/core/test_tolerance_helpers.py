"""The tolerance helpers: dtype names, the comparison report, the assertion helper."""

import itertools

import numpy as np
import pytest
import torch

from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.tolerance import BLOCK_ELEMENTS, compare, compare_blocks, dtype_name, ratios, unit_roundoff
from spec_tests.assertions import assert_within


@pytest.mark.parametrize("dtype", [np.float32, torch.float32, "float32", np.dtype("float32")])
def test_dtype_names_agree_across_libraries(dtype):
    """NumPy, torch and string spellings of a dtype name the same precision."""
    assert dtype_name(dtype) == "float32" and unit_roundoff(dtype) == 2.0**-24


def test_bfloat16_and_integer_dtypes():
    """bfloat16 is known (8 bits of precision); integer dtypes have no tolerance."""
    assert unit_roundoff(torch.bfloat16) == 2.0**-8
    with pytest.raises(ValueError, match="no tolerance is defined for dtype"):
        unit_roundoff(np.int64)


def test_compare_reports_the_worst_element():
    """The comparison names the worst element, its values and how many are out of bound."""
    expected = np.zeros((3, 4))
    actual = expected.copy()
    actual[1, 2], actual[2, 3] = 0.5, 0.05
    result = compare(actual, expected, 0.1)
    assert not result.ok and result.num_failing == 1 and result.worst_index == (1, 2)
    assert "worst at [1, 2]: got 0.5, expected 0" in result.describe()


def test_compare_finds_the_first_worst_element_of_a_table_many_blocks_long():
    """A table compared a block of rows at a time gives what one pass over it gives: the
    first of equally bad elements (in the second and the last block), every element out of
    bound counted, and the largest error wherever it is."""
    width = 1024
    rows = 3 * BLOCK_ELEMENTS // width + 5
    expected, tolerance = np.zeros((rows, width)), np.full((rows, width), 0.5)
    tolerance[rows // 2] = 10.0
    actual = expected.copy()
    actual[rows - 1, 3] = actual[rows // 3, 900] = 1.0  # ratio 2 twice
    actual[rows // 2, 0] = 5.0  # the largest error, within its bound
    result = compare(actual, expected, tolerance)
    found = (result.worst_index, result.max_ratio, result.num_failing, result.max_error)
    assert found == ((rows // 3, 900), 2.0, 2, 5.0), result


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_compare_reads_a_narrow_table_exactly(dtype):
    """A float16 or float32 table is compared as the float64 values it holds."""
    expected = checks.expectation(300, 64, "vaswani", dtype).table
    actual = expected.astype(dtype)
    assert compare(actual, expected, 1e-9) == compare(actual.astype(np.float64), expected, 1e-9)


def test_compare_accepts_a_single_value():
    """Zero-dimensional arrays compare as one element."""
    result = compare(np.float64(0.5), np.float64(0.25), 0.5)
    assert (result.ok, result.worst_index, result.worst_error, result.size) == (True, (), 0.25, 1), result


def test_compare_counts_nan_as_infinite_error():
    """NaN never hides inside a comparison."""
    result = compare(np.array([np.nan]), np.array([0.0]), 1.0)
    assert not result.ok and result.max_error == np.inf


def test_a_nan_deviation_reports_an_infinite_ratio():
    """A derived check reads NaN as compare does: an infinite error, so an infinite ratio."""
    exp = checks.expectation(4, 4, "vaswani", "float64")
    table = exp.table.copy()
    table[1, 0] = np.nan
    result = checks.check_pair_norms(table, exp)
    assert result.status == "failed" and result.worst.error == np.inf and result.worst.ratio == np.inf, result
    assert result.worst.ratio == compare(table, exp.table, exp.tolerance).max_ratio


def test_compare_refuses_mismatched_shapes():
    """A table of the wrong shape is an error, not a broadcast."""
    with pytest.raises(ValueError, match=r"shape \(2, 3\) differs from the expected \(3, 2\)"):
        compare(np.zeros((2, 3)), np.zeros((3, 2)), 1.0)


def test_assert_within_names_the_worst_element():
    """The assertion helper's message carries what a reader needs to act."""
    with pytest.raises(AssertionError, match=r"table x: 1 of 4 out of bound; worst at \[1, 0\]: got 2.0"):
        assert_within(np.array([[0.0, 0.0], [2.0, 0.0]]), np.zeros((2, 2)), 0.5, "table x")
    assert_within(np.ones(3), np.ones(3), 0.0, "equal tables pass a zero bound")


def _whole_table_comparison(actual, expected, tolerance):
    """What :func:`ratios` makes of the whole table in one pass: the worst element's index,
    the largest ratio, the elements out of bound, the largest error."""
    error = np.abs(np.asarray(actual, np.float64) - expected)
    max_error = float(np.nan_to_num(error, nan=np.inf).max())
    ratio = ratios(error, np.broadcast_to(tolerance, error.shape))
    at = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return tuple(int(i) for i in at), float(ratio[at]), int(np.count_nonzero(ratio > 1)), max_error


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ">f4", np.int32])
@pytest.mark.parametrize("seed", range(4))
def test_compare_by_blocks_is_the_one_pass_rule(dtype, seed):
    """Block by block, on tables of any dtype holding NaN, Inf, exact zeros under zero bounds,
    errors under zero and infinite bounds, compare finds the same worst element, ratio, count
    and largest error as one pass of :func:`ratios` over the whole table."""
    generator = np.random.default_rng(seed)
    rows, width = 2 * BLOCK_ELEMENTS // 96 + 7, 96
    expected = np.round(generator.standard_normal((rows, width)) * 4)
    tolerance = generator.uniform(0.0, 2.0, (rows, width))
    actual = (expected + generator.standard_normal((rows, width))).astype(dtype)
    spots = [tuple(generator.integers((rows, width))) for _ in range(8)]
    tolerance[spots[0]] = 0.0
    actual[spots[0]] = expected[spots[0]]  # 0 / 0: within bound
    tolerance[spots[1]] = 0.0  # an error over a zero bound: infinite
    tolerance[spots[2]] = np.inf
    if np.dtype(dtype).kind == "f":
        actual[spots[3]], actual[spots[4]], actual[spots[5]] = np.nan, np.inf, -np.inf
        tolerance[spots[4]] = np.inf  # an infinite error over an infinite bound: ratio 0
    result = compare(actual, expected, tolerance)
    found = (result.worst_index, result.max_ratio, result.num_failing, result.max_error)
    assert found == _whole_table_comparison(actual, expected, tolerance)


def test_compare_of_uneven_blocks_is_compare_of_the_whole():
    """A table handed to compare_blocks in blocks of uneven sizes (one row, many, the rest) is
    judged as compare judges it whole: worst element by its index in the whole table, the
    count over every block, the largest error wherever it is."""
    generator = np.random.default_rng(7)
    expected = generator.standard_normal((97, 40))
    tolerance = generator.uniform(0.0, 1e-3, expected.shape)
    actual = expected + generator.uniform(-2e-3, 2e-3, expected.shape)
    edges = (0, 1, 30, 31, 90, 97)
    blocks = ((actual[a:b], expected[a:b], tolerance[a:b]) for a, b in itertools.pairwise(edges))
    assert repr(compare_blocks(blocks, actual.shape)) == repr(compare(actual, expected, tolerance))


@pytest.mark.parametrize("seed", range(3))
def test_elements_not_compared_stand_at_zero(seed):
    """Blocks that name elements not compared (holding NaN, Inf or a wrong value) compare as
    the table with both values 0 there: the same worst element and values, ratio, count and
    largest error, a perfect match included (its worst element at 0 where it is one of them)."""
    generator = np.random.default_rng(seed)
    expected = generator.standard_normal((64, 50))
    tolerance = generator.uniform(1e-3, 1.0, expected.shape)
    ignored = generator.random(expected.shape) < 0.3
    ignored[0, 0] = True
    for actual in (expected + generator.uniform(-2.0, 2.0, expected.shape), expected.copy()):
        actual[ignored] = generator.choice([np.nan, np.inf, -np.inf, 1e6], size=int(ignored.sum()))
        zeroed = [np.where(ignored, 0.0, values) for values in (actual, expected)]
        edges = (0, 1, 20, 64)
        blocks = ((actual[a:b], expected[a:b], tolerance[a:b], ignored[a:b]) for a, b in itertools.pairwise(edges))
        assert repr(compare_blocks(blocks, actual.shape)) == repr(compare(*zeroed, tolerance))
