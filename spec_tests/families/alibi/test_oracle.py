"""ALiBi's oracle: the exact slopes against an independent computation (Python's decimal), the
float64 slopes correctly rounded, the float64 bias within its own bound of the exact one, and
the positions and regions each convention gives a call."""

import functools
from decimal import Decimal, localcontext

import mpmath
import numpy as np
import pytest

from posenc_spec.families.alibi import oracle
from posenc_spec.families.alibi.conventions import AlibiConvention, slope_terms
from posenc_spec.families.alibi.tolerance import oracle_bound
from spec_tests.assertions import assert_within

HEAD_COUNTS = range(1, 129)


@functools.cache
def decimal_slopes(count, rule="paper"):
    """2 ** -e for every head, with decimal at 45 digits: e from the exact fractions."""
    with localcontext() as context:
        context.prec = 45
        return tuple(Decimal(2) ** (-Decimal(term.exponent.numerator) / Decimal(term.exponent.denominator))
                     for term in slope_terms(count, rule))


@pytest.mark.parametrize("rule", ["paper", "geometric"])
def test_exact_slopes_agree_with_decimal_for_every_head_count(rule):
    """mpmath's slopes and decimal's agree to 40 significant digits for 1 .. 128 heads."""
    conv = AlibiConvention(slope_rule=rule)
    worst = 0.0
    with mpmath.workdps(50):
        for count in HEAD_COUNTS:
            exact = oracle.exact_slopes(count, conv)
            for mine, theirs in zip(exact, decimal_slopes(count, rule), strict=True):
                worst = max(worst, abs(float((mine - mpmath.mpf(str(theirs))) / mine)))
    assert worst < 1e-40, worst


def test_float64_slopes_are_correctly_rounded():
    """The float64 slopes are decimal's values rounded once (float(Decimal) rounds correctly)."""
    for count in HEAD_COUNTS:
        expected = np.array([float(value) for value in decimal_slopes(count)])
        assert np.array_equal(oracle.slopes(count), expected), count


def test_the_shipped_slopes_are_the_exact_slopes_rounded_once():
    """posenc_spec/data/alibi_slopes.json holds, for every exponent of 1 .. 128 heads under each
    rule, mpmath's slope rounded once to float64, and nothing else: recomputed here."""
    assert oracle.shipped_slopes() == oracle.slope_table()


def test_slopes_outside_the_shipped_table_are_computed():
    """A head count past the table, or another alibi_bias_max, gets mpmath's slopes rounded
    once, as the table's would be."""
    for count, conv in ((200, AlibiConvention()), (12, AlibiConvention(alibi_bias_max=4.0))):
        expected = np.array([float(value) for value in oracle.exact_slopes(count, conv)])
        assert np.array_equal(oracle.slopes(count, conv), expected), (count, conv)


def test_a_slope_to_its_denominator_is_a_power_of_two():
    """m ** c = 2 ** -(B a) exactly for the 112-head slopes: 2 ** (-95 * 8 / 128) to the 16th is 2 ** -95."""
    with mpmath.workdps(60):
        for term, slope in zip(slope_terms(112), oracle.exact_slopes(112), strict=True):
            den = term.exponent.denominator
            assert abs(slope**den / mpmath.power(2, -term.exponent.numerator) - 1) < mpmath.mpf(10) ** -45


def test_known_slopes():
    """8 heads: 1/2 .. 1/256 exactly; 12 heads end with 2**-0.5 .. 2**-3.5; unbiased heads are 0."""
    assert oracle.slopes(8).tolist() == [2.0**-h for h in range(1, 9)]
    assert oracle.slopes(12)[8:].tolist() == [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]
    partial = oracle.slopes(6, AlibiConvention(alibi_heads=2))
    assert partial.tolist() == [2.0**-4, 2.0**-8, 0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(("name", "positions"), [
    ("paper", oracle.call_positions(9, 9)),
    ("bidirectional", oracle.call_positions(3, 20, "bidirectional")),
    ("mpt", oracle.call_positions(17, 17, "mpt")),
    ("bloom", oracle.mask_positions([0, 0, 1, 1, 0, 1, 1], "bloom")),
])
def test_float64_bias_within_its_own_bound_of_the_exact_one(name, positions):
    """The float64 bias is within the oracle's bound (2 u_64 |m d| and more) of the correctly rounded
    exact bias, for 12 and 71 heads."""
    for heads in (12, 71):
        assert_within(oracle.bias(heads, positions, name), oracle.exact_bias(heads, positions, name),
                      oracle_bound(heads, positions, name), f"{name} {heads} heads")


def test_call_positions_put_the_queries_last():
    """A decoding call (1 query over 5 keys) sits at position 4; ``first`` puts it at 0; key forms
    have the last query's single row."""
    assert oracle.call_positions(1, 5).queries.tolist() == [4]
    assert oracle.call_positions(1, 5, AlibiConvention(query_positions="first")).queries.tolist() == [0]
    assert oracle.call_positions(3, 5, "mpt").shape == (1, 5)
    with pytest.raises(ValueError, match="q_len must not exceed k_len, got 6 > 5"):
        oracle.call_positions(6, 5)


def test_distances_of_each_form():
    """causal k - q, symmetric -|k - q|, key k, key-last k - k_last."""
    positions = oracle.call_positions(2, 4)
    assert oracle.distances("paper", positions).tolist() == [[-2, -1, 0, 1], [-3, -2, -1, 0]]
    assert oracle.distances("bidirectional", positions).tolist() == [[-2, -1, 0, -1], [-3, -2, -1, 0]]
    assert oracle.distances("fairseq", oracle.call_positions(2, 4, "fairseq")).tolist() == [[0, 1, 2, 3]]
    assert oracle.distances("mpt", oracle.call_positions(2, 4, "mpt")).tolist() == [[-3, -2, -1, 0]]


def test_mask_positions_skip_padding():
    """BLOOM's (cumsum(mask) - 1) * mask: padding takes no position and is not judged."""
    positions = oracle.mask_positions([0, 0, 1, 1, 0, 1])
    assert positions.keys.tolist() == [0, 0, 0, 1, 0, 2]
    assert oracle.judged("bloom", positions).tolist() == [[False, False, True, True, False, True]]
    with pytest.raises(ValueError, match="mask must be a non-empty 1-D array of 0 and 1"):
        oracle.mask_positions([1, 2])


def test_causal_region_is_the_keys_at_or_before_each_query():
    """The causal region of 2 queries over 3 keys excludes the one future key; ``full`` keeps it."""
    positions = oracle.call_positions(2, 3)
    assert oracle.judged("paper", positions).tolist() == [[True, True, False], [True, True, True]]
    assert oracle.judged("bidirectional", positions).all()
