"""The RoPE oracles and tolerance: layouts by hand, float64 against mpmath within the stated
bound, the rotation's properties, and both sides of the tolerance (correct low-precision
caches pass, realistic bugs fail)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc_spec.families.rope import oracle
from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.tolerance import (
    rope_angle_bound,
    rope_apply_bound,
    rope_apply_tolerance,
    rope_attention_factor_error,
    rope_cache_bound,
    rope_cache_tolerance,
    rope_frequency_error,
)
from posenc_spec.tolerance import compare, unit_roundoff
from spec_tests.assertions import assert_within

L0 = {"original_max_position_embeddings": 4096}
CASES = {  # name: (convention, head_dim)
    "default": (RopeConvention(), 128),
    "linear": (RopeConvention("linear", params={"factor": 4.0}), 128),
    "dynamic": (RopeConvention("dynamic", params={"factor": 2.0}, max_position_embeddings=4096), 128),
    "yarn": (RopeConvention("yarn", params={"factor": 40.0, "mscale": 1.0, "mscale_all_dim": 0.707, **L0}), 64),
    "yarn-untruncated": (RopeConvention("yarn", 1e6, {"factor": 4.0, "truncate": False, **L0}), 128),
    "yarn-tiny-l0": (RopeConvention("yarn", params={"factor": 8.0, "original_max_position_embeddings": 6}),
                     128),  # clamped to low == high == 0: the 0.001 guard
    "llama3": (RopeConvention("llama3", 500000.0, {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                   "original_max_position_embeddings": 8192}), 128),
    "longrope": (RopeConvention("longrope", params={"short_factor": list(np.linspace(1, 2, 48)),
                                                    "long_factor": list(np.linspace(1, 40, 48)), **L0},
                                max_position_embeddings=131072), 96),
    "proportional": (RopeConvention("proportional", 1e6, partial_rotary_factor=0.25), 256),
    "partial-last": (RopeConvention(rotary_dim=64, rotary_features="last"), 192),
}
LONGEST = 131072


def test_pair_columns_written_out_for_r8():
    """Which features pair up, for both layouts, in front of or behind the unrotated ones."""
    half = oracle.pair_columns(8, 8, "half")
    assert half.a.tolist() == [0, 1, 2, 3] and half.b.tolist() == [4, 5, 6, 7] and half.passthrough.size == 0
    inter = oracle.pair_columns(8, 8, "interleaved")
    assert inter.a.tolist() == [0, 2, 4, 6] and inter.b.tolist() == [1, 3, 5, 7]
    first = oracle.pair_columns(12, 8, "half", "first")
    assert first.a.tolist() == [0, 1, 2, 3] and first.b.tolist() == [4, 5, 6, 7]
    assert first.passthrough.tolist() == [8, 9, 10, 11]
    last = oracle.pair_columns(12, 8, "interleaved", "last")
    assert last.a.tolist() == [4, 6, 8, 10] and last.b.tolist() == [5, 7, 9, 11]
    assert last.passthrough.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="layout must be one of half, interleaved; got 'neox'"):
        oracle.pair_columns(8, 8, "neox")


def test_expand_written_out():
    """``half`` repeats the block (``cat(freqs, freqs)``), ``interleaved`` each value."""
    compact = np.array([[10.0, 11.0, 12.0]])
    assert oracle.expand(compact, "half").tolist() == [[10, 11, 12, 10, 11, 12]]
    assert oracle.expand(compact, "interleaved").tolist() == [[10, 10, 11, 11, 12, 12]]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("seq_len", [None, 4096, LONGEST])
def test_float64_frequencies_within_their_bound_of_mpmath(name, seq_len):
    """f' and A of every type, at lengths below and above L0."""
    conv, head_dim = CASES[name]
    fast, fast_factor = conv.frequencies(head_dim, seq_len)
    exact, exact_factor = oracle.exact_frequencies(conv, head_dim, seq_len)
    assert_within(fast, exact, exact * rope_frequency_error(conv, head_dim, seq_len, "float64"), f"{name} f'")
    assert abs(fast_factor - exact_factor) <= abs(exact_factor) * rope_attention_factor_error(conv, "float64")


@pytest.mark.parametrize("name", list(CASES))
def test_float64_cache_within_its_stated_bound_at_sampled_elements(name):
    """cos and sin at sampled positions up to 131071 and sampled pairs (both ends included)."""
    conv, head_dim = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    positions = np.unique(np.r_[0, 1, 4095, 4097, LONGEST - 1, rng.integers(0, LONGEST, 10)])
    pairs = np.unique(np.r_[0, conv.num_pairs(head_dim) - 1, rng.integers(0, conv.num_pairs(head_dim), 6)])
    exact_cos, exact_sin = oracle.exact_cache_values(positions, pairs, conv, head_dim, seq_len=LONGEST)
    cos, sin = oracle.cache(positions, conv, head_dim, seq_len=LONGEST)
    bound = rope_cache_bound(positions, conv, head_dim, "float64", "float64", "int64", LONGEST)[:, pairs]
    assert_within(cos[:, pairs], exact_cos, bound, f"{name} float64 cos")
    assert_within(sin[:, pairs], exact_sin, bound, f"{name} float64 sin")


drawn = st.builds(
    lambda kind, theta, factor: RopeConvention(kind, theta, {"factor": factor, **({} if kind == "linear" else L0)}),
    st.sampled_from(["linear", "yarn"]), st.floats(2.0, 1e7), st.floats(1.0, 64.0))


@given(conv=drawn, head_dim=st.sampled_from([4, 8, 32]), position=st.integers(0, 1 << 20))
def test_float64_cache_matches_mpmath_for_drawn_conventions(conv, head_dim, position):
    """Any theta, factor, head size and position up to 2**20: float64 within bound."""
    exact_cos, exact_sin = oracle.exact_cache_values([position], np.arange(head_dim // 2), conv, head_dim)
    cos, sin = oracle.cache([position], conv, head_dim)
    bound = rope_cache_bound([position], conv, head_dim, "float64", "float64", "int64")
    assert_within(np.r_[cos, sin], np.r_[exact_cos, exact_sin], np.r_[bound, bound], f"{conv.describe()} at {position}")


def random_heads(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name", ["yarn", "longrope", "partial-last"])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_apply_rotates_pairs_by_the_cache(name, layout):
    """Unit vector e_a of pair i becomes ``A (cos, sin)`` at ``(a_i, b_i)``; position 0 gives
    ``A x``; every pair keeps its norm times A; unrotated features pass unchanged."""
    conv, head_dim = CASES[name]
    columns = oracle.columns_for(conv, head_dim, layout)
    positions = np.array([0, 5, 4097, LONGEST - 1])
    cos, sin = oracle.cache(positions, conv, head_dim, seq_len=LONGEST)
    attention_factor = conv.frequencies(head_dim, LONGEST)[1]
    for i in (0, columns.a.size - 1):
        unit = np.zeros((positions.size, head_dim))
        unit[:, columns.a[i]] = 1.0
        rotated = oracle.apply(unit, positions, conv, head_dim, layout, seq_len=LONGEST)
        bound = rope_apply_bound(unit, positions, conv, head_dim, layout, "float64", "float64", "float64",
                                 seq_len=LONGEST)
        assert_within(rotated[:, columns.a[i]], cos[:, i], bound[:, columns.a[i]], f"{name} cos via e_a{i}")
        assert_within(rotated[:, columns.b[i]], sin[:, i], bound[:, columns.b[i]], f"{name} sin via e_a{i}")
    x = random_heads((3, positions.size, head_dim), 7)
    rotated = oracle.apply(x, positions, conv, head_dim, layout, seq_len=LONGEST)
    bound = rope_apply_bound(x, positions, conv, head_dim, layout, "float64", "float64", "float64", seq_len=LONGEST)
    assert_within(rotated[:, 0], attention_factor * x[:, 0], bound[:, 0], f"{name} at position 0")
    norm = np.hypot(rotated[..., columns.a], rotated[..., columns.b])
    assert_within(norm, attention_factor * np.hypot(x[..., columns.a], x[..., columns.b]),
                  bound[..., columns.a] + bound[..., columns.b], f"{name} pair norms")
    assert np.array_equal(rotated[..., columns.passthrough], x[..., columns.passthrough])
    assert not np.allclose(rotated[:, 1:][..., columns.a], x[:, 1:][..., columns.a])


@pytest.mark.parametrize("name", ["default", "yarn", "llama3", "partial-last"])
def test_scores_depend_only_on_the_offset(name):
    """``q(m) . k(n) = q(m + t) . k(n + t)``. Each side's score is off by at most
    ``sum_j |q'_j| t_k + |k'_j| t_q + t_q t_k`` plus the float64 dot's ``d u |q'| . |k'|``."""
    conv, head_dim = CASES[name]
    q, k = random_heads((1, head_dim), 1), random_heads((1, head_dim), 2)
    scores, bounds = [], []
    for m, n in ((3, 40), (3 + 100000, 40 + 100000), (70000, 70040)):
        q_rot = oracle.apply(q, [m], conv, head_dim, seq_len=LONGEST)
        k_rot = oracle.apply(k, [n], conv, head_dim, seq_len=LONGEST)
        t_q = rope_apply_bound(q, [m], conv, head_dim, "half", "float64", "float64", "float64", seq_len=LONGEST)
        t_k = rope_apply_bound(k, [n], conv, head_dim, "half", "float64", "float64", "float64", seq_len=LONGEST)
        scores.append(float(np.sum(q_rot * k_rot)))
        bounds.append(float(np.sum(np.abs(q_rot) * t_k + np.abs(k_rot) * t_q + t_q * t_k)
                            + head_dim * unit_roundoff("float64") * np.sum(np.abs(q_rot * k_rot))))
    assert_within(scores[1], scores[0], bounds[0] + bounds[1], f"{name}: q(m).k(n) shifted by 100000")
    assert abs(scores[2] - scores[0]) > bounds[0] + bounds[2]  # a different offset gives a different score


# -- the tolerance, both sides ------------------------------------------------------------

PHI2 = RopeConvention(partial_rotary_factor=0.4)  # head 80, r = 32
POSITIONS = np.unique(np.r_[np.arange(2048), np.geomspace(2048, LONGEST - 1, 300).astype(np.int64)])


def torch_cache(conv, head_dim, out_dtype, position_dtype=torch.int64, freq_dtype=torch.float32,
                angle_dtype=torch.float32, exponent_width=None):
    """transformers' default cache: ``inv_freq = 1 / theta ** (arange(0, r, 2) / r)`` in float32,
    the angle ``p * inv_freq``, cos and sin in float32, cast; the keywords put in the bugs."""
    r = conv.rotary_dim_for(head_dim)
    inv_freq = 1.0 / (conv.theta ** (torch.arange(0, r, 2, dtype=torch.float32) / (exponent_width or r)))
    positions = torch.as_tensor(POSITIONS).to(position_dtype)
    angle = (positions[:, None].to(angle_dtype) * inv_freq.to(freq_dtype)[None, :].to(angle_dtype)).float()
    return angle.cos().to(out_dtype), angle.sin().to(out_dtype)


def ratio(actual, expected, tol) -> float:
    """The largest error/tolerance ratio (:func:`~posenc_spec.tolerance.compare`: NaN, as
    float16 positions overflowing at 65520 give, counts as infinite)."""
    actual = torch.as_tensor(actual).double().numpy()
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    return compare(actual, expected, tol).max_ratio


@pytest.mark.parametrize("conv, head_dim", [(RopeConvention(), 128), (PHI2, 80), (RopeConvention(theta=500000.0), 64)])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("position_dtype", [torch.int64, torch.float32])
def test_correct_low_precision_caches_pass(conv, head_dim, out_dtype, position_dtype):
    """Positions in int64 or float32, angles in float32, results cast: within the bound, and
    reaching at least an eighth of it (a bound many times too loose would let bugs through)."""
    expected_cos, expected_sin = oracle.cache(POSITIONS, conv, head_dim)
    tol = rope_cache_tolerance(POSITIONS, conv, head_dim, out_dtype, "float32", position_dtype)
    cos, sin = torch_cache(conv, head_dim, out_dtype, position_dtype)
    assert 1 / 8 <= max(ratio(cos, expected_cos, tol), ratio(sin, expected_sin, tol)) <= 1


def test_float32_positions_past_2_to_the_24_round():
    """Above 2**24 a float32 position is off by up to one: the bound widens by ``u32 |theta|``
    there, and a cache from float32 positions still passes."""
    positions = np.arange(2**24 - 4, 2**24 + 12)
    conv = RopeConvention()
    inv_freq = torch.as_tensor(conv.frequencies(64)[0], dtype=torch.float32)
    angle = torch.as_tensor(positions).to(torch.float32)[:, None] * inv_freq[None, :]
    expected, _ = oracle.cache(positions, conv, 64)
    tol = rope_cache_tolerance(positions, conv, 64, "float32", "float32", "float32")
    assert ratio(angle.cos(), expected, tol) <= 1
    above, at = np.flatnonzero(positions == 2**24 + 1)[0], np.flatnonzero(positions == 2**24)[0]
    assert tol[above, 0] - tol[at, 0] >= unit_roundoff("float32") * 2**24  # R2's step, pair 0 (f = 1)


@pytest.mark.parametrize("angle_dtype, exact_up_to", [("bfloat16", 256), ("float16", 2048), ("float32", 2**24)])
def test_positions_are_exact_up_to_the_dtypes_integer_limit(angle_dtype, exact_up_to):
    """R2 in numbers: a position held in the angle dtype is exact up to 256 (bfloat16), 2048
    (float16), 2**24 (float32), and off by ``u`` from the next one on (pair 0, ``f = 1``:
    the bound divided by the position steps by ``u`` there and nowhere else)."""
    positions = np.array([exact_up_to - 1, exact_up_to, exact_up_to + 1, exact_up_to + 2])
    relative = rope_angle_bound(positions, RopeConvention(), 8, "float32", angle_dtype)[:, 0] / positions
    steps = np.diff(relative)
    assert steps[0] == pytest.approx(0, abs=1e-12) and steps[2] == pytest.approx(0, abs=1e-12), steps
    assert steps[1] == pytest.approx(unit_roundoff(angle_dtype), rel=1e-9), steps


@pytest.mark.parametrize("bug, conv, head_dim, out_dtype, kwargs", [
    ("positions in bfloat16", RopeConvention(), 128, torch.float32, {"position_dtype": torch.bfloat16}),
    ("positions in bfloat16", RopeConvention(), 128, torch.bfloat16, {"position_dtype": torch.bfloat16}),
    ("inv_freq rounded to bfloat16", RopeConvention(), 128, torch.float32, {"freq_dtype": torch.bfloat16}),
    ("inv_freq rounded to bfloat16", RopeConvention(), 128, torch.bfloat16, {"freq_dtype": torch.bfloat16}),
    ("angles in float16", RopeConvention(), 128, torch.float16, {"angle_dtype": torch.float16}),
    ("exponent over head_dim", PHI2, 80, torch.float32, {"exponent_width": 80}),
])
def test_realistic_cache_bugs_fail(bug, conv, head_dim, out_dtype, kwargs):
    """Each bug of the precision and partial-rotary lists of the RoPE reference
    (docs/families/rope-reference.md) exceeds the bound somewhere."""
    expected_cos, _ = oracle.cache(POSITIONS, conv, head_dim)
    tol = rope_cache_tolerance(POSITIONS, conv, head_dim, out_dtype)
    cos, _ = torch_cache(conv, head_dim, out_dtype, **kwargs)
    assert ratio(cos, expected_cos, tol) > 1, bug


def torch_apply(x, cos, sin, layout):
    """transformers' ``x cos + rotate_half(x) sin`` (half), or GPT-J's rotate-every-two."""
    if layout == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin
    turned = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    return x * cos + turned * sin


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout, expected_layout", [("half", "half"), ("interleaved", "interleaved"),
                                                     ("half", "interleaved"), ("interleaved", "half")])
def test_apply_passes_in_its_layout_and_fails_in_the_other(dtype, layout, expected_layout):
    """q rotated in q's dtype with cos/sin cast to it: within ``rope_apply_tolerance`` when the
    layout is the declared one; the swapped layout (bugs 14-17) fails."""
    conv, head_dim = RopeConvention(), 64
    x = torch.as_tensor(random_heads((2, POSITIONS.size, head_dim), 3)).to(dtype)
    cos, sin = (torch.as_tensor(oracle.expand(value.float().numpy(), layout)).to(dtype)
                for value in torch_cache(conv, head_dim, torch.float32))
    rotated = torch_apply(x, cos, sin, layout)
    x_exact = x.double().numpy()
    expected = oracle.apply(x_exact, POSITIONS, conv, head_dim, expected_layout)
    tol = rope_apply_tolerance(x_exact, POSITIONS, conv, head_dim, expected_layout, dtype, dtype)
    assert (ratio(rotated, expected, tol) <= 1) == (layout == expected_layout)
