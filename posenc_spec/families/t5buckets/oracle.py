"""The expected buckets, decided exactly, and the logarithmic position in float64 with a bound.

Exact: the distance ``n >= E`` is in logarithmic bucket ``E + k`` (``k < L``) when
``k <= L ln(n/E) / ln(M/E) < k + 1``. Raised to powers, ``L ln(n/E) / ln(M/E) >= k`` is the
integer comparison ``n**L * E**k >= M**k * E**L``, so bucket ``E + k`` starts at the least
integer ``n`` with ``n**L >= E**(L-k) * M**k``: the ceiling of an integer ``L``-th root, found
with integers alone (:func:`bucket_starts`). No floating point decides a bucket: the ``L - 1``
starts are computed once per convention, and every bucket is a lookup among them, for Python
ints of any size (:func:`exact_bucket`) and vectorised over int64 arrays (:func:`buckets`),
``-2**63`` included.

Fast: :func:`log_position` is ``v = L ln(n/E) / ln(M/E)`` in float64 NumPy, the real value a
float implementation truncates; its error against the exact ``v`` (:func:`exact_log_position`,
mpmath at 50 digits) is at most :func:`~posenc_spec.families.t5buckets.tolerance.log_position_bound`
with ``log_dtype="float64"``, measured in ``spec_tests/families/t5buckets/test_oracle.py``. It
serves the tolerance band only, never the expected bucket.
"""

from __future__ import annotations

import bisect
import functools
import math

import mpmath
import numpy as np

from .conventions import BucketConvention

EXACT_DIGITS = 50


def _start(e: int, m: int, length: int, k: int) -> int:
    """The least integer ``n`` with ``n**length >= e**(length-k) * m**k``: a float estimate of
    ``e**((length-k)/length) * m**(k/length)``, then exact integer steps to the answer."""
    target = e ** (length - k) * m**k
    n = max(math.ceil(math.exp(((length - k) * math.log(e) + k * math.log(m)) / length)), 1)
    while n**length < target:
        n += 1
    while n > 1 and (n - 1) ** length >= target:
        n -= 1
    return n


@functools.lru_cache(maxsize=64)
def bucket_starts(convention: BucketConvention) -> tuple[int, ...]:
    """The distance at which each logarithmic bucket ``E + k``, ``k = 1 .. L-1``, starts: the
    least ``n`` with ``n**L >= E**(L-k) * M**k`` (non-decreasing; equal starts mean empty buckets)."""
    e, m, length = convention.max_exact, convention.max_distance, convention.log_buckets
    return tuple(_start(e, m, length, k) for k in range(1, length))


def bucket_of_distance(distance: int, convention: BucketConvention) -> int:
    """The bucket of distance ``n >= 0`` within its direction (``0 .. H-1``), exactly."""
    n = int(distance)
    if n < 0:
        raise ValueError(f"a distance is >= 0, got {n}")
    if n < convention.max_exact:
        return n
    return convention.max_exact + bisect.bisect_right(bucket_starts(convention), n)


def exact_bucket(relative_position: int, convention: BucketConvention) -> int:
    """The bucket of one relative position (a Python int of any size), in the declared sign."""
    distance, first = convention.distance_and_offset(relative_position)
    return first + bucket_of_distance(distance, convention)


def distances(relative_positions, convention: BucketConvention) -> tuple[np.ndarray, np.ndarray]:
    """``(n, first)`` of every element of an integer array, vectorised: ``n`` as uint64 (so
    that ``|-2**63|`` is exact), ``first`` the first bucket of each element's direction."""
    r = np.asarray(relative_positions)
    if r.dtype.kind not in "iu":
        raise TypeError(f"relative positions must be integers, got dtype {r.dtype}")
    r = r.astype(np.int64, copy=False)
    if convention.relative_position == "query-minus-memory":
        after = r < 0  # the key after the query
        before = r > 0
    else:
        after, before = r > 0, r < 0
    magnitude = np.where(r < 0, np.uint64(0) - r.astype(np.uint64), r.astype(np.uint64))
    if convention.bidirectional:
        return magnitude, np.where(after, convention.half, 0)
    return np.where(before, magnitude, np.uint64(0)), np.zeros(r.shape, dtype=np.int64)


def buckets(relative_positions, convention: BucketConvention) -> np.ndarray:
    """The exact bucket of every element of an integer array (int64 result, same shape)."""
    n, first = distances(relative_positions, convention)
    return first + bucket_of_distances(n, convention)


def bucket_of_distances(n: np.ndarray, convention: BucketConvention) -> np.ndarray:
    """:func:`bucket_of_distance` of a uint64 array of distances, vectorised."""
    e = convention.max_exact
    starts = np.array(bucket_starts(convention), dtype=np.uint64)
    large = e + np.searchsorted(starts, n, side="right").astype(np.int64)
    return np.where(n < e, n.astype(np.int64), large)


def log_position(n, convention: BucketConvention) -> np.ndarray:
    """``v = L ln(n/E) / ln(M/E)`` in float64 for distances ``n >= E`` (the fast path; NaN below E)."""
    n = np.asarray(n, dtype=np.float64)
    e, length = convention.max_exact, convention.log_buckets
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log(n / e) / math.log(convention.max_distance / e) * length
    return np.where(n >= e, v, np.nan)


def exact_log_position(n: int, convention: BucketConvention):
    """``v`` of one distance at :data:`EXACT_DIGITS` significant digits (an mpmath number)."""
    e, length = convention.max_exact, convention.log_buckets
    with mpmath.workdps(EXACT_DIGITS):
        return length * mpmath.log(mpmath.mpf(int(n)) / e) / mpmath.log(mpmath.mpf(convention.max_distance) / e)


def table(query_length: int, key_length: int, convention: BucketConvention, query_offset: int = 0) -> np.ndarray:
    """The ``(query_length, key_length)`` buckets of ``r = key - (query + query_offset)``, as
    T5's ``compute_bias`` forms them (``query_offset`` is its ``past_seen_tokens``; x-transformers
    aligns the queries with the last keys: ``query_offset = key_length - query_length``); with
    ``query-minus-memory`` declared, the table is still of the same pairs, in that sign."""
    queries = np.arange(query_length, dtype=np.int64)[:, None] + query_offset
    keys = np.arange(key_length, dtype=np.int64)[None, :]
    relative = keys - queries
    if convention.relative_position == "query-minus-memory":
        relative = -relative
    return buckets(relative, convention)
