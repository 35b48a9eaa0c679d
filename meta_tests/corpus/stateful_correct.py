"""Stateful code that is right in any order of calls, in the idioms of the wrong entries.

Caches keyed on the dtype and the length (or built in float32 and cast on the way out),
slices taken at the call's offset, tables grown by recomputing them, memos keyed on the
values, results that are the caller's. Each is registered with the ``[[targets]]`` table
the gate reads for it (:mod:`meta_tests.corpus.stateful_registry`) and must conform. (The
PyTorch tutorial's PositionalEncoding, its table built once for ``max_len``, is gated as
written in ``spec_tests/core/test_gate_as_written.py``.)
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .stateful_registry import stateful_correct
from .stateful_wrong import (
    PER_HEAD,
    ROPE,
    TABLE,
    X_POSITIONS_CACHE,
    FlashRotary,
    LegacyLlamaRotary,
    _apply_bshd,
    _cache_of,
    _fairseq_embedding,
    _half,
    _inv_freq,
    _rotate_half,
    _rotate_pairs,
    _tensor2tensor_timesteps,
    _torchtune_cache,
    _torchtune_rotate,
)


@stateful_correct(idiom="transformers' legacy LlamaRotaryEmbedding: the cos/sin cache built in the default dtype "
                        "(float32), rebuilt past the cached length in float32 again, cast to x's dtype on the way out",
                  seen="huggingface/transformers#25681",
                  **X_POSITIONS_CACHE, init={"dim": "{head_dim}", "max_position_embeddings": 16})
class LegacyLlamaRotaryEmbedding(LegacyLlamaRotary):
    pass


@stateful_correct(idiom="transformers' current rotary forward: inv_freq expanded over the batch, matmul with "
                        "position_ids (batch, seq) in float32, cos and sin cast to x's dtype",
                  seen="huggingface/transformers models/llama (LlamaRotaryEmbedding.forward)",
                  **X_POSITIONS_CACHE, **PER_HEAD)
class CurrentLlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        emb = _half((inv_freq_expanded @ position_ids_expanded).transpose(1, 2))
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


@stateful_correct(idiom="flash-attn's RotaryEmbedding: cos/sin cached for seqlen + seqlen_offset, rebuilt when a call "
                        "needs more positions, another device or another dtype, sliced at the offset",
                  seen="Dao-AILab/flash-attention flash_attn/layers/rotary.py",
                  api="rope-apply", signature="x-offset", x_layout="bhsd", **ROPE, **PER_HEAD)
class FlashRotaryEmbedding(FlashRotary):
    pass


@stateful_correct(idiom="rotary-embedding-torch's cached freqs: a hit when offset + seq_len fits the cached length "
                        "returns cached_freqs[offset:offset + seq_len]; only a call at offset 0 writes the cache",
                  seen="lucidrains/rotary-embedding-torch#11",
                  api="rope-apply", signature="x-offset", x_layout="bhsd", rope_layout="interleaved",
                  method="rotate_queries_or_keys", **ROPE, **PER_HEAD)
class RotaryEmbeddingTorchCache(nn.Module):
    def __init__(self, dim, theta=10000, cache_max_seq_len=8192):
        super().__init__()
        self.freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
        self.cached_freqs = torch.zeros(cache_max_seq_len, dim)
        self.cached_freqs_seq_len, self.cache_max_seq_len = 0, cache_max_seq_len

    def forward(self, t, seq_len, offset=0):
        should_cache = offset + seq_len <= self.cache_max_seq_len
        if should_cache and offset + seq_len <= self.cached_freqs_seq_len:
            return self.cached_freqs[offset:offset + seq_len].detach()
        freqs = torch.einsum("..., f -> ... f", t.float(), self.freqs).repeat_interleave(2, -1)
        if should_cache and offset == 0:
            self.cached_freqs[:seq_len] = freqs.detach()
            self.cached_freqs_seq_len = seq_len
        return freqs

    def rotate_queries_or_keys(self, t, seq_dim=-2, offset=0):
        seq_len = t.shape[seq_dim]
        freqs = self.forward(torch.arange(seq_len) + offset, seq_len=seq_len, offset=offset)
        return (t * freqs.cos() + _rotate_pairs(t) * freqs.sin()).type(t.dtype)


@stateful_correct(idiom="torchtune's RotaryPositionalEmbeddings: the cache built for max_seq_len at init, indexed "
                        "with input_pos (batch, seq), every row at its own positions",
                  seen="pytorch/torchtune torchtune/modules/position_embeddings.py",
                  api="rope-apply", signature="x-input-pos", rope_layout="interleaved",
                  init={"dim": "{head_dim}", "max_seq_len": "{max_positions}"}, **ROPE)
class TorchtuneRotaryPositionalEmbeddings(nn.Module):
    def __init__(self, dim, max_seq_len=4096, base=10000):
        super().__init__()
        self.register_buffer("cache", _torchtune_cache(dim, max_seq_len, base), persistent=False)

    def forward(self, x, *, input_pos=None):
        return _torchtune_rotate(x, self.cache[: x.size(1)] if input_pos is None else self.cache[input_pos])


@stateful_correct(idiom="Meta's reference: freqs_cis precomputed for 2 * max_seq_len, sliced "
                        "[start_pos : start_pos + seqlen] for each call, apply_rotary_emb in complex64",
                  seen="meta-llama/llama llama/model.py",
                  api="rope-apply", signature="x-offset", x_layout="bhsd", rope_layout="interleaved",
                  init={"dim": "{head_dim}", "max_seq_len": "{max_positions}"}, **ROPE)
class MetaReferenceRotary(nn.Module):
    def __init__(self, dim, max_seq_len=4096, theta=10000.0):
        super().__init__()
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        freqs = torch.outer(torch.arange(max_seq_len * 2, dtype=torch.float32), freqs)
        self.freqs_cis = torch.polar(torch.ones_like(freqs), freqs)

    def forward(self, x, offset=0):
        xq = x.transpose(1, 2)  # (batch, seq, heads, head_dim), as Meta's attention holds it
        seqlen = xq.shape[1]
        freqs_cis = self.freqs_cis[offset:offset + seqlen]
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        out = torch.view_as_real(xq_ * freqs_cis[None, :, None, :]).flatten(3)
        return out.type_as(x).transpose(1, 2)


@stateful_correct(idiom="an apply whose cos/sin table is kept in float32 and rebuilt whole for a call that needs "
                        "more positions, cast to x's dtype for each call",
                  api="rope-apply", **ROPE, **PER_HEAD)
class ApplyCacheRebuiltWhole(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self.cos, self.sin = torch.empty(0, dim // 2), torch.empty(0, dim // 2)

    def forward(self, x, positions):
        needed = int(positions.max()) + 1
        if needed > self.cos.shape[0]:
            freqs = torch.outer(torch.arange(needed, dtype=torch.float32), self.inv_freq)
            self.cos, self.sin = freqs.cos(), freqs.sin()
        return _apply_bshd(x, self.cos[positions], self.sin[positions])


@stateful_correct(idiom="transformers' apply_rotary_pos_emb: cos and sin of shape (batch, seq, head_dim) unsqueezed "
                        "at the heads' axis, q and k as the attention layer hands them (transposed views)",
                  seen="huggingface/transformers models/llama (apply_rotary_pos_emb)",
                  api="rope-apply", signature="q-k-cos-sin", x_layout="bhsd", **ROPE)
def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


@stateful_correct(idiom="position interpolation's einsum('bi,j->bij') of position_ids (batch, seq), every row its own",
                  api="rope-cache", cache_call="batched", **ROPE)
def einsum_cache_of_every_row(position_ids, head_dim):
    emb = _half(torch.einsum("bi,j->bij", position_ids.float(), _inv_freq(head_dim)))
    return emb.cos(), emb.sin()


@stateful_correct(idiom="cos and sin remembered per (dtype, positions): a memo keyed on what the call computes from",
                  **X_POSITIONS_CACHE, **PER_HEAD)
class CosSinMemoKeyedOnPositions(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", _inv_freq(dim, base), persistent=False)
        self._memo = {}

    def forward(self, x, position_ids):
        key = (x.dtype, tuple(position_ids.shape), position_ids.numpy().tobytes())
        if key not in self._memo:
            self._memo[key] = _cache_of(self.inv_freq, position_ids, x.dtype)
        cos, sin = self._memo[key]
        return cos.clone(), sin.clone()


@stateful_correct(idiom="fairseq's SinusoidalPositionalEmbedding: weights rebuilt whole by get_embedding when a call "
                        "needs more positions, the table a slice of them",
                  seen="facebookresearch/fairseq fairseq/modules/sinusoidal_positional_embedding.py",
                  api="table", convention="tensor2tensor", odd="skip", method="positions",
                  init={"embedding_dim": "{dim}"}, **TABLE)
class FairseqSinusoidalPositionalEmbedding:
    def __init__(self, embedding_dim):
        self.embedding_dim, self.weights = embedding_dim, None

    def positions(self, num_positions, dim):
        if self.weights is None or num_positions > self.weights.size(0):
            self.weights = _fairseq_embedding(num_positions, self.embedding_dim)
        return self.weights[:num_positions]


@stateful_correct(idiom="ESPnet's PositionalEncoding.extend_pe: the table extended by recomputing it when too short, "
                        "converted when asked in another dtype or device",
                  seen="espnet/espnet#1105",
                  api="table", convention="vaswani", odd="skip", method="positions", init={"d_model": "{dim}"},
                  **TABLE)
class EspnetPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=16):
        super().__init__()
        self.d_model, self.pe = d_model, None
        self.extend_pe(torch.zeros(1, max_len))

    def extend_pe(self, x):
        if self.pe is not None and self.pe.size(1) >= x.size(1):
            if self.pe.dtype != x.dtype or self.pe.device != x.device:
                self.pe = self.pe.to(dtype=x.dtype, device=x.device)
            return
        pe = torch.zeros(x.size(1), self.d_model)
        position = torch.arange(0, x.size(1), dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32)
                             * -(math.log(10000.0) / self.d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.pe = pe.unsqueeze(0).to(device=x.device, dtype=x.dtype)

    def positions(self, num_positions, dim):
        self.extend_pe(torch.zeros(1, num_positions))
        return self.pe[0, :num_positions]


@stateful_correct(idiom="Wan's sinusoidal_embedding_1d: positions cast to float64 first, the result cast back to a "
                        "floating-point timestep's dtype (bfloat16 in, bfloat16 out)",
                  seen="modelscope/DiffSynth-Studio#1025",
                  api="timesteps", convention="guided-diffusion", odd="error", **TABLE)
def wan_sinusoidal_embedding_1d(position, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    float64 = position.type(torch.float64)
    sinusoid = torch.outer(float64, torch.pow(10000, -torch.arange(half).to(float64).div(half)))
    x = torch.cat([torch.cos(sinusoid), torch.sin(sinusoid)], dim=1)
    return x.to(position.dtype) if position.is_floating_point() else x


@stateful_correct(idiom="a time embedding that remembers the last batch keyed on its dtype and values, and hands out "
                        "a copy",
                  api="timesteps", convention="tensor2tensor", odd="skip", init={"dim": "{dim}"}, **TABLE)
class TimeEmbeddingMemoKeyedOnValues(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self._key, self._embedding = None, None

    def forward(self, timesteps, dim):
        key = (timesteps.dtype, tuple(timesteps.shape), timesteps.view(-1).view(torch.uint8).numpy().tobytes(), dim)
        if key != self._key:
            self._key, self._embedding = key, _tensor2tensor_timesteps(timesteps, dim)
        return self._embedding.clone()


@stateful_correct(idiom="DDPM code: the embedding of every integer step 0..T computed once and looked up for int64 "
                        "steps, computed from the formula for any other timesteps",
                  seen="hojonathanho/diffusion diffusion_tf/nn.py (get_timestep_embedding)",
                  api="timesteps", convention="tensor2tensor", odd="skip", init={"dim": "{dim}", "steps": "{t_max}"},
                  **TABLE)
class DdpmIntegerStepTable(nn.Module):
    def __init__(self, dim, steps=1000):
        super().__init__()
        self.register_buffer("table", _tensor2tensor_timesteps(torch.arange(int(steps) + 1), dim), persistent=False)

    def forward(self, timesteps, dim):
        if timesteps.dtype == torch.int64:
            return self.table[timesteps]
        return _tensor2tensor_timesteps(timesteps, dim)
