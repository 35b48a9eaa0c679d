"""ALiBi's bounds exercised: correct float32 code, in each way it builds slopes, measured inside
the bound for every head count up to 128 and at the longest distances the grid reaches; the
slips the bound exists to catch measured outside it.

Figures (transformers 5.24, torch 2.13 CPU, measured/bound; they are the same on every CPU,
the operations being IEEE float32 products and powers of exact inputs):

- slopes in float32, 1 .. 128 heads: a power of a rounded base (BLOOM) and a cumulative
  product 0.130 (32 heads, head 1); MPT's ``1 / pow(2, e)`` 0.157 (65 heads, head 64).
  BLOOM-176B's 112 heads: up to 7.1 ULP (head 104, the 81st power of 2**(-1/16)), 0.043
  of that slope's bound; the largest ratio among them 0.059 (head 68).
- biases of 128 heads, float32: causal decode row at position 8192 0.097, the key form over
  8193 keys 0.116, a difference of two float32 products ``m k - m q`` 0.429; rounded once to
  float16 or bfloat16 0.994-0.996 (the store's rounding is the bound's main term there).
- Falcon's bias formed in bfloat16: 0.498 declared (``bias_dtype = "bfloat16"``), 1.3e4
  under BLOOM's float32 convention; slopes rounded to bfloat16 for 112 heads: 2.2e3.
"""

import math

import numpy as np
import pytest
import torch

from posenc_spec.families.alibi import oracle
from posenc_spec.families.alibi.conventions import AlibiConvention
from posenc_spec.families.alibi.tolerance import bias_tolerance, slope_coefficients, slope_tolerance
from posenc_spec.tolerance import compare


def pow_of_rounded_base(n):
    """S1, BLOOM's idiom: float32 bases raised to integer powers."""
    closest = 2 ** math.floor(math.log2(n))
    base = torch.full((), 2 ** (-(2 ** -(math.log2(closest) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + closest, dtype=torch.int32))
    if closest != n:
        extra = torch.full((), 2 ** (-(2 ** -(math.log2(2 * closest) - 3))), dtype=torch.float32)
        slopes = torch.cat([slopes, torch.pow(extra, torch.arange(1, 1 + 2 * (n - closest), 2, dtype=torch.int32))])
    return slopes


def cumulative_product(n):
    """S2: a running product of the float32 ratio (the extra heads start from its square root)."""
    closest = 2 ** (n.bit_length() - 1)
    first = torch.cumprod(torch.full((closest,), 2 ** (-8 / closest), dtype=torch.float32), 0)
    if n == closest:
        return first
    ratios = torch.full((n - closest,), 2 ** (-8 / closest), dtype=torch.float32)
    ratios[0] = 2 ** (-4 / closest)
    return torch.cat([first, torch.cumprod(ratios, 0)])


def reciprocal_of_power(n):
    """S3, MPT's idiom: 1 / pow(2, e) over the next power of two, strided."""
    power = 2 ** math.ceil(math.log2(n))
    slopes = 1.0 / torch.pow(2, torch.arange(1, power + 1, dtype=torch.float32) * (8 / power))
    return torch.cat([slopes[1::2], slopes[::2]])[:n] if power != n else slopes


def slope_ratio(values, n):
    return compare(np.asarray(values, np.float64), oracle.slopes(n), slope_tolerance(n, "paper")).max_ratio


@pytest.mark.parametrize(("idiom", "limit"), [(pow_of_rounded_base, 0.2), (cumulative_product, 0.2),
                                              (reciprocal_of_power, 0.2)])
def test_float32_slopes_of_every_head_count_are_inside_the_bound(idiom, limit):
    """Each correct float32 idiom stays within the slope bound for 1 .. 128 heads (measured up to
    0.13 and 0.157: the module docstring's figures)."""
    worst = max((slope_ratio(idiom(n).double().numpy(), n), n) for n in range(1, 129))
    assert worst[0] < limit, f"{idiom.__name__}: ratio {worst[0]:.3g} at {worst[1]} heads"


def test_bloom_176b_slopes_are_several_ulps_off_and_inside_the_bound():
    """112 heads: head 104 is the 81st power of float32 2**(-1/16), 7.1 ULP off the exact slope;
    its bound is 2 a + 2 ln2 e + 3 = 172.0 units of u_32 for a = 81 (the power of the finest
    ratio 2**(-1/16)) and e = 81/16, plus the store's 1: measured/bound 0.043."""
    slopes = pow_of_rounded_base(112).double().numpy()
    exact = oracle.slopes(112)
    ulps = np.abs(slopes - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert int(np.argmax(ulps)) == 104 and 7.0 < ulps[104] < 7.2, (int(np.argmax(ulps)), ulps.max())
    assert slope_coefficients(112)[104] == pytest.approx(2 * 81 + 2 * math.log(2) * 81 / 16 + 3)
    ratios = np.abs(slopes - exact) / slope_tolerance(112)
    assert 0.03 < ratios[104] < 0.05 and ratios.max() < 0.07, (ratios[104], ratios.max())


def test_slopes_rounded_to_bfloat16_are_outside_the_bound():
    """A bfloat16 slope (2**-9 relative) is 2.2e3 times the float32 bound for 112 heads."""
    assert slope_ratio(pow_of_rounded_base(112).bfloat16().double().numpy(), 112) > 1000


def _bias(form, positions, slopes):
    q, k = torch.tensor(positions.queries)[:, None], torch.tensor(positions.keys)[None, :]
    distance = {"causal": k - q, "key": k.expand(q.shape[0], -1), "symmetric": -(k - q).abs()}[form]
    return slopes[:, None, None] * distance


@pytest.mark.parametrize(("form", "name", "positions"), [
    ("causal", "paper", oracle.call_positions(1, 8193)),
    ("symmetric", "bidirectional", oracle.call_positions(1, 8193, "bidirectional")),
    ("key", "fairseq", oracle.call_positions(8193, 8193, "fairseq")),
])
@pytest.mark.parametrize(("dtype", "limit"), [("float32", 0.2), ("float16", 1.0), ("bfloat16", 1.0)])
def test_float32_biases_at_the_longest_distance_are_inside_the_bound(form, name, positions, dtype, limit):
    """128 heads over 8193 keys, formed in float32 and stored in each dtype: measured 0.097-0.116
    in float32, 0.994-0.996 in float16 and bfloat16 (the store's rounding, bounded exactly)."""
    table = _bias(form, positions, pow_of_rounded_base(128)).to(getattr(torch, dtype)).double().numpy()
    result = compare(table, oracle.bias(128, positions, name), bias_tolerance(128, positions, name, dtype))
    assert result.max_ratio < limit, result.describe()


def test_a_difference_of_two_products_is_inside_the_bound():
    """m k - m q in float32 for the decode row at 8192 (128 heads): measured 0.429, the B3 term."""
    positions = oracle.call_positions(1, 8193)
    slopes = pow_of_rounded_base(128)[:, None, None]
    keys, queries = (torch.tensor(values, dtype=torch.float32) for values in (positions.keys, positions.queries))
    table = (slopes * keys[None, None, :] - slopes * queries[None, :, None]).double().numpy()
    result = compare(table, oracle.bias(128, positions), bias_tolerance(128, positions, "paper"))
    assert result.max_ratio < 0.6, result.describe()


def falcon_bias(n, length):
    """Falcon's idiom: slopes.bfloat16() times the key positions, the product in bfloat16."""
    positions = torch.arange(length)
    return (pow_of_rounded_base(n).bfloat16()[:, None, None] * positions).float()


def test_bfloat16_arithmetic_is_inside_only_the_bound_that_declares_it():
    """Falcon's bias for 128 heads over 8193 keys: 0.498 of the bound with bias_dtype bfloat16,
    1.3e4 of BLOOM's float32 bound."""
    positions = oracle.mask_positions(np.ones(8193))
    table = falcon_bias(128, 8193).double().numpy()
    declared = compare(table, oracle.bias(128, positions, "falcon"), bias_tolerance(128, positions, "falcon"))
    undeclared = compare(table, oracle.bias(128, positions, "bloom"), bias_tolerance(128, positions, "bloom"))
    assert declared.max_ratio < 0.6 and undeclared.max_ratio > 1000, (declared.describe(), undeclared.describe())


def test_the_bound_grows_with_the_power_and_the_positions():
    """The slope term is 2 a + 2 ln2 e + 3 units; positions beyond bfloat16's 256 add u_c |k|."""
    assert slope_coefficients(1).tolist() == pytest.approx([2 + 2 * math.log(2) * 8 + 3])
    conv = AlibiConvention(bias_form="key", bias_dtype="bfloat16")
    positions = oracle.call_positions(300, 300, conv)
    bound = bias_tolerance(1, positions, conv)[0, 0]
    per_key = bound / np.maximum(positions.keys, 1)
    assert per_key[257] > per_key[256] * 1.2, (per_key[256], per_key[257])


def test_partial_heads_have_a_zero_bound():
    """A head without a bias has slope 0 and bound 0: it must be exactly 0."""
    conv = AlibiConvention(alibi_heads=2)
    assert slope_tolerance(5, conv)[2:].tolist() == [0.0, 0.0, 0.0]
    assert not bias_tolerance(5, oracle.call_positions(4, 4), conv)[2:].any()


def test_a_slope_is_judged_by_the_bias_it_makes():
    """Slopes rounded to float16 are judged by the float32 bias they make at distance 8192, not at
    float16 rounding: 2**-11 of a slope is hundreds of times that bias's bound (worst over 1 .. 128
    heads), while float32 slopes stay far inside; the bound per unit of distance is the bias's
    at the declared longest distance."""
    worst16 = max(slope_ratio(oracle.slopes(n).astype(np.float16), n) for n in range(1, 129))
    worst32 = max(slope_ratio(oracle.slopes(n).astype(np.float32), n) for n in range(1, 129))
    assert worst16 > 100 and worst32 < 0.1, (worst16, worst32)
    for distance in (8192, 2047):
        farthest = bias_tolerance(12, oracle.call_positions(1, distance + 1))[:, 0, 0]
        assert np.allclose(slope_tolerance(12, distance=distance) * distance, farthest, rtol=1e-12, atol=0)
