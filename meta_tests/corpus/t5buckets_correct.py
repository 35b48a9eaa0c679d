"""Correct T5 bucket functions in other idioms, each registered with what it declares.

None uses the project's oracle: each computes the buckets the way the code it imitates does
(NumPy, plain Python floats or integers, torch's bucketize, a lookup table, T5X's epsilon,
GluonNLP's sign, tables by broadcasting, a module holding its settings). Most also get
``-2**(b-1)`` right (they saturate or widen the distance before ``abs()`` can overflow); the
copies of transformers' code at the end do not, as the real code of
``spec_tests/families/t5buckets/`` does not: no difference of two positions is ``-2**(b-1)``,
and the gate notes what they return there without failing them.

A catalogue, one function per idiom; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import bisect
import functools
import math

import numpy as np
import torch

from .t5buckets_registry import MODULE_INIT, t5_correct


def _numpy_distances(relative_position, bidirectional, num_buckets):
    """(n, first, per-direction count) in NumPy, the distance as uint64 so |-2**63| is exact."""
    r = np.asarray(relative_position).astype(np.int64)
    magnitude = np.where(r < 0, np.uint64(0) - r.astype(np.uint64), r.astype(np.uint64))
    if bidirectional:
        half = num_buckets // 2
        return magnitude, np.where(r > 0, half, 0), half
    return np.where(r < 0, magnitude, np.uint64(0)), np.zeros(r.shape, dtype=np.int64), num_buckets


@t5_correct(idiom="NumPy, float64 logarithms, distances as uint64, np.where over the two regions",
            bucket_preset="t5-encoder")
def numpy_float64(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n, first, half = _numpy_distances(relative_position, bidirectional, num_buckets)
    max_exact = half // 2
    with np.errstate(divide="ignore"):
        large = max_exact + np.floor(np.log(n / max_exact) / np.log(max_distance / max_exact) * (half - max_exact))
    large = np.minimum(np.nan_to_num(large, neginf=0.0), half - 1).astype(np.int64)
    return first + np.where(n < max_exact, n.astype(np.int64), large)


@t5_correct(idiom="plain Python, one math.log per element over .tolist(), a nested list back",
            bucket_preset="t5-decoder")
def python_floats(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    def bucket(r):
        half, first = (num_buckets // 2, num_buckets // 2 if r > 0 else 0) if bidirectional else (num_buckets, 0)
        n = abs(r) if bidirectional else max(-r, 0)
        max_exact = half // 2
        if n < max_exact:
            return first + n
        v = math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact)
        return first + min(max_exact + int(v), half - 1)

    def walk(values):
        return [walk(item) for item in values] if isinstance(values, list) else bucket(values)

    return walk(relative_position.tolist())


@t5_correct(idiom="plain Python integers: bucket k while n**L * E**k >= M**k * E**L, no logarithm at all",
            bucket_preset="wavlm")
def python_integer_powers(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact, log_buckets = half // 2, half - half // 2

    @functools.cache
    def within(n):
        """The bucket of distance n within its direction (n saturated at max_distance: every
        larger one is in the last bucket too)."""
        if n < max_exact:
            return n
        n = min(n, max_distance)
        k = 0
        while k + 1 < log_buckets and (n**log_buckets * max_exact ** (k + 1)
                                       >= max_distance ** (k + 1) * max_exact**log_buckets):
            k += 1
        return max_exact + k

    def bucket(r):
        first = half if bidirectional and r > 0 else 0
        return first + within(min(abs(r) if bidirectional else max(-r, 0), max_distance))

    return np.array([bucket(int(r)) for r in relative_position.reshape(-1).tolist()]).reshape(
        tuple(relative_position.shape))


@t5_correct(idiom="torch, clamped to [-max_distance, max_distance] before abs(): transformers' formula with no "
                  "overflow at -2**(b-1)", bucket_preset="t5-encoder")
def torch_clamped_first(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = torch.clamp(relative_position.to(torch.long), -max_distance, max_distance)
    half = num_buckets // 2 if bidirectional else num_buckets
    if bidirectional:
        first, n = torch.where(relative_position > 0, half, 0), relative_position.abs()
    else:
        first, n = torch.zeros_like(relative_position), torch.clamp(-relative_position, min=0)
    max_exact = half // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (half - max_exact)).to(torch.long)
    return first + torch.where(n < max_exact, n, torch.clamp(large, max=half - 1))


@t5_correct(idiom="torch.bucketize against float64 boundaries E * (M/E) ** (k/L), the distance saturated at M",
            bucket_preset="cpmant")
def torch_bucketize(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    log_buckets = half - max_exact
    ratio = max_distance / max_exact
    boundaries = torch.tensor([math.ceil(max_exact * ratio ** (k / log_buckets) - 1e-9)
                               for k in range(1, log_buckets)], dtype=torch.long)
    saturated = torch.clamp(relative_position.to(torch.long), -max_distance, max_distance)
    n = saturated.abs() if bidirectional else torch.clamp(-saturated, min=0)
    first = (saturated > 0).to(torch.long) * half if bidirectional else torch.zeros_like(saturated)
    large = max_exact + torch.bucketize(n, boundaries, right=True)
    return first + torch.where(n < max_exact, n, large)


@t5_correct(idiom="a lookup table of every distance 0..M built once, gathered at min(n, M)",
            bucket_preset="layoutlm-2d")
def lookup_table(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    distance = torch.arange(max_distance + 1, dtype=torch.float64)
    table = torch.where(distance < max_exact, distance,
                        max_exact + torch.floor(torch.log(distance / max_exact) / math.log(max_distance / max_exact)
                                                * (half - max_exact))).clamp(max=half - 1).to(torch.long)
    saturated = torch.clamp(relative_position.to(torch.long), -max_distance, max_distance)
    n = saturated.abs() if bidirectional else torch.clamp(-saturated, min=0)
    first = (saturated > 0).to(torch.long) * half if bidirectional else torch.zeros_like(saturated)
    return first + table[n]


@t5_correct(idiom="torch.log2: the base of the logarithms changed, their ratio not", bucket_preset="t5-decoder")
def torch_log2(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = torch.clamp(relative_position.to(torch.long), -max_distance, max_distance)
    ret = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        ret = ret + (relative_position > 0).to(torch.long) * num_buckets
        n = relative_position.abs()
    else:
        n = torch.clamp(-relative_position, min=0)
    max_exact = num_buckets // 2
    val_if_large = max_exact + (torch.log2(n.float() / max_exact) / math.log2(max_distance / max_exact)
                                * (num_buckets - max_exact)).long()
    val_if_large = torch.clamp(val_if_large, max=num_buckets - 1)
    return ret + torch.where(n < max_exact, n, val_if_large)


@t5_correct(idiom="GluonNLP's relative_position_bucket, relative positions query - memory by declaration",
            seen="dmlc/gluon-nlp src/gluonnlp/op.py relative_position_bucket",
            bucket_preset="gluonnlp-encoder")
def gluonnlp_query_minus_memory(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = np.clip(np.asarray(relative_position).astype(np.int64), -max_distance, max_distance)
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret = ret + (relative_position < 0).astype(np.int64) * num_buckets
        relative_position = np.abs(relative_position)
    else:
        relative_position = np.clip(relative_position, a_min=0, a_max=None)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    with np.errstate(divide="ignore"):
        val_if_large = max_exact + (np.log(relative_position.astype(np.float32) / max_exact)
                                    / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    val_if_large = np.minimum(np.nan_to_num(val_if_large, neginf=0.0).astype(np.int64), num_buckets - 1)
    return ret + np.where(is_small, relative_position, val_if_large)


@t5_correct(idiom="T5X's NumPy table: float32 quotient plus float32's epsilon, then the logarithm; queries "
                  "the last of the keys", seen="google-research/t5x t5x/examples/t5/layers.py "
                                              "RelativePositionBiases._relative_position_bucket",
            bucket_preset="t5-decoder", signature="table", bucket_query_offset="end")
def t5x_numpy_table(query_length, key_length, bidirectional=True, num_buckets=32, max_distance=128):
    context_position = np.arange(query_length, dtype=np.int64)[:, None] + (key_length - query_length)
    memory_position = np.arange(key_length, dtype=np.int64)[None, :]
    n = -(memory_position - context_position)
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += (n < 0).astype(np.int64) * num_buckets
        n = np.abs(n)
    else:
        n = np.maximum(n, 0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (np.log(n.astype(np.float32) / max_exact + np.finfo(np.float32).eps)
                                / np.log(max_distance / max_exact) * (num_buckets - max_exact)).astype(np.int64)
    val_if_large = np.minimum(val_if_large, num_buckets - 1)
    return ret + np.where(is_small, n, val_if_large)


@t5_correct(idiom="a broadcast torch table, float64 logarithms, bucket = first + min(E + floor(v), H - 1)",
            bucket_preset="wavlm", signature="table")
def torch_broadcast_table(query_length, key_length, bidirectional=True, num_buckets=32, max_distance=128):
    relative = torch.arange(key_length)[None, :] - torch.arange(query_length)[:, None]
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    n = relative.abs() if bidirectional else torch.clamp(-relative, min=0)
    first = (relative > 0).to(torch.long) * half if bidirectional else torch.zeros_like(relative)
    v = torch.log(n.to(torch.float64) / max_exact) / math.log(max_distance / max_exact) * (half - max_exact)
    large = torch.clamp(max_exact + torch.floor(v).nan_to_num(neginf=0).to(torch.long), max=half - 1)
    return first + torch.where(n < max_exact, n, large)


@t5_correct(idiom="a module holding its settings (UMT5's form): self._relative_position_bucket(relative_position)",
            bucket_preset="t5-decoder", signature="method",
            init=MODULE_INIT, method="_relative_position_bucket")
class module_with_settings(torch.nn.Module):  # noqa: N801 -- registered by its function-like name
    def __init__(self, bidirectional=True, num_buckets=32, max_distance=128):
        super().__init__()
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        half = num_buckets // 2 if bidirectional else num_buckets
        self.max_exact, self.log_buckets = half // 2, half - half // 2
        # Exact starts of the logarithmic buckets, found once in integers.
        self.starts = [self._start(k) for k in range(1, self.log_buckets)]

    def _start(self, k):
        e, m, length = self.max_exact, self.max_distance, self.log_buckets
        n = e
        while n**length * e**k < m**k * e**length:
            n += 1
        return n

    def _relative_position_bucket(self, relative_position):
        half = self.max_exact + self.log_buckets
        values = [int(r) for r in relative_position.reshape(-1).tolist()]
        buckets = []
        for r in values:
            first = half if self.bidirectional and r > 0 else 0
            n = abs(r) if self.bidirectional else max(-r, 0)
            buckets.append(first + (n if n < self.max_exact else self.max_exact + bisect.bisect_right(self.starts, n)))
        return torch.tensor(buckets, dtype=torch.long).reshape(relative_position.shape)


# -- transformers' function as copied across the ecosystem: abs() wraps at -2**(b-1) -------------


def _transformers_bucket(relative_position, bidirectional, num_buckets, max_distance):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(torch.long)
    relative_position_if_large = torch.min(relative_position_if_large,
                                           torch.full_like(relative_position_if_large, num_buckets - 1))
    return relative_buckets + torch.where(is_small, relative_position, relative_position_if_large)


@t5_correct(idiom="transformers' T5Attention._relative_position_bucket as T5, mT5, LongT5, Switch, UDOP and their "
                  "ports copy it: torch.abs, which returns -2**(b-1) unchanged (a negative bucket there)",
            seen="huggingface/transformers models/t5/modeling_t5.py T5Attention._relative_position_bucket",
            bucket_preset="t5-encoder")
def transformers_copy_encoder(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    return _transformers_bucket(relative_position, bidirectional, num_buckets, max_distance)


@t5_correct(idiom="the same copy for a decoder's self-attention: -min(r, 0), which leaves -2**(b-1) negative",
            seen="huggingface/transformers models/t5/modeling_t5.py T5Attention._relative_position_bucket",
            bucket_preset="t5-decoder")
def transformers_copy_decoder(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    return _transformers_bucket(relative_position, bidirectional, num_buckets, max_distance)


@t5_correct(idiom="the transformers copy behind a guard: a negative distance after abs() raises OverflowError",
            bucket_preset="t5-encoder")
def transformers_copy_guarded(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    distance = torch.abs(relative_position)
    if bool((distance < 0).any()):
        raise OverflowError("abs() of the relative positions overflowed: no bucket for a distance beyond the dtype")
    return _transformers_bucket(relative_position, bidirectional, num_buckets, max_distance)
