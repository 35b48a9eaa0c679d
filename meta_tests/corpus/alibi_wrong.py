"""Wrong ALiBi implementations: each a slip reported in public code, written the way it appears there.

Every function (or module class) is registered with the declaration it claims (see
:mod:`meta_tests.corpus.alibi_registry`); under it, it is wrong on some call of the family's
grid (``meta_tests/corpus/test_alibi_corpus_oracle.py`` names the smallest). ``seen`` cites the
public thread, commit or code it is modelled on. The helpers below are the library code such
a module would import; the slip is in the registered function.

A catalogue, one entry per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .alibi_registry import alibi_wrong

_PARTIAL = {"alibi_heads": 4}
_FROM_FOUR = tuple(range(4, 129))


def _slopes_power_of_2(n):
    """The paper's code: a geometric sequence from 2 ** (-8/n) with that ratio."""
    start = 2 ** (-2 ** -(math.log2(n) - 3))
    return [start * start ** i for i in range(n)]


def _paper_slopes(n):
    if math.log2(n).is_integer():
        return _slopes_power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return _slopes_power_of_2(closest) + _paper_slopes(2 * closest)[0::2][:n - closest]


def _symmetric(i, j):
    """-|k - q| for the last i queries over j keys, (1, i, j)."""
    q = torch.arange(j - i, j)[:, None]
    k = torch.arange(j)[None, :]
    return -(k - q).abs()[None]


def _mpt_slopes(n_heads, alibi_bias_max=8):
    """llm-foundry's gen_slopes: exponents from the next power of two, a strided concatenation."""
    _n_heads = 2 ** math.ceil(math.log2(n_heads))
    m = torch.arange(1, _n_heads + 1, dtype=torch.float32) * (alibi_bias_max / _n_heads)
    slopes = 1.0 / torch.pow(2, m)
    if _n_heads != n_heads:
        slopes = torch.concat([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes


class _SlopesModule(nn.Module):
    """A bias module's state: the paper's slopes as a (heads, 1, 1) buffer, and an empty bias cache."""

    def __init__(self, heads):
        super().__init__()
        self.register_buffer("slopes", torch.tensor(_paper_slopes(heads))[:, None, None], persistent=False)
        self.register_buffer("bias", None, persistent=False)


def _key_last(slopes, length):
    """MPT's bias: slopes * (1 - L .. 0), (heads, 1, L)."""
    return torch.arange(1 - length, 1, dtype=torch.int32).view(1, 1, length) * slopes.view(-1, 1, 1)


# -- the slope rule --------------------------------------------------------------------------


@alibi_wrong(bug="x = (2 ** 8) ** (1 / num_heads), slopes x ** -arange(1, n + 1): one geometric sequence for "
                 "every head count, where the paper interleaves the sequence of the next power of two",
             classes=("slope-rule",), seen="ml-explore/mlx#343; ml-explore/mlx#3071 (mlx.nn.ALiBi.create_alibi_slope)",
             signature="heads")
def geometric_for_every_head_count(num_heads):
    x = (2**8) ** (1 / num_heads)
    return torch.tensor(x) ** -torch.arange(1, num_heads + 1, dtype=torch.float32)


@alibi_wrong(bug="[2 ** (-8 * i / n) for i in range(n)]: the exponent counts heads from 0, so head 0 gets slope 1",
             classes=("slope-rule",), seen="paiml/aprender#2143 (compute_slopes: 2^(-8h/n), not 2^(-8(h+1)/n))",
             signature="heads")
def slopes_from_head_zero(num_heads):
    return torch.tensor([2 ** (-8 * i / num_heads) for i in range(num_heads)])


@alibi_wrong(bug="the extra heads take get_slopes(2P)[1::2], the even members: the slopes the first P heads "
                 "already have, where the odd members [0::2] belong",
             classes=("slope-rule",), seen="ofirpress/attention_with_linear_biases#17 (the interleaved slopes of 12 "
                                           "heads); mosaicml/examples#307 (MPT's strided concatenation)",
             signature="heads")
def interleave_even_members(num_heads):
    if math.log2(num_heads).is_integer():
        return _slopes_power_of_2(num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))
    return _slopes_power_of_2(closest) + _slopes_power_of_2(2 * closest)[1::2][:num_heads - closest]


@alibi_wrong(bug="the extra heads take the first n - P slopes of 2P heads, with no stride: slopes the first P "
                 "heads already have, and the largest ones twice",
             classes=("slope-rule",), seen="ofirpress/attention_with_linear_biases#17; mosaicml/examples#307",
             signature="heads")
def extra_slopes_without_stride(num_heads):
    if math.log2(num_heads).is_integer():
        return _slopes_power_of_2(num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))
    return _slopes_power_of_2(closest) + _slopes_power_of_2(2 * closest)[:num_heads - closest]


@alibi_wrong(bug="the closest power of two rounded up, 2 ** ceil(log2 n), and its first n slopes kept, with no "
                 "interleave",
             classes=("slope-rule",), seen="huggingface/transformers#28380 (MPT's slopes over the next power of two)",
             signature="heads")
def closest_power_rounded_up(num_heads):
    return _slopes_power_of_2(2 ** math.ceil(math.log2(num_heads)))[:num_heads]


@alibi_wrong(bug="build_mpt_alibi_tensor before the fix: base = arange(1, num_heads + 1) viewed as the next power "
                 "of two's count of slopes: a RuntimeError for any head count that is not a power of two",
             classes=("crash", "slope-rule"), seen="huggingface/transformers#28380 (\"will return with an error\" "
                                                   "for 6 heads)",
             signature="heads-length-max", alibi_convention="mpt")
def mpt_base_over_num_heads(num_heads, sequence_length, alibi_bias_max=8):
    alibi = torch.arange(1 - sequence_length, 1, dtype=torch.int32).view(1, 1, 1, sequence_length)
    num_heads_power_of_2 = 2 ** math.ceil(math.log2(num_heads))
    base = torch.arange(1, num_heads + 1, dtype=torch.int64).float()
    base = base * (alibi_bias_max / num_heads_power_of_2)
    slopes = (1.0 / torch.pow(2, base)).view(1, num_heads_power_of_2, 1, 1)
    if num_heads_power_of_2 != num_heads:
        slopes = torch.concat([slopes[:, 1::2, ...], slopes[:, ::2, ...]], dim=1)[:, :num_heads, ...]
    return (alibi * slopes).squeeze(0)


@alibi_wrong(bug="_get_slopes calls get_slopes(2 * closest_power_of_2), a name that is not defined there: a "
                 "NameError for every head count that is not a power of two",
             classes=("crash",), seen="lucidrains/x-transformers@a99179d (fixed in e5acd11, \"fix small bug\")",
             signature="heads")
def undefined_name_for_other_head_counts(heads):
    def get_slopes_power_of_2(n):
        start = (2**(-2**-(math.log2(n)-3)))
        ratio = start
        return [start*ratio**i for i in range(n)]

    if math.log2(heads).is_integer():
        return get_slopes_power_of_2(heads)

    closest_power_of_2 = 2 ** math.floor(math.log2(heads))
    return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][:heads-closest_power_of_2]  # noqa: E501, F821


# -- the slopes on the wrong heads -------------------------------------------------------------


@alibi_wrong(bug="the exponents counted down, torch.arange(n, 0, -1): the paper's slopes, smallest first",
             classes=("head-order",), seen="the ALiBi issue's list of real slips (\"slopes reversed across heads\"); "
                                           "no public thread found",
             signature="heads-length", alibi_convention="mpt")
def slopes_reversed(num_heads, length):
    slopes = torch.tensor(_paper_slopes(num_heads)).flip(0)
    return _key_last(slopes, length)


@alibi_wrong(bug="under tensor parallelism every rank takes alibi[:local_heads], the first rank's slopes, where "
                 "its own heads' belong (two ranks)",
             classes=("head-order",), seen="bigscience-workshop/Megatron-DeepSpeed#227 (fixed by #222's follow-up)",
             signature="heads-length", alibi_convention="mpt", heads=tuple(range(2, 129, 2)), attention_heads=112)
def tensor_parallel_first_slice(num_heads, length):
    alibi = _key_last(torch.tensor(_paper_slopes(num_heads)), length)
    local = num_heads // 2
    return torch.cat([alibi[:local] for _rank in range(2)])


@alibi_wrong(bug="under tensor parallelism every rank computes get_alibi_slopes(local heads) and indexes its "
                 "heads from 0 (two ranks)",
             classes=("head-order",), seen="flashinfer-ai/flashinfer#1606; flashinfer-ai/flashinfer#5101",
             signature="heads-length", alibi_convention="mpt", heads=tuple(range(2, 129, 2)), attention_heads=112)
def tensor_parallel_local_head_count(num_heads, length):
    local = num_heads // 2
    return torch.cat([_key_last(torch.tensor(_paper_slopes(local)), length) for _rank in range(2)])


# -- precision --------------------------------------------------------------------------------


@alibi_wrong(bug="slopes[..., None].bfloat16() * arange_tensor, then .to(dtype): the bias is formed in bfloat16 "
                 "whatever dtype is asked for (Falcon's build_alibi_tensor, declared as BLOOM's)",
             classes=("precision",), seen="transformers' Falcon build_alibi_tensor; "
                                          "NVIDIA/TensorRT-Model-Connect#667; HabanaAI/vllm-fork#503",
             signature="mask-heads-dtype", alibi_convention="bloom")
def bias_in_bfloat16_whatever_dtype(attention_mask, num_heads, dtype):
    batch_size, seq_length = attention_mask.shape
    slopes = torch.tensor(_paper_slopes(num_heads), dtype=torch.float32)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None].bfloat16() * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


class PositionsInComputeDtype(nn.Module):
    """keras-hub's AlibiBias: the key positions cast to the layer's compute dtype before the product."""

    def __init__(self, alibi_bias_max=8):
        super().__init__()
        self.alibi_bias_max = alibi_bias_max

    def forward(self, attention_scores):
        num_heads, key_length = attention_scores.shape[1], attention_scores.shape[-1]
        compute_dtype = attention_scores.dtype
        slopes = torch.tensor(_paper_slopes(num_heads), dtype=compute_dtype)[:, None]
        seq_range = torch.arange(1 - key_length, 1, dtype=torch.int32)[None].to(compute_dtype)
        alibi_bias = (slopes * seq_range)[None, :, None, :]
        return attention_scores + alibi_bias


alibi_wrong(bug="seq_range cast to the compute dtype before the product: under bfloat16 (float16) mixed precision "
                "the key positions round beyond 256 (2048)",
            classes=("precision",), seen="keras-team/keras-hub AlibiBias._get_alibi_bias (ops.cast(seq_range, "
                                         "dtype=self.compute_dtype)); HabanaAI/vllm-fork#503",
            signature="module-scores", init={}, alibi_convention="mpt")(PositionsInComputeDtype)


# -- decoding and caches -----------------------------------------------------------------------


class NoBiasWhenDecoding(_SlopesModule):
    """A causal bias kept in the attention mask, which the incremental-decoding path does not take."""

    def forward(self, i, j):
        if i == 1:  # incremental decoding: attn_mask is None, so no bias is added
            return torch.zeros(self.slopes.shape[0], 1, j)
        q = torch.arange(j - i, j)[:, None]
        return (torch.arange(j)[None, :] - q)[None] * self.slopes


alibi_wrong(bug="the bias rides on the causal attention mask, and the decoding path passes no mask: no bias at all "
                "for a single query",
            classes=("decode",), seen="ofirpress/attention_with_linear_biases#20; HabanaAI/vllm-hpu-extension#18",
            signature="module-ij", init={"heads": "{num_heads}"}, alibi_convention="paper")(NoBiasWhenDecoding)


class BiasFromQueryWindow(nn.Module):
    """keras-hub's Falcon decoder before the fix: the bias built over the query window."""

    def forward(self, attention_scores):
        num_heads, query_length = attention_scores.shape[1], attention_scores.shape[-2]
        mask = torch.ones(1, query_length, dtype=torch.int64)
        positions = (mask.cumsum(dim=-1) - 1) * mask
        slopes = torch.tensor(_paper_slopes(num_heads))[:, None]
        alibi = (slopes * positions)[None, :, None, :]
        return attention_scores + alibi


alibi_wrong(bug="the bias is built over the query length, not the cache's: at a decoding step it is (1, heads, 1, "
                "1), slope * 0, and broadcasts over every key as no bias at all",
            classes=("decode",), seen="keras-team/keras-hub#2861; keras-team/keras-hub#2977",
            signature="module-scores", init={}, alibi_convention="fairseq")(BiasFromQueryWindow)


class CacheSlicedFromTopLeft(_SlopesModule):
    """x-transformers' AlibiPositionalBias from 0.x to 1.22.16: the cached bias sliced [..., :i, :j]."""

    def forward(self, i, j):
        if self.bias is not None and self.bias.shape[-1] >= j and self.bias.shape[-2] >= i:
            return self.bias[..., :i, :j]
        bias = _symmetric(i, j) * self.slopes
        self.register_buffer("bias", bias, persistent=False)
        return self.bias


alibi_wrong(bug="a bias cached by the prefill is sliced from its top-left corner, [..., :i, :j]: a decoding step "
                "gets query 0's row where the last query's belongs",
            classes=("cache", "decode"), seen="lucidrains/x-transformers@cb50439 (x-transformers#187: [..., -i:, -j:])",
            signature="module-ij", init={"heads": "{num_heads}"},
            alibi_convention="bidirectional")(CacheSlicedFromTopLeft)


class QueriesAtTheStart(_SlopesModule):
    """x-transformers' get_bias before dcae403: i_arange = arange(i), j_arange = arange(j)."""

    def forward(self, i, j):
        i_arange, j_arange = torch.arange(i), torch.arange(j)
        bias = -torch.abs(j_arange[None, None, :] - i_arange[None, :, None])
        return bias * self.slopes


alibi_wrong(bug="the queries are placed at positions 0 .. i-1: right when i == j, wrong for a decoding step or "
                "memory keys (i < j)",
            classes=("decode", "form"), seen="lucidrains/x-transformers@dcae403 (\"Fix wrong positional biases\")",
            signature="module-ij", init={"heads": "{num_heads}"}, alibi_convention="bidirectional")(QueriesAtTheStart)


class CacheKeptWhenTooShort(_SlopesModule):
    """x-transformers' first AlibiPositionalBias: the cache is reused when it is shorter than asked."""

    def forward(self, i, j):
        if self.bias is not None and self.bias.shape[-1] <= j:
            return self.bias[..., :j]
        self.register_buffer("bias", torch.arange(j)[None, None, :] * self.slopes, persistent=False)
        return self.bias


alibi_wrong(bug="the cached bias is reused when self.bias.shape[-1] <= j, the comparison reversed: a longer call "
                "gets the shorter cached bias",
            classes=("cache", "crash"), seen="lucidrains/x-transformers@a99179d (fixed in fbbc159, \"fix bug with "
                                             "alibi\")",
            signature="module-ij", init={"heads": "{num_heads}"}, alibi_convention="fairseq")(CacheKeptWhenTooShort)


class OffsetPastTheContext(nn.Module):
    """vLLM's paged-attention kernel before #945: slope * (token_idx - context_len)."""

    def forward(self, attention_scores):
        num_heads, context_len = attention_scores.shape[1], attention_scores.shape[-1]
        slopes = torch.tensor(_paper_slopes(num_heads), dtype=torch.float32)[:, None]
        token_idx = torch.arange(context_len, dtype=torch.float32)[None]
        return attention_scores + (slopes * (token_idx - context_len)).to(attention_scores.dtype)[None, :, None, :]


alibi_wrong(bug="slope * (token_idx - context_len): the last key at -slope where MPT's form puts 0 (one position "
                "off; the same attention in exact arithmetic, not the declared bias)",
            classes=("form",), seen="vllm-project/vllm#945 (token_idx - context_len + 1)",
            signature="module-scores", init={}, alibi_convention="mpt")(OffsetPastTheContext)


# -- the bias form ----------------------------------------------------------------------------


@alibi_wrong(bug="bias = slope * (q_idx - kv_idx): the sign flipped, so attention grows into the past",
             classes=("form",), seen="meta-pytorch/attention-gym#86 (alibi_and_causal_closure)",
             signature="heads-length", alibi_convention="paper")
def sign_flipped(num_heads, length):
    q_idx, kv_idx = torch.arange(length)[:, None], torch.arange(length)[None, :]
    return torch.tensor(_paper_slopes(num_heads))[:, None, None] * (q_idx - kv_idx)[None]


class NonsymmetricBidirectional(_SlopesModule):
    """x-transformers' bidirectional ALiBi of 82bd182: j - i with no absolute value (past and future slopes equal)."""

    def forward(self, i, j):
        i_arange, j_arange = torch.arange(j - i, j), torch.arange(j)
        return (j_arange[None, None, :] - i_arange[None, :, None]) * self.slopes


alibi_wrong(bug="a bidirectional bias of j - i with no absolute value: keys after the query get a growing positive "
                "bias where -m|j - i| belongs",
            classes=("form",), seen="lucidrains/x-transformers@82bd182 (bidirectional ALiBi, nonsymmetric)",
            signature="module-ij", init={"heads": "{num_heads}"},
            alibi_convention="bidirectional")(NonsymmetricBidirectional)


@alibi_wrong(bug="MPT's causal row (0 at the last key) for a bidirectional model: every query gets the last "
                 "query's bias, where -m|i - j| belongs",
             classes=("form",), seen="mosaicml/llm-foundry#186 (build_alibi_bias without full=True)",
             signature="heads-length", alibi_convention="bidirectional")
def causal_row_for_bidirectional(num_heads, length):
    return _key_last(_mpt_slopes(num_heads), length)


@alibi_wrong(bug="slopes * arange(max_seq_len) with the attention mask ignored: left padding shifts every row by a "
                 "constant, and a mask with a hole counts the padded keys in the distance",
             classes=("padding",), seen="huggingface/transformers#17474 (BLOOM's first build_alibi_tensor); "
                                        "PaddlePaddle/PaddleNLP#6495",
             signature="mask-heads-dtype", alibi_convention="bloom")
def padding_ignored(attention_mask, num_heads, dtype):
    batch_size, max_seq_len = attention_mask.shape
    slopes = torch.tensor(_paper_slopes(num_heads)).unsqueeze(1).unsqueeze(1)
    arange_tensor = torch.arange(max_seq_len).unsqueeze(0).unsqueeze(0)
    alibi = slopes * arange_tensor.expand(num_heads, -1, -1)
    return alibi.repeat(batch_size, 1, 1).to(dtype)


@alibi_wrong(bug="alibi_bias_max read from the call but the exponents written with the literal 8",
             classes=("slope-rule",), seen="antonellof/ferrox#243 (llama.cpp graphs: the literal 8 for some models, "
                                           "max_alibi_bias read for others)",
             signature="heads-length-max", alibi_convention="mpt", alibi_bias_max=16.0)
def bias_max_hard_coded(num_heads, sequence_length, alibi_bias_max=8):
    return _key_last(_mpt_slopes(num_heads, 8), sequence_length)


# -- partial ALiBi ----------------------------------------------------------------------------


class PartialSlopesOfAllHeads(nn.Module):
    """Partial ALiBi with the slopes of every head, cut to the ALiBi heads."""

    def __init__(self, heads, total_heads):
        super().__init__()
        slopes = torch.tensor(_paper_slopes(total_heads))[:heads]
        self.register_buffer("slopes", slopes[:, None, None], persistent=False)
        self.total_heads = total_heads

    def forward(self, i, j):
        bias = _symmetric(i, j) * self.slopes
        return F.pad(bias, (0, 0, 0, 0, 0, self.total_heads - bias.shape[0]))


alibi_wrong(bug="partial ALiBi: the first alibi_heads of the slopes of all heads, where x-transformers gives the "
                "ALiBi heads the slopes of alibi_heads heads",
            classes=("partial",), seen="lucidrains/x-transformers AlibiPositionalBias(heads=alibi_num_heads, "
                                       "total_heads=heads); lucidrains/x-transformers#85",
            signature="module-ij", init={"heads": 4, "total_heads": "{num_heads}"}, heads=_FROM_FOUR,
            alibi_convention="bidirectional", **_PARTIAL)(PartialSlopesOfAllHeads)


class PartialUnbiasedHeadsFirst(nn.Module):
    """Partial ALiBi with the zero heads padded in front of the ALiBi heads."""

    def __init__(self, heads, total_heads):
        super().__init__()
        self.register_buffer("slopes", torch.tensor(_paper_slopes(heads))[:, None, None], persistent=False)
        self.total_heads = total_heads

    def forward(self, i, j):
        bias = _symmetric(i, j) * self.slopes
        return F.pad(bias, (0, 0, 0, 0, self.total_heads - bias.shape[0], 0))


alibi_wrong(bug="partial ALiBi: the heads without a bias padded before the ALiBi heads, not after",
            classes=("partial",), seen="lucidrains/x-transformers#85 (the padding of bias and slopes over heads)",
            signature="module-ij", init={"heads": 4, "total_heads": "{num_heads}"}, heads=_FROM_FOUR,
            alibi_convention="bidirectional", **_PARTIAL)(PartialUnbiasedHeadsFirst)


# -- slopes kept in float16 ----------------------------------------------------------------------


@alibi_wrong(bug="the slopes kept in a float16 buffer (a model cast with .half() casts its registered buffers) and "
                 "returned from it: each slope off by up to 2**-11 of itself, and every bias it makes at key 8192 "
                 "with it",
             classes=("precision",), seen="posenc-spec's ALiBi issue (slopes in a float16 buffer judged at float16 "
                                          "rounding); torch.nn.Module.half() casts every floating buffer",
             signature="heads")
def slopes_from_float16_buffer(num_heads):
    return torch.tensor(_paper_slopes(num_heads), dtype=torch.float32).half()


class BiasFromFloat16Slopes(_SlopesModule):
    """A causal bias module whose slopes buffer was cast to float16 with the model: the product is
    formed in float32 from the rounded slopes."""

    def __init__(self, heads):
        super().__init__(heads)
        self.half()  # the model cast to float16, its buffers with it

    def forward(self, i, j):
        q = torch.arange(j - i, j)[:, None]
        return (torch.arange(j)[None, :] - q)[None].float() * self.slopes.float()


alibi_wrong(bug="the slopes buffer cast to float16 with the model (.half()), the bias formed in float32 from it: "
                "every bias off by up to 2**-11 of itself",
            classes=("precision",), seen="posenc-spec's ALiBi issue (slopes in a float16 buffer); "
                                         "torch.nn.Module.half() casts every floating buffer",
            signature="module-ij", init={"heads": "{num_heads}"}, alibi_convention="paper")(BiasFromFloat16Slopes)
