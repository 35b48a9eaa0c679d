"""Each property passes on correct buckets and fails on buckets broken the way it states,
naming the element that shows it."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_spec.families.t5buckets import oracle, properties
from posenc_spec.families.t5buckets.conventions import PRESETS
from spec_tests.families.t5buckets.assertions import assert_status

ENCODER, DECODER = PRESETS["t5-encoder"], PRESETS["t5-decoder"]
RELATIVE = np.arange(-512, 513)
CHECKS = {"range": properties.check_range, "formula": properties.check_formula,
          "exact-small": properties.check_exact_small, "halves": properties.check_halves,
          "monotone": properties.check_monotone, "saturation": properties.check_saturation}


def _broken(convention, edits: dict) -> np.ndarray:
    """The exact buckets of RELATIVE with ``edits`` (relative position -> bucket) applied."""
    buckets = oracle.buckets(RELATIVE, convention)
    for relative, bucket in edits.items():
        buckets[RELATIVE == relative] = bucket
    return buckets


@pytest.mark.parametrize("convention", [ENCODER, DECODER, PRESETS["gluonnlp-encoder"], PRESETS["wavlm"]],
                         ids=lambda convention: convention.name())
@pytest.mark.parametrize("name", CHECKS)
def test_property_holds_on_the_exact_buckets(name, convention):
    """Each property passes on the oracle's buckets over [-4M, 4M], both signs and directions."""
    relative = np.arange(-4 * convention.max_distance, 4 * convention.max_distance + 1)
    result = CHECKS[name](oracle.buckets(relative, convention), convention, relative)
    assert_status(result, "passed", f"{name} on the exact {convention.name()} buckets")


@pytest.mark.parametrize("name, convention, edits, contains", [
    ("range", ENCODER, {-300: 32}, "relative position -300 got 32"),
    ("range", DECODER, {5: -1}, "relative position 5 got -1"),
    ("formula", ENCODER, {-20: 9}, "relative position -20 got 9, expected 10"),
    ("formula", ENCODER, {-16: 8}, "relative position -16 got 8, expected 10 (or 9, within rounding)"),
    ("exact-small", ENCODER, {3: 20}, "relative position 3 got 20, expected 19"),
    ("exact-small", DECODER, {-15: 16}, "relative position -15 got 16, expected 15"),
    ("halves", ENCODER, {40: 27}, "relative position 40 got 27, expected 28"),
    ("halves", DECODER, {5: 5}, "relative position 5 got 5, expected 0"),
    ("monotone", ENCODER, {-100: 13}, "relative position -100 got 13, below the bucket 15"),
    ("monotone", DECODER, {-35: 20}, "relative position -35 got 20, below the bucket 21"),
    ("saturation", ENCODER, {-200: 14}, "relative position -200 got 14, expected 15"),
    ("saturation", DECODER, {-128: 30}, "relative position -128 got 30, expected 31"),
])
def test_property_fails_on_broken_buckets(name, convention, edits, contains):
    """One planted slip fails the property that states it, and the message names it."""
    assert_status(CHECKS[name](_broken(convention, edits), convention, RELATIVE), "failed", name, contains)


def test_formula_admits_the_neighbour_on_an_exact_boundary():
    """At distance 16 (``v = 2`` exactly) bucket 9 is admitted beside 10: the band's reach is
    the Worst's tolerance, and the message counts the neighbour."""
    result = properties.check_formula(_broken(ENCODER, {-16: 9}), ENCODER, RELATIVE)
    assert_status(result, "passed", "formula with 9 at -16", "1 a neighbour within rounding of a boundary")
    assert (result.worst.actual, result.worst.expected, result.worst.tolerance, result.worst.ratio) == (9, 10, 1, 1)


def test_formula_names_the_smallest_failing_position():
    """Of several wrong buckets, the worst reported is the one of the smallest ``|r|``."""
    result = properties.check_formula(_broken(ENCODER, {-400: 3, 30: 5, -25: 2}), ENCODER, RELATIVE)
    assert_status(result, "failed", "formula", "3 of 1025 buckets wrong under t5-encoder; the smallest: "
                                               "relative position -25 got 2")
    assert result.worst.index == (512 - 25,) and result.worst.ratio == float("inf")


def test_formula_refuses_a_wrong_shape():
    """Buckets of another shape than the positions fail with both shapes named."""
    result = properties.check_formula(np.zeros((2, 3), dtype=np.int64), ENCODER, np.arange(6))
    assert_status(result, "failed", "formula", "shape (2, 3) differs from the relative positions' (6,)")


def test_integer_refuses_floats_and_bools():
    """Float and bool buckets fail ``integer``; int32 and uint8 pass."""
    assert_status(properties.check_integer(np.zeros(3)), "failed", "float buckets", "float64")
    assert_status(properties.check_integer(np.zeros(3, dtype=bool)), "failed", "bool buckets", "bool")
    for dtype in (np.int32, np.uint8):
        assert_status(properties.check_integer(np.zeros(3, dtype=dtype)), "passed", f"{dtype.__name__} buckets")


def test_relative_only_finds_the_broken_diagonal():
    """A table constant along its diagonals passes; one element changed fails, named with its k - q."""
    table = oracle.table(9, 14, DECODER)
    assert_status(properties.check_relative_only(table), "passed", "exact table", "constant along its 22 diagonals")
    table[4, 9] = 7
    assert_status(properties.check_relative_only(table), "failed", "broken table", "[4, 9] (k - q = 5) got 7")


def test_checks_skip_where_nothing_is_asked():
    """A check with nothing to look at is skipped, saying why (no far distance, one side only)."""
    near = np.arange(-5, 6)
    buckets = oracle.buckets(near, ENCODER)
    assert_status(properties.check_saturation(buckets, ENCODER, near), "skipped", "saturation", "no distance of")
    one_side = np.arange(0, 6)
    assert_status(properties.check_halves(oracle.buckets(one_side, ENCODER), ENCODER, one_side), "skipped",
                  "halves", "no distance asked on both sides")
