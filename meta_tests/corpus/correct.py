"""Correct implementations in other libraries' idioms, each registered with the convention it follows.

None of them reuses the project's reference implementations or oracle: each computes its
table the way the library it imitates does (a module run on zeros, a padding-aware
position lookup, a sin/cos mask, a complex exponential, a phase-shifted sine ...), so the
gate is tested on the variety of correct code it will meet. Low-precision outputs form
the angle in float32 and round once at the end.

A catalogue, one function per idiom; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .registry import correct

# -- vaswani (interleaved, sin first) -------------------------------------------------------------


class _AnnotatedPositionalEncoding(nn.Module):
    """The Annotated Transformer's module: a buffer of sin/cos added to the input, then dropout."""

    def __init__(self, d_model, dropout, max_len):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


@correct(idiom="the Annotated Transformer's PositionalEncoding module, in eval mode, applied to zeros",
         convention="vaswani", seen="harvardnlp/annotated-transformer (PositionalEncoding)")
def annotated_transformer_module(num_positions, dim):
    module = _AnnotatedPositionalEncoding(dim, dropout=0.1, max_len=num_positions).eval()
    with torch.no_grad():
        return module(torch.zeros(1, num_positions, dim))[0]


@correct(idiom="the TensorFlow tutorial's get_angles: angle_rads = pos / 10000**(2*(i//2)/d) in float64, "
               "sin and cos applied in place to the even and odd columns, returned as float32",
         convention="vaswani", odd="ceil", seen="tensorflow/docs site/en/tutorials/text/transformer.ipynb (get_angles)")
def tf_tutorial_angle_rates(num_positions, dim):
    def get_angles(pos, i, d_model):
        angle_rates = 1 / np.power(10000, (2 * (i // 2)) / np.float32(d_model))
        return pos * angle_rates

    angle_rads = get_angles(np.arange(num_positions)[:, np.newaxis], np.arange(dim)[np.newaxis, :], dim)
    angle_rads[:, 0::2] = np.sin(angle_rads[:, 0::2])
    angle_rads[:, 1::2] = np.cos(angle_rads[:, 1::2])
    return angle_rads.astype(np.float32)


@correct(idiom="keras-hub's SinePositionEncoding: timescales min_freq ** (2*(i//2)/d), then sin and cos "
               "selected by 0/1 column masks; numpy float32 throughout",
         convention="vaswani", odd="ceil", seen="keras-team/keras-hub SinePositionEncoding")
def keras_hub_sine_masks(num_positions, dim):
    position = np.arange(num_positions, dtype=np.float32)
    min_freq = np.float32(1 / 10000)
    timescales = np.power(min_freq, (2 * (np.arange(dim) // 2)).astype(np.float32) / np.float32(dim))
    angles = position[:, None] * timescales[None, :]
    cos_mask = (np.arange(dim) % 2).astype(np.float32)
    sin_mask = 1 - cos_mask
    return np.sin(angles) * sin_mask + np.cos(angles) * cos_mask


@correct(idiom="float16 output: torch.outer in float32, sin/cos interleaved by stack(dim=-1).flatten, "
               "rounded to float16 once at the end",
         convention="vaswani")
def float16_output_from_float32_angle(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    angle = torch.outer(torch.arange(num_positions, dtype=torch.float32), inv_freq)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1).to(torch.float16)


@correct(idiom="one sine per element: sin(angle + phase) with phase pi/2 on the odd columns (cos t = sin(t + pi/2))",
         convention="vaswani", odd="ceil")
def phase_shifted_sine(num_positions, dim):
    column = torch.arange(dim)
    inv_freq = torch.exp((2 * (column // 2)).float() * (-math.log(10000.0) / dim))
    phase = (column % 2).float() * (math.pi / 2)
    angle = torch.arange(num_positions, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return torch.sin(angle + phase)


_TUTORIAL_MAX_LEN = 5000


@functools.lru_cache(maxsize=8)
def _tutorial_buffer(dim):
    """The module's buffer, built once per width as the module's __init__ does."""
    position = torch.arange(_TUTORIAL_MAX_LEN).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = torch.zeros(_TUTORIAL_MAX_LEN, 1, dim)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    return pe


@correct(idiom="the PyTorch tutorial's (max_len, 1, d_model) buffer for max_len 5000, built once per width, "
               "squeezed and sliced; declared with max_positions 5000",
         convention="vaswani", max_positions=_TUTORIAL_MAX_LEN,
         seen="pytorch/tutorials beginner_source/transformer_tutorial.py (PositionalEncoding)")
def tutorial_buffer_max_len(num_positions, dim):
    if num_positions > _TUTORIAL_MAX_LEN:
        raise ValueError(f"num_positions {num_positions} exceeds max_len {_TUTORIAL_MAX_LEN}")
    return _tutorial_buffer(dim)[:num_positions, 0].clone()


@correct(idiom="a complex exponential: torch.polar(1, angle) viewed as real gives (cos, sin) per pair, i.e. the "
               "interleaved cos-first member",
         convention="vaswani", first="cos")
def complex_exponential_cos_first(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    inv_freq = 1.0 / torch.pow(10000, torch.arange(0, dim, 2).to(torch.float32).div(dim))
    angle = torch.outer(torch.arange(num_positions, dtype=torch.float32), inv_freq)
    rotations = torch.polar(torch.ones_like(angle), angle)
    return torch.view_as_real(rotations).reshape(num_positions, dim)


# -- concat (sin block, then cos block, shift 0) ------------------------------------------------------


@correct(idiom="Marian's _init_weight: float64 numpy pos / 10000**(2*(j//2)/d), sin of the even columns into "
               "the first ceil(d/2) slots, cos of the odd ones after; returned as an nn.Parameter with grad",
         convention="concat", odd="ceil", seen="huggingface/transformers#8226 (Marian/BART sentinel for odd dim)")
def marian_parameter(num_positions, dim):
    out = nn.Parameter(torch.empty(num_positions, dim))
    j = np.arange(dim)
    position_enc = np.arange(num_positions)[:, None] / np.power(10000, 2 * (j // 2) / dim)[None, :]
    sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
    with torch.no_grad():
        out[:, 0:sentinel] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
        out[:, sentinel:] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    return out


@correct(idiom="bfloat16 output: [sin | cos] with the angle in float32, rounded to bfloat16 once at the end",
         convention="concat")
def bfloat16_output_from_float32_angle(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(torch.arange(half, dtype=torch.float32) * (-math.log(10000.0) / half))
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs[None, :]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1).to(torch.bfloat16)


# -- tensor2tensor (concat, shift 1) --------------------------------------------------------------------


@correct(idiom="tensor2tensor's get_timing_signal_1d ported to numpy float32: min/max timescales, "
               "log increment over max(num_timescales - 1, 1), zero column padded for odd channels",
         convention="tensor2tensor", odd="zero-pad",
         seen="tensorflow/tensor2tensor tensor2tensor/layers/common_attention.py get_timing_signal_1d")
def tensor2tensor_timing_signal(num_positions, dim):
    min_timescale, max_timescale = 1.0, 1.0e4
    position = np.arange(num_positions, dtype=np.float32)
    num_timescales = dim // 2
    log_timescale_increment = math.log(float(max_timescale) / float(min_timescale)) / max(num_timescales - 1, 1)
    inv_timescales = min_timescale * np.exp(np.arange(num_timescales, dtype=np.float32) * -log_timescale_increment)
    scaled_time = position[:, None] * inv_timescales[None, :].astype(np.float32)
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return np.pad(signal, [[0, 0], [0, dim % 2]])


@correct(idiom="Whisper's sinusoids, with a guard for channels < 4 where Whisper divides by zero; "
               "odd channels fail its assert",
         convention="tensor2tensor", seen="openai/whisper whisper/model.py sinusoids")
def whisper_sinusoids_guarded(num_positions, dim):
    assert dim % 2 == 0
    if dim < 4:
        raise ValueError(f"channels must be at least 4 (log increment divides by channels // 2 - 1), got {dim}")
    log_timescale_increment = np.log(10000) / (dim // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(dim // 2))
    scaled_time = torch.arange(num_positions)[:, np.newaxis] * inv_timescales[np.newaxis, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


@correct(idiom="lucidrains' SinusoidalPosEmb on a batch of timesteps (d = 2 raises ZeroDivisionError); "
               "odd widths not declared",
         convention="tensor2tensor", api="timesteps", odd="skip",
         seen="lucidrains/denoising-diffusion-pytorch SinusoidalPosEmb")
def lucidrains_sinusoidal_pos_emb(timesteps, dim):
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim) * -emb)
    emb = timesteps[:, None] * emb[None, :]
    return torch.cat((emb.sin(), emb.cos()), dim=-1)


@correct(idiom="Ho et al.'s DDPM get_timestep_embedding ported to NumPy: timesteps read with .numpy() (bfloat16, "
               "which the grid never asks for, has no NumPy dtype: TypeError), exp(-log(10000) / (half_dim - 1) * i) "
               "in float32, [sin | cos], an odd width zero-padded (d = 2: ZeroDivisionError)",
         convention="tensor2tensor", api="timesteps", odd="zero-pad",
         seen="hojonathanho/diffusion diffusion_tf/nn.py get_timestep_embedding (TensorFlow), read through NumPy")
def ddpm_numpy_timestep_embedding(timesteps, dim):
    assert timesteps.ndim == 1
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim, dtype=np.float32) * -emb)
    emb = timesteps.numpy().astype(np.float32)[:, None] * emb[None, :]
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1)
    if dim % 2 == 1:
        emb = np.pad(emb, [[0, 0], [0, 1]])
    return emb


@correct(idiom="F5-TTS's SinusPositionEmbedding: t in [0, 1] times scale=1000 inside the argument",
         convention="tensor2tensor", api="timesteps", t_max=1.0, scale=1000.0,
         seen="the F5-TTS SinusPositionEmbedding quoted in huggingface/diffusers#11958")
def f5_tts_scaled_time(timesteps, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim).float() * -emb)
    emb = 1000 * timesteps.float().unsqueeze(1) * emb.unsqueeze(0)
    return torch.cat((emb.sin(), emb.cos()), dim=-1)


# -- fairseq (tensor2tensor rows from padding_idx + 1) ------------------------------------------------------


def _fairseq_get_embedding(num_embeddings, embedding_dim, padding_idx):
    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
    emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
    if embedding_dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
    if padding_idx is not None:
        emb[padding_idx, :] = 0
    return emb


@correct(idiom="fairseq's SinusoidalPositionalEmbedding.get_embedding with padding_idx 1: the weight rows "
               "after the zeroed padding row",
         convention="fairseq", odd="zero-pad",
         seen="facebookresearch/fairseq fairseq/modules/sinusoidal_positional_embedding.py")
def fairseq_weights_after_padding(num_positions, dim):
    padding_idx = 1
    weights = _fairseq_get_embedding(num_positions + padding_idx + 1, dim, padding_idx)
    return weights[padding_idx + 1:]


@correct(idiom="fairseq's make_positions on an unpadded token batch with padding_idx 0 "
               "(cumsum(mask) * mask + padding_idx), looked up with index_select: positions 1..n",
         convention="fairseq", odd="zero-pad", offset=1,
         seen="facebookresearch/fairseq fairseq/utils.py make_positions; fairseq#1177")
def fairseq_make_positions_lookup(num_positions, dim):
    padding_idx = 0
    tokens = torch.full((1, num_positions), 5, dtype=torch.long)
    mask = tokens.ne(padding_idx).int()
    positions = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx
    weights = _fairseq_get_embedding(padding_idx + 1 + num_positions, dim, padding_idx)
    return weights.index_select(0, positions.view(-1)).view(num_positions, -1)


# -- guided-diffusion (concat, cos first, shift 0) -----------------------------------------------------------


@correct(idiom="guided-diffusion's timestep_embedding: [cos | sin], zero column for odd dim",
         convention="guided-diffusion", api="timesteps", odd="zero-pad",
         seen="openai/guided-diffusion guided_diffusion/nn.py timestep_embedding")
def guided_diffusion_timestep_embedding(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(start=0, end=half, dtype=torch.float32) / half)
    args = timesteps[:, None].float() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


@correct(idiom="diffusers' get_timestep_embedding as the Stable Diffusion UNet calls it (flip_sin_to_cos=True, "
               "downscale_freq_shift=0): [sin | cos] with the halves swapped, padded with F.pad for odd dim",
         convention="guided-diffusion", api="timesteps", odd="zero-pad",
         seen="huggingface/diffusers src/diffusers/models/embeddings.py get_timestep_embedding")
def diffusers_flip_sin_to_cos(timesteps, dim):
    half_dim = dim // 2
    exponent = -math.log(10000) * torch.arange(start=0, end=half_dim, dtype=torch.float32)
    exponent = exponent / (half_dim - 0)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    if dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


@correct(idiom="a flow-matching time embedding for t in [0, 1]: scale 1000 inside the argument, [cos | sin], and "
               "a ValueError for timesteps outside the [0, 1] it declares",
         convention="guided-diffusion", api="timesteps", odd="zero-pad", t_max=1.0, scale=1000.0,
         seen="t in [0, 1] as in willisma/SiT#24 and sihyun-yu/REPA#40")
def unit_time_embedding(timesteps, dim):
    t = timesteps.float()
    if t.numel() and (t.min() < 0 or t.max() > 1):
        raise ValueError(f"timesteps must lie in [0, 1], got values in [{t.min().item():g}, {t.max().item():g}]")
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = 1000 * t[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb


@correct(idiom="numpy float32 einsum outer product of positions and frequencies, [cos | sin], zero-padded",
         convention="guided-diffusion", odd="zero-pad")
def numpy_einsum_cos_first(num_positions, dim):
    half = dim // 2
    freqs = np.exp(-math.log(10000) * np.arange(half, dtype=np.float32) / np.float32(half)).astype(np.float32)
    args = np.einsum("i,j->ij", np.arange(num_positions, dtype=np.float32), freqs)
    table = np.concatenate([np.cos(args), np.sin(args)], axis=1)
    return np.pad(table, ((0, 0), (0, dim % 2)))


# -- concat, cos first, shift 1 (MusicGen / audiocraft) ---------------------------------------------------------


@correct(idiom="audiocraft's create_sin_embedding on (B, T, 1) positions: phase = t / max_period ** "
               "(k / (half - 1)), [cos | sin]; refuses dim < 4 where audiocraft divides by zero",
         convention="tensor2tensor", api="timesteps", first="cos",
         seen="facebookresearch/audiocraft audiocraft/modules/transformer.py create_sin_embedding")
def audiocraft_sin_embedding(timesteps, dim):
    assert dim % 2 == 0
    if dim < 4:
        raise ValueError(f"dim must be at least 4, got {dim}")
    positions = timesteps.float().view(1, -1, 1)
    half_dim = dim // 2
    adim = torch.arange(half_dim, device=positions.device).view(1, 1, -1)
    max_period_tensor = torch.full([], 10000, device=positions.device, dtype=torch.float32)
    phase = positions / (max_period_tensor ** (adim / (half_dim - 1)))
    return torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)[0]


# -- tensor2tensor again, as a float64 loop over pairs ----------------------------------------------------------


@correct(idiom="explicit float64 loop over pairs collecting sine and cosine columns, stacked, cast to float32 and "
               "zero-padded with F.pad for odd widths",
         convention="tensor2tensor", odd="zero-pad")
def float64_pair_loop(num_positions, dim):
    half = dim // 2
    position = np.arange(num_positions, dtype=np.float64)
    sines, cosines = [], []
    for k in range(half):
        omega = 10000.0 ** (-k / max(half - 1, 1))
        sines.append(np.sin(position * omega))
        cosines.append(np.cos(position * omega))
    table = np.stack(sines + cosines, axis=1) if half else np.zeros((num_positions, 0))
    return F.pad(torch.from_numpy(table).float(), (0, dim % 2))
