"""The band of :mod:`posenc_spec.families.t5buckets.tolerance`, exercised: correct float
logarithms measured inside ``delta``, the band holding the exact bucket, admitting the
neighbour transformers' own float32 code returns where ``v`` sits on a boundary, and refusing
the dtypes that cannot place a bucket."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

from posenc_spec.families.t5buckets import oracle, tolerance
from posenc_spec.families.t5buckets.conventions import PRESETS, BucketConvention
from spec_tests.families.t5buckets.assertions import assert_buckets_equal

SETTINGS = [BucketConvention(True, 34, 27), BucketConvention(False, 17, 27), BucketConvention(True, 62, 532),
            BucketConvention(False, 200, 1000), BucketConvention(True, 1024, 1100)]
MEASURED = [*PRESETS.values(), *SETTINGS]


@functools.lru_cache(maxsize=32)
def _exact_v_of(convention) -> np.ndarray:
    """The exact ``v`` at every distance from E to 4M (float64 of the 50-digit values)."""
    distances = range(convention.max_exact, 4 * convention.max_distance + 1)
    return np.array([float(oracle.exact_log_position(n, convention)) for n in distances])


def _distances(convention) -> np.ndarray:
    return np.arange(convention.max_exact, 4 * convention.max_distance + 1)


def _torch_w(n, convention, dtype=torch.float32, add_max_exact=False, constant_in_dtype=False):
    """``v`` as real code computes it: transformers' T5 form, WavLM's (``E`` added before
    truncating, returned minus ``E`` exactly), or candle's (``ln(M/E)`` in the dtype too)."""
    e, length = convention.max_exact, convention.log_buckets
    ratio = math.log(convention.max_distance / e)
    if constant_in_dtype:
        ratio = torch.log(torch.tensor(convention.max_distance, dtype=dtype) / e)
    w = torch.log(torch.as_tensor(n).to(dtype) / e) / ratio * length
    if add_max_exact:
        return (e + w).double().numpy() - e
    return w.double().numpy()


def _t5x_w(n, convention):
    """T5X's numpy form: the float32 quotient plus float32's epsilon, then the logarithm."""
    e, length = convention.max_exact, convention.log_buckets
    quotient = np.asarray(n).astype(np.float32) / e + np.finfo(np.float32).eps
    return (np.log(quotient) / np.log(convention.max_distance / e) * length).astype(np.float64)


FORMS = {"transformers": _torch_w, "wavlm-sum": lambda n, c: _torch_w(n, c, add_max_exact=True),
         "candle-float32-constant": lambda n, c: _torch_w(n, c, constant_in_dtype=True), "t5x-numpy-eps": _t5x_w}


@pytest.mark.parametrize("form", FORMS)
def test_float32_logarithms_within_the_band(form):
    """Each real form of the float32 computation, at every distance from E to 4M of every
    preset and of settings where ``M/E`` is not a power of two (up to 4096 buckets): within
    ``delta(n)``. Measured: transformers' and candle's forms at most 0.07 of it at T5's
    settings and 0.15 anywhere; WavLM's sum 0.37; T5X's epsilon (a bias, not a rounding) 0.50."""
    worst = 0.0
    for convention in MEASURED:
        distances = _distances(convention)
        error = np.abs(FORMS[form](distances, convention) - _exact_v_of(convention))
        ratio = float(np.max(error / tolerance.log_position_bound(distances, convention)))
        assert ratio < 1, f"{form} at {convention.name()}: float32 v off by {ratio:.3g} of delta"
        worst = max(worst, ratio)
    assert worst > 0.01, f"{form}: delta is over a hundred times the largest float32 error ({worst:.3g})"


@pytest.mark.parametrize("preset", ["t5-encoder", "t5-decoder", "layoutlm-2d"])
def test_float16_logarithm_within_its_band(preset):
    """A float16 logarithm in transformers' form, where float16 is allowed (its band below half a
    bucket): within the float16 ``delta``; measured at most 0.071 of it."""
    convention = PRESETS[preset]
    distances = _distances(convention)
    error = np.abs(_torch_w(distances, convention, torch.float16) - _exact_v_of(convention))
    ratio = float(np.max(error / tolerance.log_position_bound(distances, convention, "float16")))
    assert ratio < 1, f"float16 v at {preset} off by {ratio:.3g} of its delta"


@pytest.mark.parametrize("convention", MEASURED, ids=lambda convention: convention.name())
def test_band_holds_the_exact_bucket_and_at_most_one_neighbour(convention):
    """Everywhere in [-4M, 4M] and at the int64 extremes: ``low <= exact <= high <= low + 1``."""
    reach = 4 * convention.max_distance
    relative = np.concatenate([np.arange(-reach, reach + 1), [np.iinfo(np.int64).min, np.iinfo(np.int64).max]])
    exact = oracle.buckets(relative, convention)
    low, high = tolerance.bucket_band(relative, convention)
    outside = np.flatnonzero((low > exact) | (exact > high) | (high > low + 1))
    assert not outside.size, (f"{convention.name()}: relative position {relative[outside[0]]}: band "
                              f"[{low[outside[0]]}, {high[outside[0]]}], exact {exact[outside[0]]}")


@pytest.mark.parametrize("preset, widened", [("t5-encoder", [-64, -32, -16, 16, 32, 64]), ("t5-decoder", [])])
def test_band_is_exact_at_t5_settings_but_on_its_exact_boundaries(preset, widened):
    """At T5's settings the band admits a second bucket only where ``v`` is exactly an integer:
    bidirectional distances 16, 32, 64 (``v`` = 2, 4, 6); causal, nowhere."""
    relative = np.arange(-512, 513)
    low, high = tolerance.bucket_band(relative, PRESETS[preset])
    assert relative[high > low].tolist() == widened


def _correctly_rounded_float32_bucket(distance: int, convention) -> int:
    """The bucket of a float32 pipeline whose every step is correctly rounded (the logarithms
    taken in float64 and rounded once): what any IEEE machine computes with an exact libm."""
    f32 = np.float32
    e, length = convention.max_exact, convention.log_buckets
    quotient = f32(f32(distance) / f32(e))
    w = f32(f32(f32(math.log(float(quotient))) / f32(math.log(convention.max_distance / e))) * f32(length))
    return e + min(math.floor(float(w)), length - 1)


@pytest.mark.parametrize("convention, relative, neighbour, exact", [
    (BucketConvention(True, 34, 27), -18, 13, 14),
    (BucketConvention(True, 34, 27), 18, 30, 31),
    (BucketConvention(False, 17, 27), -18, 13, 14),
    (BucketConvention(True, 62, 532), -218, 27, 26),
])
def test_band_admits_the_neighbour_float32_lands_in(convention, relative, neighbour, exact):
    """Where ``M/E`` is not a power of two, correct float32 code lands in the other neighbour:
    34 buckets up to 27 put distance 18 at ``v = 9 ln(2.25) / ln(3.375) = 6`` exactly, which a
    float32 pipeline with correctly rounded steps computes as 5.9999995 (bucket 13, not 14); at
    62 buckets up to 532, ``v(218)`` lies just below 12 and rounds up to 12.0. Exact comparison
    would call correct code wrong: the band admits both neighbours and nothing else, and
    transformers' own T5 function lies in it (it returns the neighbour here on this machine's
    default, avx2 and avx512 kernels alike)."""
    from transformers.models.t5.modeling_t5 import T5Attention

    distance = abs(relative) if convention.bidirectional else max(-relative, 0)
    first = convention.half if convention.bidirectional and relative > 0 else 0
    assert first + _correctly_rounded_float32_bucket(distance, convention) == neighbour
    assert oracle.exact_bucket(relative, convention) == exact
    low, high = tolerance.bucket_band(np.array([relative]), convention)
    assert sorted({int(low[0]), int(high[0])}) == sorted({neighbour, exact})
    got = int(T5Attention._relative_position_bucket(torch.tensor([relative]), convention.bidirectional,
                                                     convention.num_buckets, convention.max_distance))
    assert low[0] <= got <= high[0], f"transformers returned {got} outside [{low[0]}, {high[0]}]"


def test_transformers_float32_code_stays_in_the_band_over_many_settings():
    """transformers' T5 function at every third count of 4..60 buckets and every fifth
    max_distance up to 300 (both directions), at every relative position in [-2M - 4, 2M + 4]:
    never outside the band (on this machine it leaves the exact bucket at one of them)."""
    from transformers.models.t5.modeling_t5 import T5Attention

    for num_buckets in range(4, 61, 3):
        for bidirectional in (True, False):
            half = num_buckets // 2 if bidirectional else num_buckets
            for max_distance in range(half // 2 + 1, 301, 5):
                convention = BucketConvention(bidirectional, num_buckets, max_distance)
                relative = np.arange(-(2 * max_distance + 4), 2 * max_distance + 5)
                got = T5Attention._relative_position_bucket(torch.tensor(relative), bidirectional, num_buckets,
                                                            max_distance).numpy()
                low, high = tolerance.bucket_band(relative, convention)
                assert_buckets_equal(got, np.clip(got, low, high), relative, f"transformers at {convention.name()}")


def test_refused_dtypes_say_why():
    """bfloat16 is refused for every convention; float16 where its band reaches half a bucket
    (WavLM: 0.91 at max_distance) or max_distance exceeds float16's range; anything else by name."""
    with pytest.raises(ValueError, match="log_dtype bfloat16: bfloat16's 8-bit significand"):
        tolerance.bucket_band(np.arange(3), PRESETS["t5-encoder"], torch.bfloat16)
    with pytest.raises(ValueError, match=r"log_dtype float16 cannot place the buckets of wavlm: .* 0\.91 of a bucket"):
        tolerance.bucket_band(np.arange(3), PRESETS["wavlm"], "float16")
    with pytest.raises(ValueError, match="log_dtype float16 holds distances up to 65504"):
        tolerance.log_position_bound(np.arange(3), BucketConvention(True, 8, 70000), np.float16)
    with pytest.raises(ValueError, match="log_dtype must be one of float64, float32, float16, got 'int8'"):
        tolerance.log_position_bound(np.arange(3), PRESETS["t5-encoder"], "int8")
    assert tolerance.check_band(PRESETS["t5-decoder"], torch.float16) == "float16"
