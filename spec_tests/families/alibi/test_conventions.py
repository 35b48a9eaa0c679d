"""ALiBi's conventions: the slope rules' exact exponents, the presets, and a one-line error for
every bad key or value."""

from fractions import Fraction

import numpy as np
import pytest

from posenc_spec.families.alibi.conventions import (
    FIELDS,
    PRESETS,
    AlibiConvention,
    from_keys,
    get_convention,
    slope_terms,
)


def exponents(count, rule="paper", bias_max=8.0):
    return [term.exponent for term in slope_terms(count, rule, bias_max)]


def test_power_of_two_head_counts_are_one_geometric_sequence():
    """For 8 heads every rule gives exponents 1 .. 8 (slopes 1/2 .. 1/256), the power of the ratio 2**-1."""
    assert exponents(8) == exponents(8, "geometric") == [Fraction(h) for h in range(1, 9)]
    assert [term.power for term in slope_terms(8)] == list(range(1, 9))


def test_other_head_counts_interleave_the_next_power_of_two():
    """12 heads: the 8 slopes of 8 heads, then the odd members of 16 heads' (2**-0.5, 2**-1.5, ...),
    each the power of 2**(-1/2) it is."""
    assert exponents(12) == [Fraction(h) for h in range(1, 9)] + [Fraction(1, 2), Fraction(3, 2), Fraction(5, 2),
                                                                   Fraction(7, 2)]
    assert [term.power for term in slope_terms(12)] == [2, 4, 6, 8, 10, 12, 14, 16, 1, 3, 5, 7]


@pytest.mark.parametrize(("heads", "first", "extra"), [(112, 64, 48), (71, 64, 7), (3, 2, 1), (127, 64, 63)])
def test_real_head_counts_split_as_the_paper_code_splits_them(heads, first, extra):
    """BLOOM-176B's 112 heads: 64 of the first kind and 48 interleaved; Falcon-7B's 71: 64 and 7."""
    found = exponents(heads)
    assert found[:first] == [Fraction(8 * h, first) for h in range(1, first + 1)]
    assert found[first:] == [Fraction(8 * (2 * k - 1), 2 * first) for k in range(1, extra + 1)]


def test_geometric_rule_divides_by_the_head_count():
    """Under ``geometric`` 3 heads get exponents 8/3, 16/3, 8: not the paper's 4, 8, 2."""
    assert exponents(3, "geometric") == [Fraction(8, 3), Fraction(16, 3), Fraction(8)]
    assert exponents(3) == [Fraction(4), Fraction(8), Fraction(2)]


def test_alibi_bias_max_scales_every_exponent_exactly():
    """MPT's alibi_bias_max B replaces the paper's 8 in every exponent, as the exact binary value."""
    assert exponents(6, bias_max=16.0) == [2 * value for value in exponents(6)]
    assert exponents(2, bias_max=0.1)[0] == Fraction(0.1) / 2


def test_partial_alibi_gives_the_first_heads_the_slopes_of_their_own_count():
    """alibi_heads = 4 of 12: four slopes of 4 heads; the others carry none."""
    conv = AlibiConvention(alibi_heads=4)
    assert [term.exponent for term in conv.slope_terms(12)] == exponents(4)
    with pytest.raises(ValueError, match="alibi_heads 4 exceeds num_heads 3"):
        conv.biased_heads(3)


def test_presets_are_the_declared_members():
    """Each preset states the form, the positions and the dtype of the code it names."""
    assert PRESETS["bloom"].bias_form == "key" and PRESETS["bloom"].key_positions == "mask-cumsum"
    assert PRESETS["falcon"] == PRESETS["bloom"].replace(bias_dtype="bfloat16")
    assert PRESETS["mpt"].bias_form == "key-last"
    assert PRESETS["bidirectional"].bias_region == "full" and PRESETS["bidirectional"].bias_form == "symmetric"
    assert PRESETS["labml"].up_to_row_constant
    assert all(preset.name() == name for name, preset in PRESETS.items())
    assert AlibiConvention(alibi_bias_max=16.0).name() == "alibi_bias_max=16.0"


def test_keys_read_as_a_declaration_gives_them():
    """A preset name and fields by name; a numpy integer is a head count."""
    conv = from_keys({"alibi_convention": "mpt", "alibi_bias_max": 16, "alibi_heads": np.int64(4)})
    assert conv == PRESETS["mpt"].replace(alibi_bias_max=16.0, alibi_heads=4)
    assert set(FIELDS) >= {"slope_rule", "bias_form", "bias_region", "query_positions", "key_positions", "bias_dtype"}


@pytest.mark.parametrize(("keys", "message"), [
    ({"slope_rule": "interleave"}, "slope_rule must be one of paper, geometric, got 'interleave'"),
    ({"bias_form": "relative"}, "bias_form must be one of causal, symmetric, key, key-last, got 'relative'"),
    ({"bias_region": None, "query_positions": "middle"}, "query_positions must be one of last, first, got 'middle'"),
    ({"alibi_bias_max": 0}, "alibi_bias_max must be a number in (0, 64], got 0"),
    ({"alibi_bias_max": float("nan")}, "alibi_bias_max must be a number in (0, 64], got nan"),
    ({"alibi_bias_max": True}, "alibi_bias_max must be a number in (0, 64], got True"),
    ({"alibi_heads": 0}, "alibi_heads must be from 1 to 4096, got 0"),
    ({"bias_dtype": "int8"}, "bias_dtype must be one of float64, float32, float16, bfloat16, got 'int8'"),
    ({"up_to_row_constant": "yes"}, "up_to_row_constant must be true or false, got 'yes'"),
    ({"alibi_convention": "baichuan"},
     "alibi_convention must be one of paper, bloom, falcon, mpt, bidirectional, fairseq, labml, geometric, "
     "got 'baichuan'"),
    ({"slopes": "paper"}, "unknown ALiBi key(s) slopes; known: slope_rule"),
    ({"key_positions": "mask-cumsum"}, "key_positions 'mask-cumsum' goes with a key-only bias_form"),
    ({"bias_form": "symmetric", "up_to_row_constant": True}, "up_to_row_constant does not apply to bias_form"),
])
def test_bad_keys_are_one_line_errors_naming_key_and_value(keys, message):
    """Every refused key or value raises one line that names it and what was given."""
    with pytest.raises(ValueError) as caught:
        from_keys(keys)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("value", [2.0, "4", None, True])
def test_head_counts_are_integers(value):
    """A head count is an int: a float, a text, None or a bool is a one-line TypeError or ValueError."""
    with pytest.raises((TypeError, ValueError)) as caught:
        slope_terms(value)
    assert "heads must be" in str(caught.value) and "\n" not in str(caught.value)


def test_keys_must_be_a_table():
    """A declaration's ALiBi keys that are not a table are refused in one line."""
    with pytest.raises(ValueError, match="the ALiBi keys must be a table, got 'paper'"):
        from_keys("paper")
    assert get_convention("paper", slope_rule=None) is PRESETS["paper"]
