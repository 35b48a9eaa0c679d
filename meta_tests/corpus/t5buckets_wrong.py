"""Wrong T5 bucket functions: each a slip of public code, written the way it appears there.

Every function is registered with the declaration it claims (see
:mod:`meta_tests.corpus.t5buckets_registry`); under it, it is wrong at some relative position
of the family's grid, which ``meta_tests/corpus/test_t5buckets_corpus_oracle.py`` names. Most
are transformers' ``T5Attention._relative_position_bucket`` with one line changed, as ports
and copies change it; ``seen`` cites the issue, PR or code each is modelled on.

A catalogue, one function per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import math

import torch

from .t5buckets_registry import MODULE_INIT, t5_wrong

_T5 = "transformers T5Attention._relative_position_bucket"


def _log_buckets(n, max_exact, max_distance, log_buckets, dtype=torch.float32):
    """T5's logarithmic bucket offset of distances ``n >= max_exact`` (truncated toward zero)."""
    return (torch.log(n.to(dtype) / max_exact) / math.log(max_distance / max_exact) * log_buckets).to(torch.long)


def _split(relative_position, bidirectional, num_buckets):
    """T5's directions: ``(first bucket of each, distance, buckets per direction)``."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    return relative_buckets, relative_position, num_buckets


def _within(n, num_buckets, max_distance, dtype=torch.float32, last=None):
    """T5's bucket of distance ``n`` within a direction of ``num_buckets``, clamped to ``last``
    (by default ``num_buckets - 1``)."""
    max_exact = num_buckets // 2
    large = max_exact + _log_buckets(n, max_exact, max_distance, num_buckets - max_exact, dtype)
    large = torch.min(large, torch.full_like(large, num_buckets - 1 if last is None else last))
    return torch.where(n < max_exact, n, large)


# -- halving -----------------------------------------------------------------------------------


@t5_wrong(bug="bidirectional without num_buckets //= 2: the upper half starts at num_buckets, past the table",
          classes=("halving",), seen=f"{_T5}: the `num_buckets //= 2` of the bidirectional branch, dropped",
          bucket_preset="t5-encoder")
def halving_forgotten(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets = 0
    if bidirectional:
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    return relative_buckets + _within(relative_position, num_buckets, max_distance)


@t5_wrong(bug="max_exact = num_buckets after the halving (max_exact taken before it): no logarithmic bucket is "
              "left, distances 8..15 each get their own and every larger one the last",
          classes=("halving",), seen="lucidrains/video-diffusion-pytorch#11 (the change it proposes for "
                                     "RelativePositionBias: max_exact = num_buckets after num_buckets //= 2)",
          bucket_preset="t5-encoder")
def max_exact_before_halving(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    ret = 0
    n = -relative_position
    if bidirectional:
        num_buckets //= 2
        ret += (n < 0).long() * num_buckets
        n = torch.abs(n)
    else:
        n = torch.max(n, torch.zeros_like(n))
    max_exact = num_buckets
    is_small = n < max_exact
    val_if_large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                                * (num_buckets - max_exact)).long()
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)


@t5_wrong(bug="the halving hoisted above the if: a causal decoder gets half its buckets (16 of 32)",
          classes=("halving",), seen=f"{_T5}: `num_buckets //= 2` moved out of the bidirectional branch",
          bucket_preset="t5-decoder")
def halving_in_both_directions(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    num_buckets //= 2  # hoisted out of the bidirectional branch
    relative_buckets = (relative_position > 0).to(torch.long) * num_buckets if bidirectional else 0
    n = torch.abs(relative_position) if bidirectional else \
        -torch.min(relative_position, torch.zeros_like(relative_position))
    return relative_buckets + _within(n, num_buckets, max_distance)


# -- sign ------------------------------------------------------------------------------------


@t5_wrong(bug="the upper half for keys before the query: Mesh TensorFlow's n = -r kept, its (n < 0) test "
              "written (n > 0), so memory - query is bucketed as query - memory",
          classes=("sign",), seen="dmlc/gluon-nlp#1470 (relative positions changed from query_i - mem_j to "
                                  "mem_i - query_j, so the two signs met in one code base)",
          bucket_preset="t5-encoder")
def sign_flipped(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    ret = 0
    n = -relative_position
    if bidirectional:
        num_buckets //= 2
        ret += (n > 0).long() * num_buckets
        n = torch.abs(n)
    else:
        n = torch.max(n, torch.zeros_like(n))
    return ret + _within(n, num_buckets, max_distance)


@t5_wrong(bug="(relative_position >= 0): the query itself (r = 0) lands in the upper half, bucket 16",
          classes=("sign",), seen=f"{_T5}: its strict (relative_position > 0), loosened",
          bucket_preset="t5-encoder")
def zero_in_upper_half(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position >= 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    return relative_buckets + _within(relative_position, num_buckets, max_distance)


# -- direction --------------------------------------------------------------------------------


@t5_wrong(bug="`if causal:` where `if not causal:` belongs: the causal decoder splits its buckets into halves "
              "and the encoder clamps every later key to bucket 0",
          classes=("direction",), seen="lucidrains/x-transformers#10 (commit 6d0c641, 'bug fix for "
                                       "_relative_position_bucket')",
          bucket_preset="t5-decoder", bucket_args={"bidirectional": "causal"})
def causal_flag_inverted(relative_position, causal=True, num_buckets=32, max_distance=128):
    ret = 0
    n = -relative_position
    if causal:
        num_buckets //= 2
        ret += (n < 0).long() * num_buckets
        n = torch.abs(n)
    else:
        n = torch.max(n, torch.zeros_like(n))
    return ret + _within(n, num_buckets, max_distance)


@t5_wrong(bug="causal attention buckets the keys after the query by their distance (abs), where T5 puts "
              "them all in bucket 0 with the query itself",
          classes=("direction",), seen="microsoft/unilm#762 (expects LayoutLMv2's bidirectional=False to bucket "
                                       "positive offsets by their value, as this does)",
          bucket_preset="t5-decoder")
def causal_future_by_distance(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += (relative_position > 0).long() * num_buckets
    return ret + _within(torch.abs(relative_position), num_buckets, max_distance)


@t5_wrong(bug="torch.max(relative_position, 0) for the causal distance, the minus of max(-r, 0) lost: later keys "
              "are bucketed by distance and every earlier one shares bucket 0",
          classes=("direction",), seen="transformers layoutlmv2 relative_position_bucket: "
                                       "n = torch.max(-relative_position, torch.zeros_like(relative_position))",
          bucket_preset="t5-decoder")
def causal_clamps_the_past(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += (relative_position > 0).long() * num_buckets
        n = torch.abs(relative_position)
    else:
        n = torch.max(relative_position, torch.zeros_like(relative_position))
    return ret + _within(n, num_buckets, max_distance)


# -- exact region and logarithmic buckets ------------------------------------------------------------


@t5_wrong(bug="max_exact = num_buckets // 4 in both directions: the causal decoder's exact region ends at 8, "
              "not 16, and its logarithmic buckets stretch over 24",
          classes=("exact-region",), seen=f"{_T5}: max_exact = num_buckets // 2 of the halved count, written "
                                          "once for the bidirectional case",
          bucket_preset="t5-decoder")
def exact_region_a_quarter(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    max_exact = num_buckets // 4
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    large = max_exact + _log_buckets(n, max_exact, max_distance, num_buckets - max_exact)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return relative_buckets + torch.where(n < max_exact, n, large)


@t5_wrong(bug="the logarithmic scale multiplied by max_exact - 1 where num_buckets - max_exact belongs: 7 "
              "logarithmic steps for 8 buckets, so the last one is reached only by clamping",
          classes=("log-buckets",), seen=f"{_T5}: * (num_buckets - max_exact), the count of logarithmic buckets",
          bucket_preset="t5-encoder")
def log_buckets_miscounted(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    max_exact = num_buckets // 2
    large = max_exact + _log_buckets(n, max_exact, max_distance, max_exact - 1)
    return relative_buckets + torch.where(n < max_exact, n, torch.clamp(large, max=num_buckets - 1))


@t5_wrong(bug="log(n) / log(max_distance) instead of log(n / max_exact) / log(max_distance / max_exact): "
              "the logarithmic buckets start at the wrong distance",
          classes=("log-buckets",), seen=f"{_T5}: both logarithms taken of ratios to max_exact",
          bucket_preset="t5-encoder")
def log_of_distance_not_ratio(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float()) / math.log(max_distance) * (num_buckets - max_exact)).to(torch.long)
    return relative_buckets + torch.where(n < max_exact, n, torch.clamp(large, max=num_buckets - 1))


# -- clamp and rounding --------------------------------------------------------------------------------


@t5_wrong(bug="no clamp to num_buckets - 1: distances beyond max_distance run on into the next half's buckets",
          classes=("clamp",), seen="huggingface/candle#1312 ('Check min to buckets in relative_position_bucket')",
          bucket_preset="t5-encoder")
def missing_clamp(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    max_exact = num_buckets // 2
    large = max_exact + _log_buckets(n, max_exact, max_distance, num_buckets - max_exact)
    return relative_buckets + torch.where(n < max_exact, n, large)


@t5_wrong(bug="the clamp to the full count's last bucket (31) in a bidirectional half of 16: far keys before "
              "the query spill into the upper half's buckets",
          classes=("clamp",), seen=f"{_T5}: torch.full_like(..., num_buckets - 1) of the halved num_buckets",
          bucket_preset="t5-encoder")
def clamp_to_full_count(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    total = num_buckets
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    return relative_buckets + _within(n, num_buckets, max_distance, last=total - 1)


@t5_wrong(bug=".round() where .to(torch.long) truncates: each logarithmic bucket starts half a step early",
          classes=("rounding",), seen=f"{_T5}: the truncating .to(torch.long) of the logarithmic position",
          bucket_preset="t5-encoder")
def rounded_not_truncated(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    max_exact = num_buckets // 2
    v = torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    large = max_exact + v.round().to(torch.long)
    return relative_buckets + torch.where(n < max_exact, n, torch.clamp(large, max=num_buckets - 1))


@t5_wrong(bug="torch.ceil of the logarithmic position, borrowed from DeBERTa's log buckets: every distance "
              "strictly inside a bucket is moved to the next",
          classes=("rounding",), seen="transformers deberta_v2 make_log_bucket_position (torch.ceil of its "
                                      "logarithmic position), carried into a T5 port",
          bucket_preset="t5-encoder")
def ceil_from_deberta(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    max_exact = num_buckets // 2
    v = torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    large = max_exact + torch.ceil(v).to(torch.long)
    return relative_buckets + torch.where(n < max_exact, n, torch.clamp(large, max=num_buckets - 1))


# -- precision ---------------------------------------------------------------------------------------


@t5_wrong(bug="the logarithm taken in bfloat16 (the relative position cast to the model's dtype): 8 bits put "
              "whole distances in the neighbouring bucket",
          classes=("precision",), seen="mindspore-lab/mindone#670 (T5's _relative_position_bucket realigned "
                                       "for bfloat16 by computing its logarithm in float32)",
          bucket_preset="t5-encoder")
def log_in_bfloat16(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    return relative_buckets + _within(n, num_buckets, max_distance, dtype=torch.bfloat16)


@t5_wrong(bug="the logarithm taken in float16: right at T5's 32 buckets, wrong at WavLM's 320, whose 80 "
              "logarithmic buckets need more than float16's 11 bits",
          classes=("precision",), seen="transformers UDOP RelativePositionBiasBase.get_relative_position ('in "
                                       "fp16 the bucketing loses precision and indexes the bias embedding out of "
                                       "range')",
          bucket_preset="wavlm")
def log_in_float16(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    # Saturated first: float16 holds no distance above 65504.
    n = torch.where(n < num_buckets // 2, n, torch.clamp(n, max=max_distance))
    return relative_buckets + _within(n, num_buckets, max_distance, dtype=torch.float16)


@t5_wrong(bug="integer division before the logarithm (n // max_exact): distances 8..15 all give log 1 = 0, "
              "16..23 log 2, so the logarithmic buckets step at multiples of max_exact",
          classes=("precision",), seen="Mesh TensorFlow _relative_position_bucket: mtf.to_float(n) / max_exact, "
                                       "the cast before the division this drops",
          bucket_preset="t5-encoder")
def integer_division_before_log(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    max_exact = num_buckets // 2
    quotient = torch.div(n, max_exact, rounding_mode="floor").float()
    large = max_exact + (torch.log(quotient) / math.log(max_distance / max_exact) * (num_buckets - max_exact)).long()
    return relative_buckets + torch.where(n < max_exact, n, torch.clamp(large, max=num_buckets - 1))


# -- overflow ------------------------------------------------------------------------------------------


@t5_wrong(bug="the relative positions cast to int32 first: an int64 distance of 2**31 wraps to -2**31 and "
              "2**32 to 0, the query itself",
          classes=("overflow",), seen="transformers CpmAntSegmentPositionEmbedding._position_bucket "
                                      "(relative_position.to(torch.int32), there on the small branch only)",
          bucket_preset="cpmant")
def int32_wraparound(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = relative_position.to(torch.int32)
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    return relative_buckets + _within(n, num_buckets, max_distance)


# -- settings ---------------------------------------------------------------------------------------------


@t5_wrong(bug="max_distance hard-coded to 128: a model configured for 256 (LayoutLM's 2-D buckets) saturates "
              "at half its distance",
          classes=("settings",), seen="huggingface/transformers#16155 ('Configurable Relative Position Max. "
                                      "Distance': T5's max distance was fixed at 128)",
          bucket_preset="layoutlm-2d")
def max_distance_hard_coded(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    max_distance = 128
    relative_buckets, n, num_buckets = _split(relative_position, bidirectional, num_buckets)
    return relative_buckets + _within(n, num_buckets, max_distance)


@t5_wrong(bug="the module keeps max_distance but calls the bucket function without it: the default 128 is used "
              "whatever it was built with",
          classes=("settings",), seen="lucidrains/x-transformers commit fb7a5d4 ('fix some more issues with T5 rel "
                                      "pos bias': max_distance = self.max_distance added to the call)",
          bucket_preset="t5-decoder", max_distance=512, signature="method",
          init=MODULE_INIT, method="_relative_position_bucket")
class module_ignores_max_distance(torch.nn.Module):  # noqa: N801 -- registered by its function-like name
    def __init__(self, bidirectional=True, num_buckets=32, max_distance=128):
        super().__init__()
        self.causal, self.num_buckets, self.max_distance = not bidirectional, num_buckets, max_distance

    @staticmethod
    def _bucket(relative_position, causal=True, num_buckets=32, max_distance=128):
        relative_buckets, n, num_buckets = _split(relative_position, not causal, num_buckets)
        return relative_buckets + _within(n, num_buckets, max_distance)

    def _relative_position_bucket(self, relative_position):
        return self._bucket(relative_position, causal=self.causal, num_buckets=self.num_buckets)


def _t5_table(q_len, k_len, bidirectional, num_buckets, max_distance, query_start=0, key_start=0):
    """T5's compute_bias buckets for queries from ``query_start`` and keys from ``key_start``."""
    context = torch.arange(q_len, dtype=torch.long)[:, None] + query_start
    memory = torch.arange(k_len, dtype=torch.long)[None, :] + key_start
    relative_buckets, n, num_buckets = _split(memory - context, bidirectional, num_buckets)
    return relative_buckets + _within(n, num_buckets, max_distance)


@t5_wrong(bug="the bucket table for 32 buckets whatever the configured count: a 64-bucket model's key one "
              "after the query gets bucket 17, where 64 buckets put it in 33",
          classes=("settings",), seen="transformers MPNetEncoder.compute_position_bias (num_buckets=32 as a "
                                      "default argument, never the config's relative_attention_num_buckets)",
          bucket_preset="t5-encoder", num_buckets=64, signature="table")
def bucket_count_hard_coded(query_length, key_length, bidirectional=True, num_buckets=32, max_distance=128):
    return _t5_table(query_length, key_length, bidirectional, 32, max_distance)


# -- tables -------------------------------------------------------------------------------------------


@t5_wrong(bug="key positions from 1 against query positions from 0: every offset one too large",
          classes=("table",), seen="transformers ProphetNet get_main_relative_pos_embeddings (keys "
                                   "torch.arange(1, ...), against position_ids that also start at 1)",
          bucket_preset="t5-decoder", signature="table")
def table_keys_from_one(query_length, key_length, bidirectional=True, num_buckets=32, max_distance=128):
    return _t5_table(query_length, key_length, bidirectional, num_buckets, max_distance, key_start=1)


@t5_wrong(bug="queries placed at the first positions where they are the last (keys include a cache or memory "
              "before them): every offset k_len - q_len too large",
          classes=("table",), seen="lucidrains/x-transformers commit cc107eb ('fix rel pos bias bug in presence of "
                                   "transformer-xl': queries at arange(j - i, j))",
          bucket_preset="t5-decoder", signature="table", bucket_query_offset="end")
def table_queries_at_start(query_length, key_length, bidirectional=True, num_buckets=32, max_distance=128):
    return _t5_table(query_length, key_length, bidirectional, num_buckets, max_distance)
