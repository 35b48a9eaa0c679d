"""Stateful code that is right call by call and wrong in the order real code calls it.

Each class or function is written the way its library writes it, with the slip of the
issue or pull request it cites (``seen``), and registered with the sequence of the gate
that exposes it (:mod:`meta_tests.corpus.stateful_registry`). Most pass the grid alone:
its calls come one size at a time, float32 first, batch 1, ``x`` contiguous. The helpers
and the two unregistered classes below are the library code both this module and
:mod:`.stateful_correct` build on; a slip is in the registered entry.

A catalogue, one entry per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .stateful_registry import stateful_wrong

# The rotary entries' head size and model length: one head size and a short grid keep them cheap.
ROPE = {"head_dim": 64, "max_positions": 4096}
PER_HEAD = {"init": {"dim": "{head_dim}"}}
X_POSITIONS_CACHE = {"api": "rope-cache", "cache_call": "x-positions", **ROPE}
TABLE = {"max_positions": 256}


def _inv_freq(dim, base=10000.0):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _rotate_pairs(x):
    """Interleaved pairs (2i, 2i + 1) turned: (x0, x1) -> (-x1, x0)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).flatten(-2)


def _half(compact):
    return torch.cat((compact, compact), dim=-1)


def _cache_of(inv_freq, position_ids, dtype):
    """transformers' cos and sin of ``position_ids`` (any shape) in the half layout, cast to ``dtype``."""
    emb = _half(position_ids[..., None].float() * inv_freq)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _apply_bshd(x, cos, sin):
    """``x cos + rotate_half(x) sin`` for x (batch, seq, heads, head_dim) and compact cos, sin (seq, r/2)."""
    cos, sin = _half(cos)[None, :, None, :].to(x.dtype), _half(sin)[None, :, None, :].to(x.dtype)
    return x * cos + _rotate_half(x) * sin


def _fairseq_embedding(num_embeddings, embedding_dim):
    """fairseq's get_embedding: [sin | cos], log(10000) / (half - 1), positions 0 .. num_embeddings - 1."""
    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
    emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)


def _torchtune_cache(dim, max_seq_len, base):
    """torchtune's build_rope_cache: (max_seq_len, dim / 2, 2) of cos and sin."""
    theta = 1.0 / (base ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    idx_theta = torch.einsum("i, j -> ij", torch.arange(max_seq_len, dtype=theta.dtype), theta).float()
    return torch.stack([torch.cos(idx_theta), torch.sin(idx_theta)], dim=-1)


def _torchtune_rotate(x, rope_cache):
    """torchtune's forward after it picked its rows of the cache: x (b, s, n_h, h_d), pairs interleaved."""
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    rope_cache = rope_cache.view(-1, xshaped.size(1), 1, xshaped.size(3), 2)
    x_out = torch.stack([xshaped[..., 0] * rope_cache[..., 0] - xshaped[..., 1] * rope_cache[..., 1],
                         xshaped[..., 1] * rope_cache[..., 0] + xshaped[..., 0] * rope_cache[..., 1]], -1)
    return x_out.flatten(3).type_as(x)


def _flash_rotate(x, cos_cached, sin_cached, offset):
    """flash-attn's non-interleaved rotation of x (b, h, s, d) with its cached rows from ``offset`` on."""
    seqlen = x.shape[-2]
    cos, sin = _half(cos_cached[offset:offset + seqlen]), _half(sin_cached[offset:offset + seqlen])
    return x * cos.to(x.dtype) + _rotate_half(x) * sin.to(x.dtype)


def _tensor2tensor_timesteps(timesteps, dim):
    """Ho et al.'s get_timestep_embedding: [sin | cos], log(10000) / (half - 1)."""
    half = dim // 2
    emb = math.log(10000) / (half - 1)
    emb = torch.exp(torch.arange(half, dtype=torch.float32) * -emb)
    emb = timesteps.float()[:, None] * emb[None, :]
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)


class LegacyLlamaRotary(nn.Module):
    """transformers' legacy LlamaRotaryEmbedding: the cos/sin cache built at init for
    max_position_embeddings in the default dtype and rebuilt, in :meth:`_cache_dtype`, by a call
    past it; read at position_ids and cast to x's dtype."""

    def __init__(self, dim, max_position_embeddings=2048, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self._set_cos_sin_cache(max_position_embeddings, torch.get_default_dtype())

    def _cache_dtype(self, x):
        return torch.get_default_dtype()

    def _set_cos_sin_cache(self, seq_len, dtype):
        self.max_seq_len_cached = seq_len
        t = torch.arange(seq_len, dtype=self.inv_freq.dtype)
        emb = _half(torch.einsum("i,j->ij", t, self.inv_freq))
        self.register_buffer("cos_cached", emb.cos().to(dtype), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(dtype), persistent=False)

    def forward(self, x, position_ids):
        seq_len = int(position_ids.max()) + 1  # the attention layer's kv_seq_len
        if seq_len > self.max_seq_len_cached:
            self._set_cos_sin_cache(seq_len, self._cache_dtype(x))
        return self.cos_cached[position_ids].to(x.dtype), self.sin_cached[position_ids].to(x.dtype)


class FlashRotary(nn.Module):
    """flash-attn's RotaryEmbedding, non-interleaved: cos/sin cached for seqlen +
    seqlen_offset, rebuilt when :meth:`_stale` says so, sliced at the offset."""

    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self._seq_len_cached, self._cos_cached, self._sin_cached = 0, None, None

    def _stale(self, seqlen, device, dtype) -> bool:
        return (seqlen > self._seq_len_cached or self._cos_cached is None or self._cos_cached.device != device
                or self._cos_cached.dtype != dtype)

    def forward(self, x, offset=0):
        seqlen = x.shape[-2] + offset
        if self._stale(seqlen, x.device, x.dtype):
            self._seq_len_cached = seqlen
            freqs = torch.outer(torch.arange(seqlen, device=x.device, dtype=torch.float32), self.inv_freq)
            self._cos_cached, self._sin_cached = torch.cos(freqs).to(x.dtype), torch.sin(freqs).to(x.dtype)
        return _flash_rotate(x, self._cos_cached, self._sin_cached, offset)


# -- dtype-order: a cache built or grown in one dtype, read in another -------------------------


@stateful_wrong(bug="transformers' legacy LlamaRotaryEmbedding: a call past the cached length rebuilds the cos/sin "
                    "cache in its own dtype (_set_cos_sin_cache(seq_len, dtype=x.dtype)): after a bfloat16 call grew "
                    "it, float32 calls read bfloat16 values",
                classes=("dtype-cache",), sequence="dtype-order", seen="huggingface/transformers#25681",
                **X_POSITIONS_CACHE, init={"dim": "{head_dim}", "max_position_embeddings": 16})
class LegacyLlamaRotaryGrownInCallDtype(LegacyLlamaRotary):
    def _cache_dtype(self, x):
        return x.dtype


@stateful_wrong(bug="flash-attn's RotaryEmbedding cache without its dtype condition: rebuilt only when a call needs "
                    "more positions or another device, so the bfloat16 call that built it serves later float32 calls",
                classes=("dtype-cache",), sequence="dtype-order", seen="openai/gpt-oss#43",
                api="rope-apply", signature="x-offset", x_layout="bhsd", **ROPE, **PER_HEAD)
class FlashRotaryCacheWithoutDtype(FlashRotary):
    def _stale(self, seqlen, device, dtype) -> bool:
        return seqlen > self._seq_len_cached or self._cos_cached is None or self._cos_cached.device != device


@stateful_wrong(bug="GPT-NeoX's legacy rotary: cos/sin cached in the dtype of the call that built them, rebuilt only "
                    "for a longer call; a bfloat16 prompt first, and every float32 call after reads bfloat16 values",
                classes=("dtype-cache",), sequence="dtype-order", seen="huggingface/transformers#24262",
                api="rope-apply", **ROPE, **PER_HEAD)
class NeoXRotaryCachedInCallDtype(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.max_seq_len_cached, self.cos_cached, self.sin_cached = 0, None, None

    def forward(self, x, positions):
        seq_len = int(positions.max()) + 1
        if seq_len > self.max_seq_len_cached:
            self.max_seq_len_cached = seq_len
            freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32), self.inv_freq)
            self.cos_cached, self.sin_cached = freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
        return _apply_bshd(x, self.cos_cached[positions], self.sin_cached[positions])


@stateful_wrong(bug="Wan's sinusoidal_embedding_1d without its float64 cast of the positions: the exponent made "
                    "with .to(position) takes a bfloat16 or float16 timestep's dtype, and so does every frequency",
                classes=("input-dtype",), sequence="dtype-order", seen="modelscope/DiffSynth-Studio#1025",
                api="timesteps", convention="guided-diffusion", odd="error", **TABLE)
def wan_frequencies_in_the_timesteps_dtype(position, dim):
    half = dim // 2
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    sinusoid = torch.outer(position.type(torch.float64), torch.pow(10000, -torch.arange(half).to(position).div(half)))
    return torch.cat([torch.cos(sinusoid), torch.sin(sinusoid)], dim=1).float()


@stateful_wrong(bug="F5-TTS's SinusPositionEmbedding: scale * x.unsqueeze(1) runs in x's dtype before the float32 "
                    "frequencies promote it, so a bfloat16 or float16 t in [0, 1] is scaled to 1000 and rounded again",
                classes=("input-dtype",), sequence="dtype-order",
                seen="Tencent-Hunyuan/UniRL#438; huggingface/diffusers#9405",
                api="timesteps", convention="tensor2tensor", scale=1000.0, t_max=1.0, odd="skip", **TABLE)
def f5_tts_scale_in_the_timesteps_dtype(x, dim):
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim).float() * -emb)
    emb = 1000 * x.unsqueeze(1) * emb.unsqueeze(0)
    return torch.cat((emb.sin(), emb.cos()), dim=-1)


# -- decode: a path one-position steps take ------------------------------------------------------


@stateful_wrong(bug="a one-token step takes its position from the count of tokens seen, which it bumps before reading "
                    "(the count committed too early): every decode step is one position ahead",
                classes=("decode",), sequence="decode", seen="fla-org/flash-linear-attention#766",
                **X_POSITIONS_CACHE, **PER_HEAD)
class SeenTokensCommittedEarly(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.seen_tokens = 0

    def forward(self, x, position_ids):
        if position_ids.shape[-1] == 1:  # decode: the next position is the number of tokens seen
            self.seen_tokens += 1
            position_ids = torch.full_like(position_ids, self.seen_tokens)
        else:
            self.seen_tokens = int(position_ids.max()) + 1
        return _cache_of(self.inv_freq, position_ids, x.dtype)


@stateful_wrong(bug="the prompt sets the offset of the next token; one-token steps read it and never advance it, so "
                    "the first decode step is right and every later one repeats its position",
                classes=("decode",), sequence="decode", seen="skyzh/tiny-llm#46",
                **X_POSITIONS_CACHE, **PER_HEAD)
class DecodeOffsetNotAdvanced(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.next_position = 0

    def forward(self, x, position_ids):
        if position_ids.shape[-1] == 1:
            position_ids = torch.full_like(position_ids, self.next_position)
        else:
            self.next_position = int(position_ids.max()) + 1
        return _cache_of(self.inv_freq, position_ids, x.dtype)


@stateful_wrong(bug="flash-attn's RotaryEmbedding cache updated for seqlen, not seqlen + seqlen_offset: a decode step "
                    "past the prompt slices cos/sin beyond the cached rows",
                classes=("decode", "growth"), sequence="decode", seen="pytorch/executorch#2010",
                api="rope-apply", signature="x-offset", x_layout="bhsd", **ROPE, **PER_HEAD)
class FlashRotaryCacheWithoutOffset(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self._seq_len_cached, self._cos_cached, self._sin_cached = 0, None, None

    def forward(self, x, offset=0):
        seqlen = x.shape[-2]
        if seqlen > self._seq_len_cached or self._cos_cached is None or self._cos_cached.dtype != x.dtype:
            self._seq_len_cached = seqlen
            freqs = torch.outer(torch.arange(seqlen, dtype=torch.float32), self.inv_freq)
            self._cos_cached, self._sin_cached = torch.cos(freqs).to(x.dtype), torch.sin(freqs).to(x.dtype)
        return _flash_rotate(x, self._cos_cached, self._sin_cached, offset)


# -- offsets: a cache keyed on the length -------------------------------------------------------


@stateful_wrong(bug="cos/sin remembered per sequence length (and dtype) to skip recomputing them: a call of the same "
                    "length at another offset gets the first offset's rows",
                classes=("offset",), sequence="offsets",
                seen="tatp22/multidim-positional-encoding#19; openai/gpt-oss#43",
                **X_POSITIONS_CACHE, **PER_HEAD)
class CosSinMemoKeyedOnLength(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self._memo = {}

    def forward(self, x, position_ids):
        key = (position_ids.shape[-1], x.dtype)
        if key not in self._memo:
            self._memo[key] = _cache_of(self.inv_freq, position_ids, x.dtype)
        return self._memo[key]


@stateful_wrong(bug="rotary-embedding-torch's cache key f'freqs:{seq_len}' without the offset: the same length at "
                    "another offset is rotated as at the first",
                classes=("offset",), sequence="offsets", seen="lucidrains/rotary-embedding-torch#11",
                api="rope-apply", signature="x-offset", x_layout="bhsd", rope_layout="interleaved",
                method="rotate_queries_or_keys", **ROPE, **PER_HEAD)
class RotaryEmbeddingCacheKeyWithoutOffset(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        self.freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
        self.cache = {}

    def forward(self, t, cache_key):
        if cache_key not in self.cache:
            self.cache[cache_key] = torch.einsum("..., f -> ... f", t().float(), self.freqs).repeat_interleave(2, -1)
        return self.cache[cache_key]

    def rotate_queries_or_keys(self, t, seq_dim=-2, offset=0):
        seq_len = t.shape[seq_dim]
        freqs = self.forward(lambda: torch.arange(seq_len) + offset, cache_key=f"freqs:{seq_len}")
        return (t * freqs.cos() + _rotate_pairs(t) * freqs.sin()).type(t.dtype)


# -- grow: a cache built for one length, or grown from 0 again -----------------------------------


@stateful_wrong(bug="the cos/sin table is extended by the rows a longer call needs, computed for positions 0, 1, ... "
                    "again instead of from the cached length on",
                classes=("growth",), sequence="grow", seen="huggingface/transformers#15444",
                api="rope-apply", **ROPE, **PER_HEAD)
class ApplyCacheExtendedFromZero(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.cos, self.sin = torch.empty(0, dim // 2), torch.empty(0, dim // 2)

    def forward(self, x, positions):
        have, needed = self.cos.shape[0], int(positions.max()) + 1
        if needed > have:
            freqs = torch.outer(torch.arange(needed - have, dtype=torch.float32), self.inv_freq)
            self.cos, self.sin = torch.cat([self.cos, freqs.cos()]), torch.cat([self.sin, freqs.sin()])
        return _apply_bshd(x, self.cos[positions], self.sin[positions])


@stateful_wrong(bug="x-transformers' apply slices freqs[-seq_len:] of a rotary table kept for the longest length "
                    "seen: right while every call is the longest, wrong for a shorter one after it",
                classes=("growth",), sequence="grow", seen="lucidrains/x-transformers#80",
                api="rope-cache", cache_call="length", cache_form="angles", **ROPE, **PER_HEAD)
class XTransformersFreqsFromTheEnd(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.freqs = torch.empty(0, dim)

    def forward(self, seq_len, head_dim):
        if seq_len > self.freqs.shape[0]:
            self.freqs = _half(torch.einsum("i , j -> i j", torch.arange(seq_len).float(), self.inv_freq))
        return self.freqs[-seq_len:]


@stateful_wrong(bug="the PyTorch tutorial's PositionalEncoding with its table built at the first input's length "
                    "instead of max_len: a longer input later meets a shorter table",
                classes=("growth",), sequence="grow", seen="huggingface/transformers#15444",
                api="table", convention="vaswani", signature="adds-to-x", x_layout="sbd", odd="skip",
                init={"d_model": "{dim}"}, **TABLE)
class TutorialPositionalEncodingBuiltOnFirstCall(nn.Module):
    def __init__(self, d_model, dropout=0.1):
        super().__init__()
        self.d_model, self.dropout, self.pe = d_model, nn.Dropout(p=dropout), None

    def forward(self, x):
        if self.pe is None:
            position = torch.arange(x.size(0)).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, self.d_model, 2) * (-math.log(10000.0) / self.d_model))
            pe = torch.zeros(x.size(0), 1, self.d_model)
            pe[:, 0, 0::2] = torch.sin(position * div_term)
            pe[:, 0, 1::2] = torch.cos(position * div_term)
            self.pe = pe
        return self.dropout(x + self.pe[:x.size(0)])


@stateful_wrong(bug="fairseq-style SinusoidalPositionalEmbedding extended with get_embedding(max_pos - old) rows "
                    "appended instead of rebuilt: the new rows start again at position 0",
                classes=("growth",), sequence="grow", seen="huggingface/transformers#15444",
                api="table", convention="tensor2tensor", odd="skip", method="positions",
                init={"embedding_dim": "{dim}"}, **TABLE)
class FairseqEmbeddingExtendedFromZero:
    def __init__(self, embedding_dim):
        self.embedding_dim, self.weights = embedding_dim, None

    def positions(self, num_positions, dim):
        have = 0 if self.weights is None else self.weights.size(0)
        if num_positions > have:
            more = _fairseq_embedding(num_positions - have, self.embedding_dim)
            self.weights = more if self.weights is None else torch.cat([self.weights, more])
        return self.weights[:num_positions]


# -- batch and rows: a batch of two ---------------------------------------------------------------


@stateful_wrong(bug="vLLM's forward_native flattening: query.reshape(num_tokens, -1, head_size) with num_tokens = "
                    "positions.numel(): with a batch of two, the second sequence is folded into extra heads",
                classes=("batch",), sequence="batch", seen="QwenLM/Qwen#401",
                api="rope-apply", **ROPE)
def rotary_over_flattened_tokens(query, positions):
    head_size = query.shape[-1]
    num_tokens = positions.numel()
    freqs = torch.outer(positions.float(), _inv_freq(head_size))
    flat = query.reshape(num_tokens, -1, head_size)
    cos, sin = _half(freqs.cos())[:, None, :].to(query.dtype), _half(freqs.sin())[:, None, :].to(query.dtype)
    return (flat * cos + _rotate_half(flat) * sin).reshape(query.shape)


@stateful_wrong(bug="position_ids flattened with .reshape(-1), batch 1 assumed: a batch of two comes back as one row "
                    "of twice the length",
                classes=("batch",), sequence="batch", seen="huggingface/transformers#22161",
                **X_POSITIONS_CACHE, **PER_HEAD)
class RotaryFlattenedPositionIds(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)

    def forward(self, x, position_ids):
        cos, sin = _cache_of(self.inv_freq, position_ids.reshape(-1), x.dtype)
        return cos[None], sin[None]


@stateful_wrong(bug="transformers' rotary forward with position_ids[:1]: the first row's positions stand for the "
                    "batch, wrong for left padding, packed sequences and continuous batching",
                classes=("rows",), sequence="rows", seen="unslothai/unsloth#3795",
                **X_POSITIONS_CACHE, **PER_HEAD)
class RotaryFromTheFirstRow(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float()
        position_ids_expanded = position_ids[:1, None, :].float()
        emb = _half((inv_freq_expanded @ position_ids_expanded).transpose(1, 2))
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


@stateful_wrong(bug="torchtune's RotaryPositionalEmbeddings indexing its cache with input_pos[0]: every row of the "
                    "batch rotated at the first row's positions",
                classes=("rows",), sequence="rows", seen="Comfy-Org/ComfyUI#15698",
                api="rope-apply", signature="x-input-pos", rope_layout="interleaved",
                init={"dim": "{head_dim}", "max_seq_len": "{max_positions}"}, **ROPE)
class TorchtuneRopeFromTheFirstRow(nn.Module):
    def __init__(self, dim, max_seq_len=4096, base=10000):
        super().__init__()
        self.register_buffer("cache", _torchtune_cache(dim, max_seq_len, base), persistent=False)

    def forward(self, x, *, input_pos=None):
        return _torchtune_rotate(x, self.cache[: x.size(1)] if input_pos is None else self.cache[input_pos[0]])


@stateful_wrong(bug="apply_rotary_pos_emb after the old comment 'the first two dimensions of cos and sin are always 1, "
                    "so we can squeeze them': cos[0] and sin[0] stand for every row of the batch",
                classes=("rows",), sequence="rows", seen="jayelm/gisting#10",
                api="rope-apply", signature="q-k-cos-sin", x_layout="bhsd", **ROPE)
def apply_rotary_pos_emb_first_row(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos[0][None].unsqueeze(unsqueeze_dim), sin[0][None].unsqueeze(unsqueeze_dim)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


@stateful_wrong(bug="position interpolation's einsum('i,j->ij') of position_ids[0], batch 1 assumed: a batch of two "
                    "gets the first row's cos and sin",
                classes=("rows",), sequence="rows", seen="unslothai/unsloth#3795",
                api="rope-cache", cache_call="batched", **ROPE)
def einsum_cache_of_the_first_row(position_ids, head_dim):
    emb = _half(torch.einsum("i,j->ij", position_ids[0].float(), _inv_freq(head_dim)))
    return emb.cos()[None], emb.sin()[None]


# -- view: a kernel that assumes a contiguous x ---------------------------------------------------


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


@stateful_wrong(bug="a fused rotary kernel's reference path reads x through its data pointer as if contiguous "
                    "(as_strided with row-major strides): transformers' transposed q is read in the wrong order",
                classes=("view",), sequence="view", seen="vllm-project/vllm-ascend#114",
                api="rope-apply", x_layout="bhsd", **ROPE)
def fused_rotary_reading_memory_in_order(x, positions):
    x = torch.as_strided(x, x.shape, _contiguous_strides(x.shape), x.storage_offset())
    freqs = torch.outer(positions.float(), _inv_freq(x.shape[-1]))
    cos, sin = _half(freqs.cos()).to(x.dtype), _half(freqs.sin()).to(x.dtype)
    return x * cos + _rotate_half(x) * sin


@stateful_wrong(bug="heads and sequence merged with x.view(batch, -1, head_dim) to rotate every row in one product: "
                    "transformers' transposed q cannot be viewed so, and the call raises",
                classes=("view",), sequence="view", seen="vllm-project/vllm-ascend#114",
                api="rope-apply", x_layout="bhsd", **ROPE)
def rotary_over_viewed_heads_and_sequence(x, positions):
    batch, heads, seq, head_dim = x.shape
    flat = x.view(batch, -1, head_dim)
    freqs = torch.outer(positions.float(), _inv_freq(head_dim))
    cos, sin = _half(freqs.cos()).repeat(heads, 1).to(x.dtype), _half(freqs.sin()).repeat(heads, 1).to(x.dtype)
    return (flat * cos + _rotate_half(flat) * sin).view(batch, heads, seq, head_dim)


# -- aliasing: a result the next call rewrites ---------------------------------------------------


@stateful_wrong(bug="rotates into one preallocated output buffer per dtype (CUDA-graph style) and returns a view of "
                    "it: the next call of that dtype overwrites the x' the caller holds",
                classes=("aliasing",), sequence="aliasing", seen="vllm-project/vllm#42833",
                api="rope-apply", **ROPE, **PER_HEAD)
class ApplyIntoStaticBuffer(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.out = {}

    def forward(self, x, positions):
        buffer = self.out.get(x.dtype)
        if buffer is None or buffer.numel() < x.numel():
            buffer = self.out[x.dtype] = torch.empty(x.numel(), dtype=x.dtype)
        freqs = torch.outer(positions.float(), self.inv_freq)
        out = buffer[:x.numel()].view(x.shape)
        torch.add(x * _half(freqs.cos())[None, :, None, :].to(x.dtype),
                  _rotate_half(x) * _half(freqs.sin())[None, :, None, :].to(x.dtype), out=out)
        return out


@stateful_wrong(bug="cos and sin written into persistent buffers (static shapes for CUDA graphs) and handed out as "
                    "views: the next call rewrites the cos and sin the caller holds",
                classes=("aliasing",), sequence="aliasing", seen="vllm-project/vllm#42833",
                **X_POSITIONS_CACHE, **PER_HEAD)
class CosSinInStaticBuffers(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.cos_buffer = self.sin_buffer = torch.empty(0)

    def forward(self, x, position_ids):
        cos, sin = _cache_of(self.inv_freq, position_ids, torch.float32)
        if self.cos_buffer.numel() < cos.numel():
            self.cos_buffer, self.sin_buffer = torch.empty(cos.numel()), torch.empty(cos.numel())
        cos_out = self.cos_buffer[:cos.numel()].view(cos.shape).copy_(cos)
        sin_out = self.sin_buffer[:sin.numel()].view(sin.shape).copy_(sin)
        return cos_out, sin_out


@stateful_wrong(bug="a sampler's timestep embedding written into one static buffer and returned as a view: the next "
                    "step's embedding overwrites the one the caller holds",
                classes=("aliasing",), sequence="aliasing", seen="vllm-project/vllm#42833",
                api="timesteps", convention="tensor2tensor", odd="skip", init={"dim": "{dim}"}, **TABLE)
class TimestepEmbeddingInStaticBuffer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.buffer = torch.empty(0)

    def forward(self, timesteps, dim):
        emb = _tensor2tensor_timesteps(timesteps, dim)
        if self.buffer.numel() < emb.numel():
            self.buffer = torch.empty(emb.numel())
        return self.buffer[:emb.numel()].view(emb.shape).copy_(emb)


_SHARED_TABLE = {"buffer": torch.empty(0)}


@stateful_wrong(bug="one flat buffer for the tables of every width, each written at its head and returned as a view: "
                    "the next table overwrites the one the caller holds",
                classes=("aliasing",), sequence="aliasing", seen="ml-explore/mlx-examples#359",
                api="table", convention="vaswani", odd="skip", **TABLE)
def table_in_a_shared_buffer(num_positions, dim):
    position = torch.arange(num_positions).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    size = num_positions * dim
    if _SHARED_TABLE["buffer"].numel() < size:
        _SHARED_TABLE["buffer"] = torch.empty(size)
    table = _SHARED_TABLE["buffer"][:size].view(num_positions, dim)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


# -- memo: timestep embeddings keyed on the batch's shape ----------------------------------------


@stateful_wrong(bug="a DDPM time embedding that keeps the embedding of the last batch, keyed on the batch's shape: "
                    "the next batch of the same size, at other steps, gets the old embedding",
                classes=("memo",), sequence="memo", seen="tatp22/multidim-positional-encoding#19",
                api="timesteps", convention="tensor2tensor", odd="skip", init={"dim": "{dim}"}, **TABLE)
class TimeEmbeddingMemoKeyedOnShape(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self._key, self._embedding = None, None

    def forward(self, timesteps, dim):
        key = (tuple(timesteps.shape), dim)
        if key != self._key:
            self._key, self._embedding = key, _tensor2tensor_timesteps(timesteps, dim)
        return self._embedding
