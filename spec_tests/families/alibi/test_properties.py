"""ALiBi's properties: each passes on correct tables (float32, as correct code forms them) and
fails on a table broken the way the property is there to catch, naming the worst element."""

import numpy as np
import pytest

from posenc_spec.families.alibi import oracle, properties
from posenc_spec.families.alibi.conventions import AlibiConvention

HEADS = 12  # not a power of two: 8 slopes and 4 interleaved


def float32_table(heads, positions, convention):
    return oracle.bias(heads, positions, convention).astype(np.float32).astype(np.float64)


def expect(convention, q_len=16, k_len=16, heads=HEADS):
    positions = oracle.call_positions(q_len, k_len, convention)
    return properties.expectation(heads, positions, convention), float32_table(heads, positions, convention)


def assert_status(result, status):
    assert result.status == status, f"{result.name}: {result.status}, expected {status}: {result.message}"


CHECKS = [properties.check_finite, properties.check_formula, properties.check_linear, properties.check_toeplitz,
          properties.check_diagonal, properties.check_equivalent]


@pytest.mark.parametrize("name", ["paper", "bidirectional", "mpt", "fairseq", "labml", "geometric"])
def test_correct_tables_pass_every_property(name):
    """Each preset's own float32 table passes every check that applies (the others skip)."""
    exp, table = expect(name)
    for check in CHECKS:
        assert check(table, exp).status in ("passed", "skipped"), check(table, exp).message


def test_formula_fails_on_one_wrong_element_and_names_it():
    """One element off by a thousandth fails, at its own index."""
    exp, table = expect("paper")
    table[3, 10, 4] += 1e-3
    result = properties.check_formula(table, exp)
    assert_status(result, "failed")
    assert result.worst.index == (3, 10, 4)


def test_causal_region_ignores_masked_elements():
    """-inf above the diagonal (the causal mask folded in) is neither judged nor non-finite; a NaN
    below it is."""
    exp, table = expect("paper")
    table[:, np.triu_indices(16, 1)[0], np.triu_indices(16, 1)[1]] = -np.inf
    assert_status(properties.check_formula(table, exp), "passed")
    assert_status(properties.check_finite(table, exp), "passed")
    table[0, 5, 2] = np.nan
    assert_status(properties.check_finite(table, exp), "failed")


def test_up_to_row_constant_accepts_a_shift_per_row_and_nothing_else():
    """Under up_to_row_constant, m (k + 1) (labml) passes; a shift that changes along the row fails."""
    conv = AlibiConvention(bias_form="key", up_to_row_constant=True)
    exp, table = expect(conv)
    shifted = table + oracle.slopes(HEADS)[:, None, None]
    assert_status(properties.check_formula(shifted, exp), "passed")
    tilted = shifted.copy()
    tilted[:, :, 8:] += 1e-3
    assert_status(properties.check_formula(tilted, exp), "failed")


def test_linear_fails_on_a_wrong_slope():
    """A head whose steps are another head's slope fails linearity, even up to a row constant."""
    exp, table = expect(AlibiConvention(bias_form="key", up_to_row_constant=True))
    table[2] = table[3]
    assert_status(properties.check_linear(table, exp), "failed")


def test_toeplitz_fails_when_rows_are_not_shifted_copies():
    """A causal table whose last row is the first row's fails: k - q alone no longer decides it."""
    exp, table = expect("paper")
    table[:, 15, :] = table[:, 0, :]
    exp_full = properties.expectation(HEADS, oracle.call_positions(16, 16), AlibiConvention(bias_region="full"))
    assert_status(properties.check_toeplitz(table, exp), "failed")
    assert_status(properties.check_toeplitz(float32_table(HEADS, exp_full.positions, "paper"), exp_full), "passed")
    assert_status(properties.check_toeplitz(table, expect("mpt")[0]), "skipped")


def test_diagonal_must_be_exactly_zero():
    """A diagonal of 1e-30 (within any bound) fails: every correct idiom gives exactly 0 there."""
    exp, table = expect("bidirectional")
    table[5, 7, 7] = 1e-30
    result = properties.check_diagonal(table, exp)
    assert_status(result, "failed")
    assert result.worst.index == (5, 7)


def test_equivalent_tells_the_same_attention_from_another():
    """MPT's and BLOOM's rows give the paper's attention; a flipped sign does not."""
    for name in ("mpt", "fairseq", "bidirectional"):
        exp, table = expect(name)
        assert_status(properties.check_equivalent(table, exp), "passed")
    exp, table = expect("paper")
    assert_status(properties.check_equivalent(-table, exp), "failed")


def test_unbiased_heads_must_be_zero():
    """Under alibi_heads = 4 of 12, a bias on head 4 fails; all heads biased skips."""
    conv = AlibiConvention(bias_form="symmetric", bias_region="full", alibi_heads=4)
    exp, table = expect(conv)
    assert_status(properties.check_unbiased_heads(table, exp), "passed")
    table[4, 0, 1] = -0.5
    assert_status(properties.check_unbiased_heads(table, exp), "failed")
    assert_status(properties.check_unbiased_heads(*reversed(expect("paper"))), "skipped")


def test_head_ratio_catches_reversed_slopes():
    """The paper's slopes pass for 1 .. 128 heads; reversed they fail (their ratios invert)."""
    for heads in (2, 3, 12, 71, 112, 128):
        slopes = oracle.slopes(heads).astype(np.float32)
        assert_status(properties.check_head_ratio(slopes, heads), "passed")
        assert_status(properties.check_head_ratio(slopes[::-1], heads), "failed")
    assert_status(properties.check_head_ratio([2.0**-8], 1), "skipped")
    assert_status(properties.check_slopes(oracle.slopes(71)[:70], 71), "failed")


def decode_pair(convention, p=9, length=16, heads=HEADS):
    prefill_positions = oracle.call_positions(length, length, convention)
    decode_positions = oracle.call_positions(1, p + 1, convention)
    prefill_exp = properties.expectation(heads, prefill_positions, convention)
    decode_exp = properties.expectation(heads, decode_positions, convention)
    return (float32_table(heads, decode_positions, convention), float32_table(heads, prefill_positions, convention),
            decode_exp, prefill_exp)


@pytest.mark.parametrize("name", ["paper", "bidirectional", "mpt", "fairseq"])
def test_decode_agrees_with_the_prefill_row(name):
    """A decoding step at 9 after a 16-long prefill agrees with the prefill's row for query 9
    (MPT's up to a constant: its 0 moves to the last key)."""
    assert_status(properties.check_decode(*decode_pair(name)), "passed")


def test_decode_from_the_wrong_corner_fails():
    """The symmetric bias's row for query 0 handed to a decoding step at 9 fails against row 9."""
    decode, prefill, decode_exp, prefill_exp = decode_pair("bidirectional")
    wrong_corner = prefill[:, :1, :10]
    result = properties.check_decode(wrong_corner, prefill, decode_exp, prefill_exp)
    assert_status(result, "failed")
    assert_status(properties.check_formula(wrong_corner, decode_exp), "failed")
    assert_status(properties.check_decode(np.zeros_like(decode), prefill, decode_exp, prefill_exp), "failed")


def test_decode_past_the_prefill_is_skipped():
    """A step beyond the prefill's length has no row to agree with."""
    decode, prefill, decode_exp, prefill_exp = decode_pair("paper", p=40)
    assert_status(properties.check_decode(decode, prefill, decode_exp, prefill_exp), "skipped")


def test_bloom_mask_with_a_hole_is_judged_on_kept_keys():
    """BLOOM's row over a mask with a hole: padded keys are free, kept keys at their cumsum positions."""
    positions = oracle.mask_positions([1] * 5 + [0] * 3 + [1] * 5)
    exp = properties.expectation(7, positions, "bloom")
    table = float32_table(7, positions, "bloom")
    table[:, :, 5:8] = 123.0
    assert_status(properties.check_formula(table, exp), "passed")
    counted = oracle.slopes(7)[:, None, None] * np.arange(13)[None, None, :]
    assert_status(properties.check_formula(counted, exp), "failed")


def test_shape_mismatch_is_an_error():
    """A table of another shape is refused with the two shapes named."""
    exp, table = expect("paper")
    with pytest.raises(ValueError, match=r"shape \(12, 16, 15\) differs from the expected \(12, 16, 16\)"):
        properties.check_formula(table[:, :, :15], exp)


ROWS = AlibiConvention(up_to_row_constant=True)  # the causal form, a row per query, up to a constant per row


def one_key_row_for_every_query(heads=HEADS, length=16, shift=0):
    """MPT's (shift 0) or BLOOM's (shift length - 1) float32 row, m (k - k_last + shift), broadcast over
    every query as attention adds it: in each query's row, the causal bias plus a constant."""
    row = oracle.slopes(heads)[:, None] * (np.arange(length) - (length - 1) + shift)[None, :]
    return np.broadcast_to(row.astype(np.float32).astype(np.float64)[:, None, :], (heads, length, length))


@pytest.mark.parametrize("shift", [0, 15])
def test_every_check_accepts_a_row_constant_under_up_to_row_constant(shift):
    """A key-only row broadcast over the queries (MPT's, BLOOM's) passes every check of the causal
    form declared up to a row constant: the future keys, which hold another row's values, are
    never compared."""
    exp = properties.expectation(HEADS, oracle.call_positions(16, 16, ROWS), ROWS)
    table = one_key_row_for_every_query(shift=shift)
    for check in CHECKS:
        assert check(table, exp).status in ("passed", "skipped"), check(table, exp).message
    assert_status(properties.check_toeplitz(table, exp), "passed")


def test_row_constants_leave_a_judged_error_visible():
    """Up to a row constant, one judged element off by a thousandth still fails formula and
    toeplitz, at its own index; the same change at a future key fails neither."""
    exp = properties.expectation(HEADS, oracle.call_positions(16, 16, ROWS), ROWS)
    table = one_key_row_for_every_query().copy()
    table[3, 10, 4] += 1e-3
    for check in (properties.check_formula, properties.check_toeplitz):
        assert_status(check(table, exp), "failed")
    assert properties.check_formula(table, exp).worst.index == (3, 10, 4)
    table[3, 10, 4] -= 1e-3
    table[3, 4, 10] = np.nan
    for check in (properties.check_formula, properties.check_toeplitz, properties.check_linear,
                  properties.check_equivalent):
        assert_status(check(table, exp), "passed")


def test_equivalent_bounds_a_shifted_bias_by_what_it_rounds():
    """labml's m (k + 1) declared as the key form fails formula (one slope more in the row) but
    gives the paper's attention: equivalent passes, its bound at key 0 (where the oracle holds 0)
    is that of m rounded, not 0."""
    conv = AlibiConvention(bias_form="key")
    for heads in (1, 12, 112):
        positions = oracle.call_positions(8, 8, conv)
        exp = properties.expectation(heads, positions, conv)
        slopes = oracle.slopes(heads)
        labml = (slopes.astype(np.float32)[:, None] * np.arange(1, 9, dtype=np.float32)[None, :])[:, None, :]
        assert_status(properties.check_formula(labml.astype(np.float64), exp), "failed")
        assert_status(properties.check_equivalent(labml.astype(np.float64), exp), "passed")
        assert (exp.shifted_tolerance[:, 0, 0] > 0).all()
    assert_status(properties.check_equivalent(labml[:, :, ::-1].astype(np.float64), exp), "failed")


def test_unbiased_heads_up_to_a_row_constant():
    """Under partial ALiBi declared up to a row constant, an unbiased head holding one constant per
    row passes; a head whose row changes along the keys fails."""
    conv = AlibiConvention(alibi_heads=4, up_to_row_constant=True)
    exp, table = expect(conv)
    table[4:] += np.arange(16)[None, :, None]
    assert_status(properties.check_unbiased_heads(table, exp), "passed")
    table[4, 10, 2] += 0.5
    assert_status(properties.check_unbiased_heads(table, exp), "failed")


def _broken_tables(table):
    """``table``, and copies of it with one element off, a constant per row added, the later
    keys tilted, and a NaN among the judged elements (the last row's)."""
    last = table.shape[1] - 1
    yield table
    wrong = table.copy()
    wrong[3, last, 4] += 1e-3
    yield wrong
    yield table + np.arange(table.shape[1])[None, :, None]
    tilted = table.copy()
    tilted[:, :, 8:] += 1e-3
    yield tilted
    holed = table.copy()
    holed[0, last, 2] = np.nan
    yield holed


@pytest.mark.parametrize("convention", [ROWS, AlibiConvention(), AlibiConvention(bias_form="key-last",
                                                                                  up_to_row_constant=True),
                                        AlibiConvention(bias_form="key", up_to_row_constant=True)])
def test_formula_and_equivalent_together_are_each_alone(convention):
    """Judged together (one comparison where they are the same one), formula and equivalent give
    exactly the verdicts, messages and worst elements each gives alone."""
    exp, table = expect(convention)
    assert exp.formula_is_equivalent == (convention.up_to_row_constant
                                         and convention.bias_form in ("causal", "key-last"))
    for broken in _broken_tables(table):
        together = properties.check_formula_and_equivalent(broken, exp)
        alone = properties.check_formula(broken, exp), properties.check_equivalent(broken, exp)
        assert repr(together) == repr(alone)  # a NaN worst value is not equal to itself
