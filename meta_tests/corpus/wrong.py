"""Wrong implementations: each one a realistic slip, written the way the slip appears in real code.

Every function is registered with the convention it claims; under that convention it is
wrong at some size of the gate's grid. Where a slip turns the table into another member
of the family (say, the concat layout where interleaved was declared), the description
says so: the entry is still wrong under what it declares.

A catalogue, one function per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .registry import wrong

# -- swapped or duplicated functions ------------------------------------------------


@wrong(bug="cos in the even columns and sin in the odd ones: the interleaved cos-first member, not vaswani",
       classes=("swapped-functions",))
def swapped_sin_cos(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.cos(position * div_term)
    pe[:, 1::2] = torch.sin(position * div_term)
    return pe


@wrong(bug="copy-paste: the odd columns take sin again instead of cos", classes=("swapped-functions",))
def sin_in_both_columns(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.sin(position * div_term)
    return pe


@wrong(bug="builds [cos | sin] and then applies the flip_sin_to_cos half swap, ending with [sin | cos]: "
           "the concat member where guided-diffusion's cos-first was declared",
       classes=("swapped-functions",), convention="guided-diffusion", api="timesteps", odd="zero-pad",
       seen="flashinfer-ai/flashinfer#3819 (Wan example: timestep sin/cos halves swapped)")
def flip_applied_to_cos_first(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = timesteps[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    emb = torch.cat([emb[:, half:], emb[:, :half]], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


@wrong(bug="flip_sin_to_cos done with torch.flip: reverses the column order instead of swapping the halves",
       classes=("swapped-functions", "layout"), convention="guided-diffusion", api="timesteps", odd="zero-pad")
def flip_reverses_columns(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = timesteps[:, None].float() * freqs[None]
    emb = torch.cat([torch.sin(args), torch.cos(args)], dim=-1).flip(-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


# -- wrong exponent -------------------------------------------------------------------


@wrong(bug="exponent k/d with k the pair index (the factor 2 of 2i/d dropped): frequencies fall only to 1/100, "
           "i.e. the base-100 member, declared base 10000",
       classes=("exponent",))
def exponent_pair_over_d(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    inv_freq = 1.0 / 10000 ** (torch.arange(dim // 2, dtype=torch.float32) / dim)
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq)
    return pe


@wrong(bug="10000 ** (2*i/d) with i the column index, for every column: sin and cos of a pair get different "
           "frequencies and the exponent runs to 2",
       classes=("exponent",), odd="ceil",
       seen="jadore801120/attention-is-all-you-need-pytorch#32; Kyubyong/transformer#38; shenweichen/DeepCTR#379")
def exponent_column_index(num_positions, dim):
    # The quoted code builds this with a list comprehension over (pos, i); the same values, vectorised.
    position_enc = np.arange(num_positions)[:, None] / np.power(10000, 2.0 * np.arange(dim) / dim)[None, :]
    position_enc[:, 0::2] = np.sin(position_enc[:, 0::2])
    position_enc[:, 1::2] = np.cos(position_enc[:, 1::2])
    return position_enc


@wrong(bug="loop over even columns i with 2*i/d for the sine and 2*(i+1)/d for the cosine: i is already 2k, "
           "so the exponents are 4k/d and (4k+2)/d",
       classes=("exponent",),
       seen="SamLynnEvans/Transformer#25 and #7; YutaroOgawa/pytorch_advanced#79")
def exponent_doubled_in_loop(num_positions, dim):
    position = np.arange(num_positions, dtype=np.float64)
    pe = np.zeros((num_positions, dim), order="F")  # column-major: the loop writes whole columns
    for i in range(0, dim, 2):
        pe[:, i] = np.sin(position / (10000 ** ((2 * i) / dim)))
        pe[:, i + 1] = np.cos(position / (10000 ** ((2 * (i + 1)) / dim)))
    return pe


@wrong(bug="the cosine columns take exponents from arange(1, d, 2)/d, i.e. (2i+1)/d, instead of the sine's 2i/d",
       classes=("exponent",), odd="ceil", seen="maxjcohen/transformer#62")
def cos_exponent_2i_plus_1(num_positions, dim):
    pos = torch.arange(num_positions).unsqueeze(1)
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(pos / torch.pow(10000, torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    pe[:, 1::2] = torch.cos(pos / torch.pow(10000, torch.arange(1, dim, 2, dtype=torch.float32) / dim))
    return pe


@wrong(bug="div_term divides by the context length instead of the model width",
       classes=("exponent",), seen="warner-benjamin/commented-transformers#1")
def exponent_over_length(num_positions, dim):
    context_size = max(num_positions, 1)
    position = torch.arange(num_positions).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000) / context_size))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="divides by half_dim where tensor2tensor divides by half_dim - 1: the lowest frequency is not 1/base "
           "(this is the concat member, declared tensor2tensor)",
       classes=("exponent",), convention="tensor2tensor", api="timesteps", odd="zero-pad",
       seen="the change proposed in hojonathanho/diffusion#15 and lucidrains/denoising-diffusion-pytorch#126")
def t2t_without_shift(timesteps, dim):
    half_dim = dim // 2
    emb = math.log(10000) / half_dim
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = timesteps.float()[:, None] * emb[None, :]
    emb = torch.cat([emb.sin(), emb.cos()], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


@wrong(bug="downscale_freq_shift=1 where the model was trained with 0: divides by half_dim - 1 "
           "(the cos-first shift-1 member, declared guided-diffusion)",
       classes=("exponent",), convention="guided-diffusion", api="timesteps", odd="zero-pad",
       seen="kohya-ss/sd-scripts#1187 (SDXL timestep embedding); huggingface/diffusers#12791 (PRX)")
def shift_one_where_zero(timesteps, dim):
    half_dim = dim // 2
    exponent = -math.log(10000) * torch.arange(half_dim, dtype=torch.float32) / (half_dim - 1)
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.cos(emb), torch.sin(emb)], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


# -- wrong base or logarithm -------------------------------------------------------------


@wrong(bug="base 1000 instead of 10000 (the base-1000 member, declared base 10000)", classes=("base",),
       seen="maxjcohen/transformer#62")
def base_1000(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(1000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="math.log10(10000) = 4 where the natural log 9.21 belongs: the effective base is e**4, about 55",
       classes=("base",),
       seen="suggested in pytorch/tutorials#1778 (a comment proposing -4.0 for -math.log(10000.0))")
def log10_for_ln(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log10(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="math.log2(10000) where the natural log belongs: the effective base is about 590000",
       classes=("base",), convention="concat")
def log2_for_ln(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log2(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
    return torch.cat([args.sin(), args.cos()], dim=-1)


@wrong(bug="ln(10000) hard-coded as 9.21 (true 9.2103404), i.e. base 9996.6: the angle is off by up to 4e-5 "
           "relative, far more than float32 rounding explains",
       classes=("base", "near-tolerance"))
def ln_base_as_9_21(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-9.21 / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="ln(10000) hard-coded as 9.2103 (true 9.21034037), i.e. base 9999.6: the relative angle error, 4.4e-6 "
           "at the lowest frequency, is a few times what float32 rounding explains",
       classes=("base", "near-tolerance"), convention="tensor2tensor", odd="zero-pad")
def ln_base_as_9_2103(num_positions, dim):
    half = dim // 2
    increment = 9.2103 / max(half - 1, 1)
    inv_timescales = torch.exp(torch.arange(half, dtype=torch.float32) * -increment)
    scaled_time = torch.arange(num_positions, dtype=torch.float32)[:, None] * inv_timescales[None, :]
    return F.pad(torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1), (0, dim % 2))


@wrong(bug="base 10000.5 (a max_period read from a config as 10000.5; the base-10000.5 member, declared 10000): "
           "relative frequency error up to 5e-5, largest in the middle of the spectrum",
       classes=("base", "near-tolerance"), convention="concat")
def base_10000_5(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(10000.5) * torch.arange(half, dtype=torch.float32) / half)
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
    return torch.cat([args.sin(), args.cos()], dim=-1)


# -- sign errors -----------------------------------------------------------------------


@wrong(bug="the minus sign of the exponent dropped: frequencies grow from 1 to 10000 instead of falling",
       classes=("sign",))
def positive_exponent(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="minus sign on the angle (args = -t * freqs): the sine half is negated, the cosine half unchanged "
           "(the scale -1 member, declared scale 1)",
       classes=("sign",), convention="guided-diffusion", api="timesteps", odd="zero-pad")
def negated_angle(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = -timesteps[:, None].float() / freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


# -- integer division, precedence ---------------------------------------------------------


@wrong(bug="integer division of the exponent (an int tensor // d, as old torch and Python 2 did for /): "
           "every exponent is 0 and every frequency 1",
       classes=("integer-division",),
       seen="Kyubyong/transformer#81 (\"the result of dividing the integer is 0\")")
def integer_exponent_division(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    exponent = torch.div(torch.arange(0, dim, 2), dim, rounding_mode="floor")
    div_term = torch.pow(10000.0, -exponent.float())
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="floor division of position by timescale (// typed for /): the angle is rounded down to an integer",
       classes=("integer-division",), convention="concat")
def floor_divided_angle(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    timescales = 10000.0 ** (np.arange(half) / half)
    angle = np.arange(num_positions)[:, None] // timescales[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(np.float32)


@wrong(bug="precedence: pos / 10000 ** 2 * i / d divides by 10000**2 and multiplies by i/d",
       classes=("precedence",))
def precedence_power(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    angle = position / 10000 ** 2 * torch.arange(0, dim, 2, dtype=torch.float32) / dim
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


@wrong(bug="missing parentheses: math.log(10000) / half_dim - 1 instead of / (half_dim - 1)",
       classes=("precedence",), convention="tensor2tensor", api="timesteps", odd="zero-pad")
def precedence_half_dim_minus_one(timesteps, dim):
    half_dim = dim // 2
    emb = math.log(10000) / half_dim - 1
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = timesteps.float()[:, None] * emb[None, :]
    emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


# -- off-by-one, reversed, clamped positions ---------------------------------------------------


@wrong(bug="positions 1..n instead of 0..n-1 (the offset-1 member, declared vaswani)",
       classes=("off-by-one",),
       seen="jadore801120/attention-is-all-you-need-pytorch#99 (table built for positions 1..max_seq_len)")
def positions_from_one(num_positions, dim):
    position = torch.arange(1, num_positions + 1, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="fairseq positions start at padding_idx instead of padding_idx + 1 (offset 1 where 2 is declared)",
       classes=("off-by-one",), convention="fairseq", odd="zero-pad")
def fairseq_starts_at_padding_idx(num_positions, dim):
    padding_idx = 1
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
    positions = torch.arange(padding_idx, padding_idx + num_positions, dtype=torch.float)
    emb = positions.unsqueeze(1) * emb.unsqueeze(0)
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros(num_positions, 1)], dim=1)
    return emb


@wrong(bug="fairseq table indexed from position 0, forgetting padding_idx + 1 (tensor2tensor's table, "
           "declared fairseq)",
       classes=("off-by-one",), convention="fairseq", odd="zero-pad")
def fairseq_without_offset(num_positions, dim):
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
    emb = torch.arange(num_positions, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros(num_positions, 1)], dim=1)
    return emb


@wrong(bug="positions from torch.linspace(0, n, n): spaced n/(n-1) apart instead of 1",
       classes=("off-by-one",))
def linspace_positions(num_positions, dim):
    position = torch.linspace(0, num_positions, num_positions)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="descending positions n-1 .. 0 (a relative-position table's arange) where rows stand for 0 .. n-1",
       classes=("reversed-clamped",), convention="concat")
def reversed_positions(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    position = torch.arange(num_positions - 1, -1, -1, dtype=torch.float32)
    args = position[:, None] * freqs
    return torch.cat([args.sin(), args.cos()], dim=-1)


@wrong(bug="positions clamped to a 512-row buffer (pe[pos.clamp(max=511)]): every row past 511 repeats row 511",
       classes=("reversed-clamped", "long-lengths"))
def positions_clamped_512(num_positions, dim):
    position = torch.arange(num_positions).clamp(max=511).float()[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="positions taken modulo a 2048-row ring buffer: position 2048 gets row 0",
       classes=("reversed-clamped", "long-lengths"), convention="tensor2tensor", odd="zero-pad")
def positions_wrap_2048(num_positions, dim):
    half = dim // 2
    increment = math.log(10000.0) / max(half - 1, 1)
    inv_timescales = torch.exp(torch.arange(half, dtype=torch.float32) * -increment)
    position = (torch.arange(num_positions) % 2048).float()
    scaled_time = position[:, None] * inv_timescales[None, :]
    signal = torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)
    return F.pad(signal, (0, dim % 2))


@wrong(bug="slices a 2048-row buffer with pe[:n]: silently returns 2048 rows when more are asked for",
       classes=("reversed-clamped", "long-lengths"))
def buffer_truncates_silently(num_positions, dim):
    max_len = 2048
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(max_len, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe[:num_positions]


# -- transposed or mis-stacked tables ------------------------------------------------------------


@wrong(bug="stacks sin and cos on dim=1 before the reshape (dim=-1 interleaves): the concat member, "
           "declared vaswani",
       classes=("layout",),
       seen="layout confusion discussed in huggingface/diffusers#3981 and facebookresearch/fairseq#4648")
def stack_on_wrong_dim(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    angle = position * div_term
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=1).reshape(num_positions, dim)


@wrong(bug="builds the table channels-first (d, n) and reshapes to (n, d) instead of transposing",
       classes=("layout",))
def reshape_instead_of_transpose(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[None, :]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))[:, None]
    pe = torch.zeros(dim, num_positions)
    pe[0::2] = torch.sin(div_term * position)
    pe[1::2] = torch.cos(div_term * position)
    return pe.reshape(num_positions, dim)


@wrong(bug="converts [sin | cos] to interleaved with view(n, h, 2).transpose(1, 2) instead of "
           "view(n, 2, h).transpose(1, 2): columns scrambled",
       classes=("layout",))
def interleave_with_wrong_view(num_positions, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
    emb = torch.cat([args.sin(), args.cos()], dim=-1)
    return emb.view(num_positions, half, 2).transpose(1, 2).reshape(num_positions, dim)


# -- broadcast slips -------------------------------------------------------------------------------


@wrong(bug="returns the PyTorch tutorial's (max_len, 1, d_model) buffer shape: (n, 1, d) instead of (n, d)",
       classes=("broadcast",),
       seen="AkiRusProd/numpy-transformer#1; datawhalechina/hello-agents#61 (pe of shape (max_len, 1, d_model))")
def extra_batch_axis(num_positions, dim):
    position = torch.arange(num_positions).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, 1, dim)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="a (max_len, 1, d) table indexed along the batch axis of batch-first input: every row gets "
           "position 0's encoding",
       classes=("broadcast",), seen="AkiRusProd/numpy-transformer#1; tanjimin/C.Origami#42")
def rows_from_batch_axis(num_positions, dim):
    position = torch.arange(num_positions).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, 1, dim)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    x = torch.zeros(1, num_positions, dim)  # batch-first input of batch size 1
    return (x + pe[: x.size(0)])[0]


@wrong(bug="embeds timesteps[0] expanded over the batch (t.expand(batch) of the first element): every row "
           "is the first timestep's embedding",
       classes=("broadcast",), convention="tensor2tensor", api="timesteps", odd="zero-pad")
def first_timestep_for_batch(timesteps, dim):
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    t = timesteps[:1].float().expand(timesteps.shape[0])
    emb = t[:, None] * emb[None, :]
    emb = torch.cat([emb.sin(), emb.cos()], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


# -- low precision ----------------------------------------------------------------------------------


@wrong(bug="positions cast to float16 before the product (seq.type_as(inv_freq) with a half buffer): "
           "integers above 2048 round to even",
       classes=("float16-positions", "long-lengths"),
       seen="NVIDIA/Megatron-LM#535; openvinotoolkit/openvino#33214 and #25883")
def float16_positions(num_positions, dim):
    position = torch.arange(num_positions).to(torch.float16).float()[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="positions cast to bfloat16 (the model dtype) before the angle: integers above 256 round",
       classes=("bfloat16-positions",), convention="concat",
       seen="wfondrie/depthcharge#82; Nerogar/OneTrainer#1177")
def bfloat16_positions(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    position = torch.arange(num_positions, dtype=torch.float32).to(torch.bfloat16)
    args = position.float()[:, None] * freqs
    return torch.cat([args.sin(), args.cos()], dim=-1)


@wrong(bug="timesteps cast to bfloat16 before the embedding (timestep.to(model dtype)): 750 becomes 752",
       classes=("bfloat16-positions",), convention="tensor2tensor", api="timesteps", odd="zero-pad",
       seen="huggingface/diffusers#9405; modelscope/DiffSynth-Studio#562 and #1025; utensils/mold#786")
def bfloat16_timesteps(timesteps, dim):
    timesteps = timesteps.to(torch.bfloat16)
    half_dim = dim // 2
    exponent = -math.log(10000) * torch.arange(half_dim, dtype=torch.float32) / (half_dim - 1)
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1, 0, 0))
    return emb


@wrong(bug="the whole table computed in float16 (positions, frequencies, angle, sin/cos): the angle misplaces "
           "whole fractions of a period beyond a few hundred positions",
       classes=("low-precision",),
       seen="vllm-project/vllm#54620 (FunASR encoding in fp16); EleutherAI/gpt-neox#1003")
def float16_angle(num_positions, dim):
    position = torch.arange(num_positions).to(torch.float16)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float16) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim, dtype=torch.float16)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="inverse frequencies stored in bfloat16 (a buffer rounded by model.to(bfloat16)), angle then formed "
           "in float32: a 2**-9 relative frequency error grows with the position",
       classes=("low-precision",), convention="tensor2tensor", odd="zero-pad",
       seen="huggingface/transformers#29496; Modalities/modalities#462; NVIDIA-NeMo/Automodel#2549")
def bfloat16_frequencies(num_positions, dim):
    half = dim // 2
    increment = math.log(10000.0) / max(half - 1, 1)
    inv_timescales = torch.exp(torch.arange(half, dtype=torch.float32) * -increment).to(torch.bfloat16)
    scaled_time = torch.arange(num_positions, dtype=torch.float32)[:, None] * inv_timescales.float()[None, :]
    signal = torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)
    return F.pad(signal, (0, dim % 2))


@wrong(bug="timestep embedding computed in float16 (arange, frequencies and product in half precision)",
       classes=("low-precision",), convention="guided-diffusion", api="timesteps", odd="zero-pad",
       seen="apache/tvm#15811; facebookincubator/AITemplate#1009 (arange in float16)")
def float16_timestep_angle(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float16) / half)
    args = timesteps[:, None].to(torch.float16) * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb


_EXTENDED_CACHE_ROWS = 1024


@wrong(bug="a float32 table cached for 1024 positions; longer requests rebuild it from bfloat16 positions "
           "(the cache-extension path runs in the model dtype): correct up to 1024, wrong beyond",
       classes=("bfloat16-positions", "long-lengths"),
       seen="huggingface/transformers#29496 (sin/cos cache regenerated in bf16 past the cached length)")
def bfloat16_beyond_cache(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)
    if num_positions > _EXTENDED_CACHE_ROWS:
        position = position.to(torch.bfloat16).float()
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    angle = position[:, None] * div_term
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


@wrong(bug="channel index arange cast to bfloat16 (the model dtype): exact only up to 256, so wide tables get "
           "wrong exponents",
       classes=("low-precision", "wide-tables"), convention="concat")
def bfloat16_channel_index(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    index = torch.arange(half).to(torch.bfloat16).float()
    freqs = torch.exp(-math.log(10000.0) * index / half)
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
    return torch.cat([args.sin(), args.cos()], dim=-1)


# -- a channel index that wraps -----------------------------------------------------------------------


@wrong(bug="pair index held in uint8 (a compact lookup index): wraps at 256 pairs, so every table wider than "
           "512 repeats its high frequencies",
       classes=("channel-wrap", "wide-tables"), odd="ceil")
def channel_index_uint8(num_positions, dim):
    pair = (torch.arange(dim) // 2).to(torch.uint8).float()
    inv_freq = torch.exp(pair * 2 * (-math.log(10000.0) / dim))
    angle = torch.arange(num_positions, dtype=torch.float32)[:, None] * inv_freq
    is_cos = torch.arange(dim) % 2 == 1
    return torch.where(is_cos, torch.cos(angle), torch.sin(angle))


# -- odd widths -----------------------------------------------------------------------------------------


@wrong(bug="odd width: returns 2*(d//2) = d-1 columns (no pad), though zero-padding was declared",
       classes=("odd-width",), convention="tensor2tensor", api="timesteps", odd="zero-pad",
       seen="the SinusoidalPositionEmbeddings of huggingface/blog annotated-diffusion (quoted in "
            "huggingface/blog#2183) and lucidrains/denoising-diffusion-pytorch return d-1 columns at odd d")
def odd_drops_column(timesteps, dim):
    half_dim = dim // 2
    embeddings = math.log(10000) / (half_dim - 1)
    embeddings = torch.exp(torch.arange(half_dim) * -embeddings)
    embeddings = timesteps[:, None] * embeddings[None, :]
    return torch.cat((embeddings.sin(), embeddings.cos()), dim=-1)


@wrong(bug="odd width: ceil(d/2) frequencies for both sin and cos, so d+1 columns",
       classes=("odd-width",), odd="ceil",
       seen="ggml-org/llama.cpp#15932 (ggml's timestep embedding returns d+1 columns for odd d)")
def odd_d_plus_one_columns(num_positions, dim):
    pairs = (dim + 1) // 2
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, 2 * pairs, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, 2 * pairs)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@wrong(bug="odd width: F.pad(emb, (0, 0, 0, 1)) pads the sequence axis (one extra row) instead of one column",
       classes=("odd-width",), convention="guided-diffusion", api="timesteps", odd="zero-pad")
def odd_pads_sequence_axis(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = timesteps[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 0, 0, 1))
    return emb


@wrong(bug="odd width: the zero column padded in front (F.pad(emb, (1, 0))) instead of at the end",
       classes=("odd-width",), convention="tensor2tensor", odd="zero-pad")
def odd_pads_first_column(num_positions, dim):
    half = dim // 2
    increment = math.log(10000.0) / max(half - 1, 1)
    inv_timescales = torch.exp(torch.arange(half, dtype=torch.float32) * -increment)
    scaled_time = torch.arange(num_positions, dtype=torch.float32)[:, None] * inv_timescales[None, :]
    signal = torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)
    return F.pad(signal, (dim % 2, 0))


@wrong(bug="odd width under ceil: the exponent uses the even part 2*(d//2) = d-1 instead of the true width",
       classes=("odd-width", "small-widths"), odd="ceil")
def odd_ceil_with_even_width(num_positions, dim):
    even_width = 2 * (dim // 2)
    position = np.arange(num_positions, dtype=np.float64)[:, None]
    timescales = np.power(1 / 10000, 2 * (np.arange(dim) // 2) / even_width)
    angles = position * timescales[None, :]
    cos_mask = np.arange(dim) % 2
    return (np.sin(angles) * (1 - cos_mask) + np.cos(angles) * cos_mask).astype(np.float32)


@wrong(bug="diffusers' get_timestep_embedding with its defaults (downscale_freq_shift=1): at d = 2 the exponent "
           "is 0/0 and the table silently NaN",
       classes=("degenerate",), convention="tensor2tensor", api="timesteps", odd="zero-pad",
       seen="huggingface/diffusers src/diffusers/models/embeddings.py get_timestep_embedding "
            "(exponent / (half_dim - downscale_freq_shift))")
def diffusers_nan_at_d2(timesteps, dim):
    half_dim = dim // 2
    exponent = -math.log(10000) * torch.arange(start=0, end=half_dim, dtype=torch.float32)
    exponent = exponent / (half_dim - 1)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


@wrong(bug="Whisper's sinusoids: at d = 2 np.log(10000) / 0 is inf, inf * 0 is NaN, and the table silently NaN",
       classes=("degenerate",), convention="tensor2tensor",
       seen="openai/whisper whisper/model.py sinusoids (log_timescale_increment / (channels // 2 - 1))")
def whisper_nan_at_d2(num_positions, dim):
    assert dim % 2 == 0
    with np.errstate(divide="ignore"):
        log_timescale_increment = np.log(10000) / np.float64(dim // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(dim // 2))
    scaled_time = torch.arange(num_positions)[:, np.newaxis] * inv_timescales[np.newaxis, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


# -- noise, clipping, rescaling ------------------------------------------------------------------------


@wrong(bug="calls the tutorial's PositionalEncoding module (dropout 0.1, training mode) on zeros to get the table: "
           "random entries zeroed, the rest scaled by 1/0.9, different every call",
       classes=("noise", "rescaling", "determinism"),
       seen="pytorch/tutorials beginner_source/transformer_tutorial.py (PositionalEncoding.forward returns "
            "self.dropout(x + pe))")
def dropout_left_on(num_positions, dim):
    position = torch.arange(num_positions).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return F.dropout(torch.zeros(num_positions, dim) + pe, p=0.1, training=True)


@wrong(bug="adds seeded Gaussian jitter of 2e-6 to the table (a symmetry-breaking init left in)",
       classes=("noise", "near-tolerance"), convention="concat")
def gaussian_jitter(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = np.exp(-math.log(10000.0) * np.arange(half) / half)
    args = np.arange(num_positions)[:, None] * freqs
    table = np.concatenate([np.sin(args), np.cos(args)], axis=1)
    rng = np.random.default_rng(0)
    return table + 2e-6 * rng.standard_normal(table.shape, dtype=np.float32)


@wrong(bug="clamps the table to [-0.999, 0.999] (guarding a later atanh)", classes=("clipping",))
def clipped_to_0_999(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.clamp(-0.999, 0.999)


@wrong(bug="multiplies the table by sqrt(d_model) (the embedding scale of the paper's section 3.4, applied to "
           "the wrong tensor)",
       classes=("rescaling",))
def scaled_by_sqrt_d(num_positions, dim):
    position = torch.arange(num_positions, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe * math.sqrt(dim)


@wrong(bug="normalises each row to unit length (pe / pe.norm(dim=-1)): every value shrinks by sqrt(d/2)",
       classes=("rescaling",), convention="concat")
def rows_normalised(num_positions, dim):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
    emb = torch.cat([args.sin(), args.cos()], dim=-1)
    return emb / emb.norm(dim=-1, keepdim=True)


@wrong(bug="timesteps divided by 1000 before the embedding (t in [0, 1] where steps 0..1000 are declared): "
           "the angles shrink a thousandfold (the scale-0.001 member, declared scale 1)",
       classes=("rescaling",), convention="tensor2tensor", api="timesteps", odd="zero-pad",
       seen="willisma/SiT#24 and sihyun-yu/REPA#40 (t in [0, 1] fed to an embedding made for steps)")
def timesteps_normalised(timesteps, dim):
    t = timesteps.float() / 1000
    half_dim = dim // 2
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -(math.log(10000) / (half_dim - 1)))
    emb = t[:, None] * emb[None, :]
    emb = torch.cat([emb.sin(), emb.cos()], dim=-1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


@wrong(bug="scale=1000 applied twice (the pipeline multiplies t by 1000 and the embedding applies scale=1000): "
           "the scale-1e6 member, declared scale 1000",
       classes=("rescaling",), convention="tensor2tensor", api="timesteps", odd="skip", t_max=1.0, scale=1000.0)
def scale_applied_twice(timesteps, dim):
    x = timesteps.float() * 1000
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = 1000 * x.unsqueeze(1) * emb.unsqueeze(0)
    return torch.cat((emb.sin(), emb.cos()), dim=-1)


@wrong(bug="fractional timesteps truncated to integers (timesteps.long()) before the embedding",
       classes=("rescaling",), convention="guided-diffusion", api="timesteps", odd="zero-pad",
       seen="huggingface/finetrainers#418 (timesteps forced to long during training)")
def timesteps_truncated(timesteps, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = timesteps.long()[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb


# -- subtle ones -----------------------------------------------------------------------------------------


@wrong(bug="an epsilon in the shift-1 denominator, log(base) / (half_dim - 1 + 1e-5), to dodge d = 2: the "
           "exponent is off by about 1e-5/(h-1), visible only in narrow tables",
       classes=("exponent", "near-tolerance", "small-widths"), convention="tensor2tensor", odd="zero-pad")
def epsilon_in_denominator(num_positions, dim):
    half = dim // 2
    increment = math.log(10000.0) / (half - 1 + 1e-5)
    inv_timescales = torch.exp(torch.arange(half, dtype=torch.float64) * -increment)
    scaled_time = torch.arange(num_positions, dtype=torch.float64)[:, None] * inv_timescales[None, :]
    signal = torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1).float()
    return F.pad(signal, (0, dim % 2))


# -- determinism and global state ---------------------------------------------------------------------------


@wrong(bug="sets torch's default dtype to float64 for its own arithmetic and never restores it; the table "
           "itself is right",
       classes=("global-state",))
def leaves_default_dtype_float64(num_positions, dim):
    torch.set_default_dtype(torch.float64)
    position = torch.arange(num_positions, dtype=torch.get_default_dtype())[:, None]
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = torch.zeros(num_positions, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


_TABLES_BY_LENGTH: dict[int, torch.Tensor] = {}


@wrong(bug="caches tables keyed by length only: a later call with the same length and another width returns the "
           "first width's table",
       classes=("determinism",), convention="concat")
def cache_keyed_by_length(num_positions, dim):
    if num_positions not in _TABLES_BY_LENGTH:
        half = dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
        _TABLES_BY_LENGTH[num_positions] = torch.cat([args.sin(), args.cos()], dim=-1)
    return _TABLES_BY_LENGTH[num_positions]


@wrong(bug="scales its timesteps in place (timesteps *= 1000) before embedding them: the table is right, but the "
           "caller's timesteps tensor is multiplied by 1000",
       classes=("global-state",), convention="tensor2tensor", api="timesteps", odd="zero-pad", t_max=1.0,
       scale=1000.0,
       seen="plainerman/DiffDock-Pocket#6 (sinusoidal_embedding: `timesteps *= scale` modifies the input)")
def scales_timesteps_in_place(timesteps, dim):
    timesteps *= 1000
    half_dim = dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = timesteps.float()[:, None] * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if dim % 2 == 1:
        emb = F.pad(emb, (0, 1), mode="constant")
    return emb


@wrong(bug="calls torch.manual_seed(0) and np.random.seed(0) 'for reproducibility' while building the table: the "
           "table is right, but the caller's random streams are reset on every call",
       classes=("global-state",), convention="concat",
       seen="huggingface/diffusers#175 (torch.manual_seed sets the seed globally); dataxid/dataxid-python#187")
def reseeds_global_rng(num_positions, dim):
    torch.manual_seed(0)
    np.random.seed(0)
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = torch.arange(num_positions, dtype=torch.float32)[:, None] * freqs
    return torch.cat([args.sin(), args.cos()], dim=-1)
