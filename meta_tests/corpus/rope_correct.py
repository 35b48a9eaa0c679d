"""Correct rotary embeddings in other libraries' idioms, each registered with what it declares.

None uses the project's oracle: each computes RoPE the way the code it imitates does (Meta's
complex ``freqs_cis``, GPT-J's ``rotate_every_two``, an einsum, float64 NumPy, transformers'
module, x-transformers' angles, torchtune's stacked cache, flash-attn's packed apply,
DeepSeek's rotation of the last features, Gemma 4's proportional frequencies, Megatron's
``sbhd`` layout, vLLM's ``cos_sin_cache``). Angles are formed in float32 or wider, and a
low-precision result is rounded once at the end.

A catalogue, one function per idiom; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn as nn

from .rope_registry import rope_correct

_LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
_PHI3_LIKE = {"short_factor": [round(1.08 ** (i / 31), 4) for i in range(32)],
              "long_factor": [round(48.0 ** (i / 31), 4) for i in range(32)],
              "original_max_position_embeddings": 4096}
_DEEPSEEK_V2_YARN = {"factor": 40.0, "mscale": 0.707, "mscale_all_dim": 0.707, "beta_fast": 32.0, "beta_slow": 1.0,
                     "original_max_position_embeddings": 4096}


# -- llama3 -------------------------------------------------------------------------------


def _meta_apply_scaling(freqs):
    """Meta's llama3 reference: one frequency at a time."""
    scale_factor, low_freq_factor, high_freq_factor, old_context_len = 8, 1, 4, 8192
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    new_freqs = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / scale_factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new_freqs.append((1 - smooth) * freq / scale_factor + smooth * freq)
    return torch.stack(new_freqs)


@rope_correct(idiom="Meta's precompute_freqs_cis with apply_scaling: torch.polar(ones, outer(t, freqs)), complex64",
              seen="meta-llama/llama-models (precompute_freqs_cis, apply_scaling)",
              api="rope-cache", cache_form="complex", cache_layout="compact", rope_type="llama3",
              rope_theta=500000.0, rope_parameters=_LLAMA31)
def meta_llama3_freqs_cis(positions, head_dim):
    freqs = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    freqs = _meta_apply_scaling(freqs)
    freqs = torch.outer(positions.float(), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


@rope_correct(idiom="torchtune's Llama3ScaledRoPE cache: scaling by torch.where, einsum, stack([cos, sin], -1)",
              seen="pytorch/torchtune (Llama3ScaledRoPE)",
              api="rope-cache", cache_form="stacked", cache_layout="compact", rope_type="llama3",
              rope_theta=500000.0, rope_parameters=_LLAMA31)
def torchtune_llama3_stacked(input_pos, head_dim):
    theta = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    wavelen = 2 * math.pi / theta
    smooth = (8192 / wavelen - 1.0) / (4.0 - 1.0)
    blended = (1 - smooth) * theta / 8.0 + smooth * theta
    theta = torch.where(wavelen < 8192 / 4.0, theta, torch.where(wavelen > 8192 / 1.0, theta / 8.0, blended))
    idx_theta = torch.einsum("i, j -> ij", input_pos.float(), theta).float()
    return torch.stack([torch.cos(idx_theta), torch.sin(idx_theta)], dim=-1)


# -- default, linear, dynamic -----------------------------------------------------------------


def _rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def _create_sinusoidal_positions(positions, dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", positions.float(), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


@rope_correct(idiom="GPT-J: [sin | cos] table, repeat_interleave and rotate_every_two on the first rotary_dim=64 "
                    "features of a 256 head; a float32 result for low-precision x",
              seen="huggingface/transformers models/gptj (rotate_every_two)",
              api="rope-apply", rope_layout="interleaved", rotary_dim=64, head_dim=256)
def gptj_rotate_every_two(x, position_ids):
    rotary_dim = 64
    sincos = _create_sinusoidal_positions(position_ids, rotary_dim)[None]
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    x_rot, x_pass = x[:, :, :, :rotary_dim], x[:, :, :, rotary_dim:]
    x_rot = (x_rot * cos) + (_rotate_every_two(x_rot) * sin)
    return torch.cat([x_rot, x_pass], dim=-1)


@rope_correct(idiom="GPT-J's create_sinusoidal_positions(num_pos, rotary_dim): one [sin | cos] table for 0..L-1",
              seen="huggingface/transformers models/gptj (create_sinusoidal_positions)",
              api="rope-cache", cache_form="sin-cos-cat", cache_layout="compact", cache_call="length",
              rotary_dim=64, head_dim=256)
def gptj_sinusoidal_positions(num_pos, head_dim):
    return _create_sinusoidal_positions(torch.arange(num_pos, dtype=torch.int64), 64)


@rope_correct(idiom="position interpolation as t / scaling_factor, torch.einsum('bi,j->bij') in float32, for "
                    "position_ids of shape (batch, seq)",
              api="rope-cache", cache_call="batched", rope_type="linear", rope_parameters={"factor": 4.0})
def linear_scaled_einsum(position_ids, head_dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = position_ids.to(torch.float32) / 4.0
    freqs = torch.einsum("bi,j->bij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class _RotaryEmbedding(nn.Module):
    """transformers' rotary module: float32 matmul with autocast off, cast to x's dtype at the end."""

    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


@functools.cache
def _qwen2_rotary(head_dim):
    return _RotaryEmbedding(head_dim, 1e6)


@rope_correct(idiom="transformers' RotaryEmbedding.forward(x, position_ids): float32 with autocast off, cos/sin cast "
                    "to x's dtype (bfloat16 output computed in float32)",
              seen="huggingface/transformers models/qwen2 (Qwen2RotaryEmbedding)",
              api="rope-cache", cache_call="x-positions", rope_theta=1e6)
def transformers_forward_in_x_dtype(x, position_ids):
    if position_ids.dim() == 1:
        position_ids = position_ids[None]
    return _qwen2_rotary(x.shape[-1])(x, position_ids)


class _DynamicRotaryEmbedding:
    """Dynamic NTK whose frequencies follow every call's length: recomputed when it changes,
    back to the original ones at or below the original length."""

    def __init__(self, dim, factor=2.0, original_max=4096, base=10000.0):
        self.dim, self.factor, self.original_max, self.base = dim, factor, original_max, base
        self.original_inv_freq = self._inv_freq(base)
        self.inv_freq, self.length_cached = self.original_inv_freq, original_max

    def _inv_freq(self, base):
        return 1.0 / (base ** (torch.arange(0, self.dim, 2, dtype=torch.int64).float() / self.dim))

    def __call__(self, positions):
        seq_len = max(int(positions.max()) + 1, self.original_max)
        if seq_len != self.length_cached:
            if seq_len == self.original_max:
                self.inv_freq = self.original_inv_freq
            else:
                base = self.base * ((self.factor * seq_len / self.original_max) - (self.factor - 1)) ** (
                    self.dim / (self.dim - 2))
                self.inv_freq = self._inv_freq(base)
            self.length_cached = seq_len
        freqs = torch.outer(positions.float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


@functools.cache
def _dynamic_rotary(head_dim):
    return _DynamicRotaryEmbedding(head_dim)


@rope_correct(idiom="a module-level dynamic NTK module that recomputes inv_freq whenever the call's length changes "
                    "(longer or shorter) and restores the original at or below L0",
              api="rope-cache", rope_type="dynamic",
              rope_parameters={"factor": 2.0, "original_max_position_embeddings": 4096})
def dynamic_ntk_module(positions, head_dim):
    return _dynamic_rotary(head_dim)(positions)


class _XTransformersRotary(nn.Module):
    """x-transformers' RotaryEmbedding(dim): angles, each repeated for its pair (interleaved)."""

    def __init__(self, dim, theta=10000):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim)))

    def forward_from_seq_len(self, seq_len):
        return self(torch.arange(seq_len))

    def forward(self, t):
        freqs = torch.einsum("i , j -> i j", t.type_as(self.inv_freq), self.inv_freq)
        return torch.stack((freqs, freqs), dim=-1).flatten(-2)


@rope_correct(idiom="x-transformers: rotary on max(dim_head // 2, 32) = 32 of 64 features, angles returned by "
                    "forward_from_seq_len, each repeated for its pair",
              seen="lucidrains/x-transformers (RotaryEmbedding)",
              api="rope-cache", cache_form="angles", cache_layout="interleaved", cache_call="length",
              head_dim=64, rotary_dim=32)
def x_transformers_angles(seq_len, head_dim):
    return _XTransformersRotary(max(head_dim // 2, 32)).forward_from_seq_len(seq_len)


@functools.cache
def _vllm_cos_sin_cache(head_size, max_position_embeddings=131072, base=1e6):
    """vLLM's cache, built once per head size at init: cat((cos, sin), -1) per position."""
    rotary_dim = int(head_size * 0.5)
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
    t = torch.arange(max_position_embeddings, dtype=torch.float)
    freqs = torch.einsum("i,j -> ij", t, inv_freq)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1)


@rope_correct(idiom="vLLM's cos_sin_cache = cat((cos, sin), -1) on rotary_dim = head_size * 0.5, built once for "
                    "max_position_embeddings, rows picked with index_select(0, positions)",
              seen="vllm-project/vllm rotary_embedding (RotaryEmbedding._compute_cos_sin_cache)",
              api="rope-cache", cache_form="cos-sin-cat", cache_layout="compact", rope_theta=1e6,
              partial_rotary_factor=0.5, max_positions=131072)
def vllm_cos_sin_cache(positions, head_size):
    return _vllm_cos_sin_cache(head_size).index_select(0, positions)


def _megatron_rotate_half(x):
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@rope_correct(idiom="Megatron-LM: freqs (s, 1, 1, rot_dim) with seq_len_interpolation_factor, applied to sbhd x on "
                    "rotary_percent 0.5, the rest concatenated back",
              seen="NVIDIA/Megatron-LM core/models/common/embeddings/rotary_pos_embedding.py",
              api="rope-apply", x_layout="sbhd", rope_type="linear", rope_parameters={"factor": 2.0},
              partial_rotary_factor=0.5)
def megatron_sbhd_linear(t, positions):
    dim = int(t.shape[-1] * 0.5)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    seq = positions.type_as(inv_freq) / 2.0  # seq_len_interpolation_factor
    freqs = torch.outer(seq, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[:, None, None, :]
    rot_dim = emb.shape[-1]
    t, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    cos_, sin_ = torch.cos(emb).to(t.dtype), torch.sin(emb).to(t.dtype)
    t = (t * cos_) + (_megatron_rotate_half(t) * sin_)
    return torch.cat((t, t_pass), dim=-1)


# -- yarn -------------------------------------------------------------------------------------


def _numpy_yarn(dim, base, factor, original_max, beta_fast, beta_slow):
    """YaRN's inverse frequencies and attention factor in float64 NumPy."""
    def correction_dim(num_rotations):
        return dim * np.log(original_max / (num_rotations * 2 * np.pi)) / (2 * np.log(base))

    low = max(np.floor(correction_dim(beta_fast)), 0)
    high = min(np.ceil(correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    inv_freq = base ** -(np.arange(0, dim, 2) / dim)
    ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0.0, 1.0)
    return inv_freq * (1 - ramp) + inv_freq / factor * ramp, 0.1 * np.log(factor) + 1.0


@rope_correct(idiom="float64 NumPy YaRN: correction range, linear ramp, attention factor 0.1 ln s + 1 in the cache; "
                    "NumPy arrays out",
              api="rope-cache", rope_type="yarn",
              rope_parameters={"factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                               "original_max_position_embeddings": 4096})
def numpy_float64_yarn(positions, head_dim):
    inv_freq, attention = _numpy_yarn(head_dim, 10000.0, 4.0, 4096, 32.0, 1.0)
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return attention * np.cos(emb), attention * np.sin(emb)


def _flash_rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@rope_correct(idiom="flash-attn's apply_rotary_emb_torch on packed varlen tokens (total_tokens, heads, dim), cos/sin "
                    "(tokens, r/2) of YaRN times its attention factor, cast to x's dtype",
              seen="Dao-AILab/flash-attention flash_attn/layers/rotary.py (apply_rotary_emb_torch)",
              api="rope-apply", x_layout="thd", rope_type="yarn",
              rope_parameters={"factor": 8.0, "original_max_position_embeddings": 2048})
def flash_attn_packed_yarn(x, position_ids):
    inv_freq, attention = _numpy_yarn(x.shape[-1], 10000.0, 8.0, 2048, 32.0, 1.0)
    freqs = torch.outer(position_ids.float(), torch.as_tensor(inv_freq, dtype=torch.float32))
    cos, sin = freqs.cos() * attention, freqs.sin() * attention
    ro_dim = cos.shape[-1] * 2
    cos = torch.cat((cos, cos), dim=-1)[:, None, :].to(x.dtype)
    sin = torch.cat((sin, sin), dim=-1)[:, None, :].to(x.dtype)
    return torch.cat([x[..., :ro_dim] * cos + _flash_rotate_half(x[..., :ro_dim]) * sin, x[..., ro_dim:]], dim=-1)


def _deepseek_freqs_cis(positions, dim, factor, original_seq_len, beta_fast=32, beta_slow=1, base=10000.0):
    """DeepSeek's reference precompute_freqs_cis with YaRN (no attention factor: it goes to softmax_scale)."""
    def find_correction_dim(num_rotations):
        return dim * math.log(original_seq_len / (num_rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    smooth = 1 - torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    freqs = freqs / factor * (1 - smooth) + freqs * smooth
    freqs = torch.outer(positions.float(), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


@rope_correct(idiom="DeepSeek MLA: view_as_complex rotation of the last qk_rope_head_dim=64 features of a 192 head "
                    "(bhsd), YaRN with mscale == mscale_all_dim so A = 1 in the cache",
              seen="deepseek-ai/DeepSeek-V3 inference/model.py (apply_rotary_emb)",
              api="rope-apply", x_layout="bhsd", rope_layout="interleaved", rotary_features="last", head_dim=192,
              rotary_dim=64, rope_type="yarn", rope_parameters=_DEEPSEEK_V2_YARN)
def deepseek_rotates_last_features(q, positions):
    q_nope, q_pe = torch.split(q, [128, 64], dim=-1)
    freqs_cis = _deepseek_freqs_cis(positions, 64, 40.0, 4096)
    x = torch.view_as_complex(q_pe.float().view(*q_pe.shape[:-1], -1, 2))
    q_pe = torch.view_as_real(x * freqs_cis).flatten(3).to(q.dtype)
    return torch.cat([q_nope, q_pe], dim=-1)


@rope_correct(idiom="DeepSeek's freqs_cis (complex64, YaRN factor 40) whose attention factor is applied to the "
                    "softmax scale instead (declared separate)",
              seen="deepseek-ai/DeepSeek-V3 inference/model.py (precompute_freqs_cis)",
              api="rope-cache", cache_form="complex", cache_layout="compact", attention_factor="separate",
              rope_type="yarn", rope_parameters={"factor": 40.0, "original_max_position_embeddings": 4096})
def deepseek_freqs_cis_separate(positions, head_dim):
    return _deepseek_freqs_cis(positions, head_dim, 40.0, 4096)


# -- longrope, proportional ---------------------------------------------------------------------


@rope_correct(idiom="Phi-3 LongRoPE: ext factors picked by max(position_ids) + 1 > original length, "
                    "scaling sqrt(1 + ln s / ln L0); compact (seq, r/2) cos and sin",
              seen="huggingface/transformers modeling_rope_utils (_compute_longrope_parameters)",
              api="rope-cache", cache_layout="compact", rope_type="longrope", rope_parameters=_PHI3_LIKE,
              max_positions=131072, head_dim=64)
def phi3_longrope_compact(position_ids, head_dim):
    original_max, max_position_embeddings = 4096, 131072
    seq_len = int(torch.max(position_ids)) + 1
    factors = _PHI3_LIKE["long_factor"] if seq_len > original_max else _PHI3_LIKE["short_factor"]
    ext_factors = torch.tensor(factors, dtype=torch.float32)
    inv_freq_shape = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    inv_freq = 1.0 / (ext_factors * 10000.0 ** inv_freq_shape)
    scale = max_position_embeddings / original_max
    attention_factor = math.sqrt(1 + math.log(scale) / math.log(original_max))
    freqs = torch.outer(position_ids.float(), inv_freq)
    return freqs.cos() * attention_factor, freqs.sin() * attention_factor


@rope_correct(idiom="Gemma 4 proportional RoPE: exponent over head_dim for the first quarter of the pairs, zero "
                    "frequencies for the rest, rotate_half over the whole head",
              seen="huggingface/transformers modeling_rope_utils (_compute_proportional_rope_parameters)",
              api="rope-apply", rope_type="proportional", rope_theta=1e6, partial_rotary_factor=0.25)
def gemma4_proportional(x, position_ids):
    head_dim = x.shape[-1]
    rope_angles = int(0.25 * head_dim // 2)
    inv_freq_rotated = 1.0 / (1e6 ** (torch.arange(0, 2 * rope_angles, 2, dtype=torch.float) / head_dim))
    inv_freq = torch.cat((inv_freq_rotated, torch.zeros(head_dim // 2 - rope_angles)))
    freqs = torch.outer(position_ids.float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, :, None, :].to(x.dtype), emb.sin()[None, :, None, :].to(x.dtype)
    return x * cos + _flash_rotate_half(x) * sin


# -- frequencies ----------------------------------------------------------------------------------


@rope_correct(idiom="GPT-NeoX: inv_freq over rotary_ndims = int(head_size * rotary_pct), rotary_pct 0.25",
              seen="huggingface/transformers models/gpt_neox (rotary_pct)",
              api="rope-freqs", partial_rotary_factor=0.25)
def gpt_neox_partial_inv_freq(head_size):
    rotary_ndims = int(head_size * 0.25)
    return 1.0 / (10000 ** (torch.arange(0, rotary_ndims, 2, dtype=torch.int64).float() / rotary_ndims))


@rope_correct(idiom="transformers' _compute_yarn_parameters returning (inv_freq, attention_factor), gpt-oss's "
                    "untruncated correction range (truncate false), theta 150000, factor 32",
              seen="huggingface/transformers modeling_rope_utils (_compute_yarn_parameters)",
              api="rope-freqs", rope_type="yarn", rope_theta=150000.0,
              rope_parameters={"factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                               "original_max_position_embeddings": 4096})
def yarn_parameters_untruncated(dim):
    base, factor, original_max, beta_fast, beta_slow = 150000.0, 32.0, 4096, 32.0, 1.0

    def find_correction_dim(num_rotations):
        return (dim * math.log(original_max / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(find_correction_dim(beta_fast), 0)
    high = min(find_correction_dim(beta_slow), dim - 1)
    if low == high:
        high += 0.001
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    linear_func = (torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)
    inv_freq_extrapolation_factor = 1 - torch.clamp(linear_func, 0, 1)
    inv_freq = (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
                + inv_freq_extrapolation * inv_freq_extrapolation_factor)
    return inv_freq, 0.1 * math.log(factor) + 1.0
