"""The exact oracle against independent computations, and the float64 fast path within its bound."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from posenc_spec.families.t5buckets import oracle
from posenc_spec.families.t5buckets.conventions import PRESETS, BucketConvention
from posenc_spec.families.t5buckets.tolerance import log_position_bound
from spec_tests.families.t5buckets.assertions import assert_buckets_equal
from spec_tests.pretrained.test_architecture import BUCKET_STARTS
from spec_tests.t5_buckets import t5_bucket

# Settings beside the presets: M/E a power of two or not, odd counts, M just above E, large L.
SETTINGS = [BucketConvention(True, 34, 27), BucketConvention(False, 17, 27), BucketConvention(True, 33, 100),
            BucketConvention(False, 8, 5), BucketConvention(True, 6, 2), BucketConvention(False, 200, 1000)]
CONVENTIONS = [preset for preset in PRESETS.values() if preset.relative_position == "memory-minus-query"] + SETTINGS


DENSE = 2048  # beyond this many positions, the jump points alone (see the test's docstring)


def _jump_points(convention) -> np.ndarray:
    """Each bucket start and the distance before it, E - 1, E and 4M, of both signs."""
    e, reach = convention.max_exact, 4 * convention.max_distance
    found = {e - 1, e, reach} | {n for start in oracle.bucket_starts(convention) for n in (start - 1, start)}
    return np.array(sorted({sign * n for n in found for sign in (-1, 1)}), dtype=np.int64)


@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda convention: convention.name())
def test_buckets_agree_with_the_loop_rendering(convention):
    """The oracle's lookup among exact starts equals ``spec_tests/t5_buckets.py``'s loop of
    power comparisons at every relative position in [-4M, 4M]. Where that is over 2048
    positions, at each start and the distance before it (and E - 1, E, 4M): both functions
    are non-decreasing in the distance within a direction, so agreeing at every jump of one
    and the point before it, they agree everywhere between."""
    reach = 4 * convention.max_distance
    relative = np.arange(-reach, reach + 1) if 2 * reach + 1 <= DENSE else _jump_points(convention)
    expected = [t5_bucket(int(r), convention.bidirectional, convention.num_buckets, convention.max_distance)
                for r in relative]
    assert_buckets_equal(oracle.buckets(relative, convention), expected, relative, f"oracle at {convention.name()}")


@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda convention: convention.name())
def test_each_start_is_where_the_logarithm_reaches_its_bucket(convention):
    """At 60 digits: ``v(start_k) >= k > v(start_k - 1)`` for each logarithmic bucket ``E + k``,
    ``v = L ln(n/E) / ln(M/E)`` (equality only where ``n/E`` is a power of ``(M/E)**(1/L)``)."""
    e, m, length = convention.max_exact, convention.max_distance, convention.log_buckets
    with mpmath.workdps(60):
        def v(n):
            return length * mpmath.log(mpmath.mpf(n) / e) / mpmath.log(mpmath.mpf(m) / e)

        for k, start in enumerate(oracle.bucket_starts(convention), start=1):
            assert v(start) >= k - mpmath.mpf(10) ** -50 and v(start - 1) < k, \
                f"{convention.name()}: bucket {e + k} starts at {start}: v = {v(start)}, v(start - 1) = {v(start - 1)}"


@pytest.mark.parametrize("bidirectional", [True, False], ids=["encoder", "decoder"])
def test_t5_starts_are_the_hand_derived_ones(bidirectional):
    """At T5's settings the starts are the distances ``ceil(8 * 16 ** (j / 8))`` and
    ``ceil(16 * 8 ** (j / 16))`` worked out by hand in ``test_pretrained_architecture.py``."""
    preset = PRESETS["t5-encoder" if bidirectional else "t5-decoder"]
    assert list(oracle.bucket_starts(preset)) == BUCKET_STARTS[bidirectional][1:]


def test_exact_boundaries_at_t5_encoder_settings():
    """Bidirectional T5 puts ``v`` exactly on an integer at distances 16, 32 and 64 (``2 log2(n/8)``):
    the integer comparison decides them, ``n**8 * 8**k == 128**k * 8**8``, into the upper bucket."""
    preset = PRESETS["t5-encoder"]
    for distance, k in [(16, 2), (32, 4), (64, 6)]:
        assert distance**8 * 8**k == 128**k * 8**8
        assert oracle.exact_bucket(-distance, preset) == 8 + k and oracle.exact_bucket(-(distance - 1), preset) == 7 + k


def test_vectorised_buckets_equal_the_scalar_ones_at_the_extremes():
    """The int64 lookup (distances as uint64) equals the Python-int one at +-(2**63 - 1),
    -2**63 and seeded draws over the whole int64 range, in both directions and both signs."""
    draws = np.random.default_rng(5).integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 200, endpoint=True)
    relative = np.concatenate([draws, [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0, 1]]).astype(np.int64)
    for preset in PRESETS.values():
        expected = [oracle.exact_bucket(int(r), preset) for r in relative]
        assert_buckets_equal(oracle.buckets(relative, preset), expected, relative, f"vectorised at {preset.name()}")


def test_python_ints_beyond_int64_saturate():
    """Any Python int is a relative position: 10**30 is in the last bucket of its direction."""
    assert oracle.exact_bucket(-10**30, PRESETS["t5-encoder"]) == 15
    assert oracle.exact_bucket(10**30, PRESETS["t5-encoder"]) == 31
    assert oracle.exact_bucket(-10**30, PRESETS["t5-decoder"]) == 31
    assert oracle.exact_bucket(10**30, PRESETS["t5-decoder"]) == 0


def test_query_minus_memory_is_the_mirror_image():
    """Under ``query-minus-memory`` the bucket of ``r`` is T5's bucket of ``-r``."""
    relative = np.arange(-300, 301)
    assert_buckets_equal(oracle.buckets(relative, PRESETS["gluonnlp-encoder"]),
                         oracle.buckets(-relative, PRESETS["t5-encoder"]), relative, "query-minus-memory")


@pytest.mark.parametrize("offset", [0, 3])
def test_table_holds_the_buckets_of_key_minus_query(offset):
    """``table(q, k)[i, j]`` is the bucket of ``j - (i + offset)``; the query-minus-memory table
    holds the same buckets (it is handed the same pairs in its own sign)."""
    preset = PRESETS["t5-decoder"]
    table = oracle.table(7, 12, preset, offset)
    expected = [[oracle.exact_bucket(j - (i + offset), preset) for j in range(12)] for i in range(7)]
    assert table.tolist() == expected
    assert oracle.table(7, 12, PRESETS["gluonnlp-encoder"], offset).tolist() == \
        oracle.table(7, 12, PRESETS["t5-encoder"], offset).tolist()


def test_fast_log_position_within_its_bound():
    """The float64 ``v`` against 50-digit mpmath at every distance from E to 4M of every preset:
    within ``log_position_bound(..., "float64")`` (from 3e-14 at T5's settings to 5e-13 at
    CPM-Ant's). Measured: 0.087 of it at T5's, 0.16 at WavLM's; and the bound is no blanket,
    the error reaching more than a hundredth of it."""
    worst = 0.0
    for preset in PRESETS.values():
        distances = np.arange(preset.max_exact, 4 * preset.max_distance + 1)
        fast = oracle.log_position(distances, preset)
        exact = np.array([float(oracle.exact_log_position(int(n), preset)) for n in distances])
        bound = log_position_bound(distances, preset, "float64")
        ratio = float(np.max(np.abs(fast - exact) / bound))
        assert ratio < 1, f"{preset.name()}: float64 v off by {ratio:.3g} of its bound"
        worst = max(worst, ratio)
    assert worst > 0.01, f"the float64 bound is over a hundred times the largest error: {worst:.3g}"


def test_starts_of_the_largest_convention_are_cheap_and_increasing():
    """4096 buckets up to distance 2**40: 1023 starts, non-decreasing, the last below M, found
    with integers alone; ``_start`` matches a direct search at a few k."""
    convention = BucketConvention(True, 4096, 2**40)
    starts = oracle.bucket_starts(convention)
    assert len(starts) == convention.log_buckets - 1 and bool(np.all(np.diff(starts) >= 0))
    assert starts[-1] < convention.max_distance
    e, m, length = convention.max_exact, convention.max_distance, convention.log_buckets
    for k in (1, 500, length - 1):
        n = starts[k - 1]
        assert n**length * e**k >= m**k * e**length > (n - 1) ** length * e**k
    assert math.isclose(starts[511], 1024 * (2**40 / 1024) ** (512 / 1024), rel_tol=1e-9)
