"""The RoPE family: its validation, and closed forms and relations each scaling type must satisfy.

The relations are stated from what each type is for (linear interpolation divides every
frequency, dynamic NTK divides the lowest one by the stretch, llama3 and yarn leave fast
pairs alone and interpolate slow ones), not by re-running the formulas of the module.
"""

import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec.families.rope.conventions import ROPE_TYPES, RopeConvention
from posenc_spec.families.rope.tolerance import (
    rope_attention_factor_error,
    rope_frequency_error,
    rope_frequency_tolerance,
)
from spec_tests.assertions import assert_within

LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
LONG = {"short_factor": [1.5] * 4, "long_factor": [4.0] * 4, "original_max_position_embeddings": 4096}


def exact_power(base, exponent) -> float:
    with mpmath.workdps(40):
        return float(mpmath.mpf(base) ** exponent)


@pytest.mark.parametrize("kwargs, message", [
    ({"rope_type": "ntk"}, "rope_type must be one of " + ", ".join(ROPE_TYPES) + "; got 'ntk'"),
    ({"theta": 1.0}, "theta must not be 1"),
    ({"theta": -5.0}, "theta must be a finite number > 0, got -5.0"),
    ({"theta": float("inf")}, "theta must be a finite number > 0, got inf"),
    ({"theta": True}, "theta must be a finite number > 0, got True"),
    ({"rope_type": "linear", "params": {"factor": 0}}, "linear parameter factor must be a finite number > 0, got 0"),
    ({"rope_type": "linear", "params": {"factor": float("nan")}}, "linear parameter factor must be a finite number"),
    ({"rope_type": "linear"}, "linear needs parameter(s) factor"),
    ({"rope_type": "llama3", "params": {**LLAMA3, "low_freq_factor": None}},
     "llama3 needs parameter(s) low_freq_factor"),
    ({"rope_type": "linear", "params": {"factor": 2, "beta_fast": 32}},
     "unknown linear parameter(s) beta_fast; allowed: factor"),
    ({"params": {"factor": 2}}, "unknown default parameter(s) factor; allowed: none"),
    ({"rope_type": "yarn", "params": {"factor": 4, "original_max_position_embeddings": 4096, "truncate": "no"}},
     "yarn parameter truncate must be true or false, got 'no'"),
    ({"rope_type": "yarn", "params": {"original_max_position_embeddings": 4096}},
     "yarn needs factor or max_position_embeddings"),
    ({"rope_type": "yarn", "params": {"factor": 4, "original_max_position_embeddings": 4096.5}},
     "yarn parameter original_max_position_embeddings must be an int >= 1, got 4096.5"),
    ({"rope_type": "longrope", "params": {**LONG, "short_factor": [1.0, -2.0, 1.0, 1.0]}, "max_position_embeddings": 9},
     "longrope parameter short_factor[1] must be a finite number > 0, got -2.0"),
    ({"rope_type": "longrope", "params": {**LONG, "long_factor": "1,2"}, "max_position_embeddings": 9},
     "longrope parameter long_factor must be a non-empty list of numbers"),
    ({"rope_type": "dynamic", "params": {"factor": 2}}, "dynamic needs original_max_position_embeddings or "
                                                        "max_position_embeddings"),
    ({"rope_type": "llama3", "params": {**LLAMA3, "high_freq_factor": 1.0}},
     "llama3 high_freq_factor must exceed low_freq_factor, got 1.0 <= 1.0"),
    ({"partial_rotary_factor": 1.5}, "partial_rotary_factor must be a number in (0, 1], got 1.5"),
    ({"rotary_dim": 7}, "rotary_dim must be even, got 7"),
    ({"max_position_embeddings": 0}, "max_position_embeddings must be an int >= 1, got 0"),
    ({"rotary_features": "middle"}, "rotary_features must be one of first, last; got 'middle'"),
    ({"attention_factor_placement": "softmax"}, "attention_factor_placement must be one of in-cache, separate"),
])
def test_bad_conventions_raise_one_line_naming_the_field(kwargs, message):
    """Each invalid field is refused on construction with a one-line message naming it."""
    with pytest.raises(ValueError) as error:
        RopeConvention(**kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("conv, head_dim, message", [
    (RopeConvention(), 127, "head_dim must be even, got 127"),
    (RopeConvention(), "128", "head_dim must be an int >= 2, got '128'"),
    (RopeConvention(partial_rotary_factor=0.25), 4, "the rotary size must be an even int >= 2, got 1"),
    (RopeConvention(rotary_dim=64), 32, "rotary_dim 64 exceeds head_dim 32"),
    (RopeConvention("longrope", params=LONG, max_position_embeddings=8192), 16,
     "longrope short_factor has 4 values; head_dim 16 needs r/2 = 8"),
    (RopeConvention("dynamic", params={"factor": 2}, max_position_embeddings=64), 2, "dynamic needs a rotary size > 2"),
])
def test_sizes_that_do_not_fit_the_convention(conv, head_dim, message):
    """Head and rotary sizes are checked once the head size is known."""
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        conv.frequencies(head_dim)


def test_odd_rotary_size_is_refused():
    """int(80 * 0.3) = 24 is even and fine; int(10 * 0.3) = 3 is odd and refused."""
    assert RopeConvention(partial_rotary_factor=0.3).rotary_dim_for(80) == 24
    with pytest.raises(ValueError, match="the rotary size must be an even int >= 2, got 3"):
        RopeConvention(partial_rotary_factor=0.3).rotary_dim_for(10)


def test_params_are_hashable_and_reported():
    """A dict and a tuple of pairs make the same convention; as_dict rebuilds it through JSON."""
    from_dict = RopeConvention("llama3", 500000.0, LLAMA3)
    from_pairs = RopeConvention("llama3", 500000.0, tuple(LLAMA3.items()))
    assert from_dict == from_pairs and hash(from_dict) == hash(from_pairs)
    assert RopeConvention(**json.loads(json.dumps(from_dict.as_dict()))) == from_dict
    assert from_dict.param("factor") == 8.0 and from_dict.param("beta_fast", 32) == 32
    assert from_dict.describe().startswith("llama3 theta=500000 factor=8")


@pytest.mark.parametrize("theta, head_dim", [(10000.0, 128), (500000.0, 64), (1e6, 8)])
def test_default_closed_forms(theta, head_dim):
    """``f_0 = 1`` exactly and ``f_{r/2-1} = theta^(-(r-2)/r)``; A = 1."""
    inv_freq, attention_factor = RopeConvention(theta=theta).frequencies(head_dim)
    assert inv_freq[0] == 1.0 and attention_factor == 1.0 and inv_freq.size == head_dim // 2
    lowest = exact_power(theta, -mpmath.mpf(head_dim - 2) / head_dim)
    tol = rope_frequency_tolerance(RopeConvention(theta=theta), head_dim, angle_dtype="float64")
    assert_within(inv_freq[-1], lowest, tol[-1], f"lowest frequency theta={theta} r={head_dim}")


def test_partial_rotary_exponent_runs_over_the_rotary_size():
    """Phi-2: head 80, factor 0.4: r = 32 and the exponent is 2i/32, not 2i/80 (bug 25)."""
    inv_freq, _ = RopeConvention(partial_rotary_factor=0.4).frequencies(80)
    assert inv_freq.size == 16
    assert_within(inv_freq[-1], exact_power(10000, -mpmath.mpf(30) / 32),
                  rope_frequency_tolerance(RopeConvention(partial_rotary_factor=0.4), 80, angle_dtype="float64")[-1],
                  "lowest frequency of a 32-wide rotary block")


def float64_slack(conv, head_dim, seq_len=None):
    return rope_frequency_error(conv, head_dim, seq_len, "float64")


@pytest.mark.parametrize("factor", [0.5, 2.0, 8.0, 40.0])
def test_linear_divides_every_frequency(factor):
    """``linear`` is position interpolation: each frequency of ``default`` divided by s."""
    linear = RopeConvention("linear", params={"factor": factor})
    default, _ = RopeConvention().frequencies(128)
    scaled, _ = linear.frequencies(128)
    assert_within(scaled * factor, default,
                  default * (float64_slack(linear, 128) + float64_slack(RopeConvention(), 128)), "linear * s")


def test_dynamic_is_default_up_to_the_original_length_and_stretches_beyond():
    """Below L0 dynamic NTK changes nothing; at L it divides the lowest frequency by exactly
    ``s L / L0 - (s - 1)`` and keeps ``f_0 = 1`` (the base grows, the top pair does not move)."""
    conv = RopeConvention("dynamic", params={"factor": 4.0}, max_position_embeddings=2048)
    default, _ = RopeConvention().frequencies(64)
    for seq_len in (None, 1, 2048):
        inv_freq, _ = conv.frequencies(64, seq_len)
        assert_within(inv_freq, default, default * 2 * float64_slack(conv, 64, seq_len), f"dynamic at {seq_len}")
    for seq_len in (2049, 8192, 131072):
        inv_freq, _ = conv.frequencies(64, seq_len)
        stretch = mpmath.mpf(4) * seq_len / 2048 - 3
        lowest = exact_power(10000, -mpmath.mpf(62) / 64) / float(stretch)
        assert inv_freq[0] == 1.0
        assert_within(inv_freq[-1], lowest, inv_freq[-1] * 2 * float64_slack(conv, 64, seq_len)[-1],
                      f"dynamic lowest frequency at L={seq_len}")


def llama3_with(**changes):
    return RopeConvention("llama3", 500000.0, {**LLAMA3, **changes})


def test_llama3_keeps_high_divides_low_and_blends_between():
    """Wavelengths below L0/4 keep f, above L0/1 get f/8, in between lie strictly between."""
    conv = llama3_with()
    base, _ = RopeConvention(theta=500000.0).frequencies(128)
    scaled, attention_factor = conv.frequencies(128)
    wavelength = 2 * np.pi / base
    high, low = wavelength < 8192 / 4, wavelength > 8192 / 1
    assert attention_factor == 1.0 and high.any() and low.any() and (~high & ~low).any()
    assert np.array_equal(scaled[high], base[high])
    assert_within(scaled[low] * 8, base[low], base[low] * 2 * float64_slack(conv, 128)[low], "llama3 low band * s")
    middle = ~high & ~low
    assert np.all((scaled[middle] < base[middle]) & (scaled[middle] > base[middle] / 8))


@pytest.mark.parametrize("edge", ["high", "low"])
def test_llama3_is_continuous_at_both_wavelength_boundaries(edge):
    """Moving a band edge across pair i's wavelength by a relative eps moves f'_i by at most
    ``2 eps h / (h - l) f_i (1 - 1/s)`` (the smooth factor's slope), not by a jump."""
    pair, eps = 20, 1e-9
    base, _ = RopeConvention(theta=500000.0).frequencies(128)
    edge_factor = 8192 / (2 * np.pi / base[pair])  # the band-edge factor that puts the edge on pair 20
    if edge == "high":
        sides = [llama3_with(low_freq_factor=1.0, high_freq_factor=edge_factor * (1 + k * eps)) for k in (-1, 1)]
    else:
        sides = [llama3_with(low_freq_factor=edge_factor * (1 + k * eps), high_freq_factor=edge_factor * 4)
                 for k in (-1, 1)]
    values = [side.frequencies(128)[0][pair] for side in sides]
    high, low = sides[0].param("high_freq_factor"), sides[0].param("low_freq_factor")
    slope = 2 * eps * max(high, low) / (high - low) * base[pair] * (1 - 1 / 8)
    rounding = sum(rope_frequency_tolerance(side, 128, angle_dtype="float64")[pair] for side in sides)
    assert_within(values[0], values[1], slope + rounding, f"llama3 f'_{pair} across the {edge} edge")
    assert slope + rounding < base[pair] * (1 - 1 / 8) / 2  # a jump, the whole (1 - 1/s) f, would fail


@pytest.mark.parametrize("truncate", [True, False])
def test_yarn_ramp_ends(truncate):
    """Pairs that turn at least beta_fast times over L0 keep f; pairs turning at most beta_slow
    times get f/s; between, f' falls monotonically from one to the other."""
    conv = RopeConvention("yarn", params={"factor": 16.0, "original_max_position_embeddings": 4096,
                                          "truncate": truncate})
    base, _ = RopeConvention().frequencies(128)
    scaled, _ = conv.frequencies(128)
    turns = 4096 * base / (2 * np.pi)
    fast, slow = turns >= 32, turns <= 1
    assert fast.any() and slow.any()
    slack = base * 2 * float64_slack(conv, 128)
    assert_within(scaled[fast], base[fast], slack[fast], "yarn fast pairs")
    assert_within(scaled[slow] * 16, base[slow], slack[slow], "yarn slow pairs * s")
    ratio = scaled / base
    assert np.all(np.diff(ratio) <= 2 * float64_slack(conv, 128)[1:]) and ratio.min() >= 1 / 16 * (1 - slack.max())


def test_yarn_with_one_edge_steps_at_it():
    """beta_fast == beta_slow untruncated: ``low == high``, the 0.001 guard makes the ramp a
    step there, with no division by zero: f below the edge, f/s above."""
    conv = RopeConvention("yarn", params={"factor": 8.0, "beta_fast": 4.0, "beta_slow": 4.0, "truncate": False,
                                          "original_max_position_embeddings": 4096})
    base, _ = RopeConvention().frequencies(128)
    scaled, _ = conv.frequencies(128)
    turns = 4096 * base / (2 * np.pi)
    slack = base * 2 * float64_slack(conv, 128)
    assert np.all(np.isfinite(scaled)) and (turns > 4).any() and (turns < 4).any()
    assert_within(scaled[turns > 4], base[turns > 4], slack[turns > 4], "yarn below the edge")
    assert_within(scaled[turns < 4] * 8, base[turns < 4], slack[turns < 4], "yarn above the edge")
    # L0 = 6 < 2 pi: both edges clamp to pair 0, which keeps f_0 = 1; every other pair gets f/s.
    tiny, _ = conv.replace(params={"factor": 8.0, "original_max_position_embeddings": 6}).frequencies(128)
    assert tiny[0] == 1.0 and np.all(np.isfinite(tiny))
    assert_within(tiny[1:] * 8, base[1:], slack[1:], "yarn with L0 = 6")


def test_yarn_attention_factor():
    """A = 0.1 ln s + 1 by default, 1 when mscale equals mscale_all_dim (DeepSeek-V3), 1 at
    s <= 1, and an explicit attention_factor wins."""
    def yarn(**params):
        return RopeConvention("yarn", params={"original_max_position_embeddings": 4096, **params})

    def factor(**params):
        return yarn(**params).frequencies(64)[1]

    # ln s = (A - 1) / 0.1: A's relative error d becomes 10 A d in ln s, so in s; doubled for exp.
    derived = factor(factor=40.0)
    assert math.isclose(math.exp((derived - 1) / 0.1), 40.0,
                        rel_tol=2 * 10 * derived * rope_attention_factor_error(yarn(factor=40.0), "float64"))
    assert factor(factor=40.0, mscale=1.0, mscale_all_dim=1.0) == 1.0
    assert factor(factor=1.0) == 1.0 and factor(factor=0.5) == 1.0
    assert factor(factor=40.0, attention_factor=0.75) == 0.75
    assert factor(factor=40.0, mscale=1.0, mscale_all_dim=0.0) == factor(factor=40.0)


def test_longrope_switches_exactly_past_the_original_length():
    """Up to L0 the short factors divide f, from L0 + 1 the long ones; A satisfies
    ``L0 ** (A^2 - 1) = s`` with s = max_position_embeddings / L0."""
    conv = RopeConvention("longrope", params=LONG, max_position_embeddings=131072)
    base, _ = RopeConvention().frequencies(8)
    for seq_len, ext in ((None, 1.5), (4096, 1.5), (4097, 4.0), (131072, 4.0)):
        scaled, attention_factor = conv.frequencies(8, seq_len)
        assert_within(scaled * ext, base, base * 2 * float64_slack(conv, 8), f"longrope at L={seq_len}")
    s = 131072 / 4096
    # A's relative error d moves A^2 - 1 by 2 A^2 d, and L0 ** (A^2 - 1) relatively by ln L0 times that; doubled.
    rel = 4 * attention_factor**2 * math.log(4096) * rope_attention_factor_error(conv, "float64")
    assert math.isclose(4096 ** (attention_factor**2 - 1), s, rel_tol=rel)


def test_proportional_spans_the_head_with_zero_pairs():
    """Gemma 4: head 256, factor 0.25: 128 pairs, the first 32 with theta^(-2i/256) / s, the
    rest exactly 0; unlike a 64-wide default block, whose exponent runs over 64."""
    conv = RopeConvention("proportional", 1e6, {"factor": 2.0}, partial_rotary_factor=0.25)
    scaled, attention_factor = conv.frequencies(256)
    whole_head, _ = RopeConvention(theta=1e6).frequencies(256)
    assert scaled.size == 128 and attention_factor == 1.0 and conv.rotary_dim_for(256) == 256
    assert np.array_equal(scaled[:32] * 2, whole_head[:32]) and not scaled[32:].any()
    partial_block, _ = RopeConvention(theta=1e6, partial_rotary_factor=0.25).frequencies(256)
    assert not np.allclose(scaled[:32] * 2, partial_block)


scaled_types = st.sampled_from(["linear", "dynamic", "yarn", "llama3"])


@given(kind=scaled_types, theta=st.floats(2.0, 1e7), factor=st.floats(1.0, 64.0),
       head_dim=st.sampled_from([8, 16, 64, 128]), seq_len=st.integers(1, 200000))
def test_scaling_moves_each_frequency_between_f_over_s_and_f(kind, theta, factor, head_dim, seq_len):
    """For s >= 1 every type lowers frequencies by at most its stretch (s, or dynamic's
    ``s L'/L0 - (s - 1)``), never raises them, and keeps them decreasing in i."""
    params = {"factor": factor}
    if kind in ("yarn", "llama3"):
        params["original_max_position_embeddings"] = 4096
    if kind == "llama3":
        params.update(low_freq_factor=1.0, high_freq_factor=4.0)
    conv = RopeConvention(kind, theta, params, max_position_embeddings=4096)
    scaled, attention_factor = conv.frequencies(head_dim, seq_len)
    base, _ = RopeConvention(theta=theta).frequencies(head_dim)
    stretch = factor * max(seq_len, 4096) / 4096 - (factor - 1) if kind == "dynamic" else factor
    slack = 2 * float64_slack(conv, head_dim, seq_len) + float64_slack(RopeConvention(theta=theta), head_dim)
    assert np.all(np.isfinite(scaled)) and attention_factor >= 1.0
    assert np.all(scaled <= base * (1 + slack)) and np.all(scaled >= base / stretch * (1 - slack))
    assert np.all(np.diff(scaled) <= 0)
