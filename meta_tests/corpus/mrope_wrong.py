"""Wrong multi-axis rotary implementations: each a slip of public code, written the way it appears there.

Every function is registered with the declaration it claims (:mod:`meta_tests.corpus.mrope_registry`);
under it, it is wrong somewhere on the family's grid. Most are one of the corpus's correct forms
with one line changed, as ports and copies change it; ``seen_in`` names the code each is modelled on.

A catalogue, one function per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import numpy as np
import torch

from .mrope_registry import mrope_wrong

_QWEN2 = "transformers Qwen2VLRotaryEmbedding / apply_multimodal_rotary_pos_emb"
_QWEN3 = "transformers Qwen3VLTextRotaryEmbedding.apply_interleaved_mrope"
_FLUX = "diffusers FluxPosEmbed / get_1d_rotary_pos_embed"
_ROPE_INDEX = "transformers Qwen2VLModel.get_rope_index"


def _shared(position_ids, head_dim, sections=(16, 24, 24), theta=1e6, rows=(0, 1, 2), dtype=torch.float32):
    """Qwen's M-RoPE angles ``(L, head_dim / 2)``: slot blocks of ``sections`` fed by ``rows``."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim)
    freqs = position_ids[list(rows)][..., None].to(dtype) * inv_freq
    return torch.cat([part[i % 3] for i, part in enumerate(freqs.split(list(sections), dim=-1))], dim=-1)


def _half(angles):
    return torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)


def _per_axis(position_ids, dims, theta=10000.0, interleave=True):
    """diffusers' per-axis RoPE: each axis its own frequencies over its ``dims`` features."""
    cos, sin = [], []
    for positions, dim in zip(position_ids.double(), dims, strict=True):
        angles = torch.outer(positions, theta ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        if interleave:
            cos.append(angles.cos().repeat_interleave(2, 1))
            sin.append(angles.sin().repeat_interleave(2, 1))
        else:
            cos.append(torch.cat([angles.cos()] * 2, 1))
            sin.append(torch.cat([angles.sin()] * 2, 1))
    return torch.cat(cos, 1).float(), torch.cat(sin, 1).float()


# -- sections ----------------------------------------------------------------------------------


@mrope_wrong("mrope_section in the wrong order: [24, 24, 16] for [16, 24, 24]", _QWEN2, ("sections",),
             mrope_preset="qwen2-vl")
def sections_swapped(position_ids, head_dim):
    return _half(_shared(position_ids, head_dim, sections=(24, 24, 16)))


@mrope_wrong("mrope_section not doubled over the concatenated cos and sin: the second half's slots all take t",
             f"{_QWEN2} (`mrope_section * 2` left out)", ("sections",), mrope_preset="qwen2-vl")
def section_not_doubled(position_ids, head_dim):
    inv_freq = 1.0 / 1e6 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    emb = torch.cat([position_ids[..., None].float() * inv_freq] * 2, dim=-1)  # (3, L, head_dim)
    parts = emb.split([16, 24, 24, 64], dim=-1)
    picked = torch.cat([part[i % 3] for i, part in enumerate(parts)], dim=-1)
    return picked.cos(), picked.sin()


@mrope_wrong("Wan's head split as three equal thirds (t gets 2 (d // 6), h the rest)", "diffusers WanRotaryPosEmbed",
             ("sections",), mrope_preset="wan", signature="hidden-states", init={"head_dim": "{head_dim}"})
class WanSplitSwapped(torch.nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        spatial = 2 * (head_dim // 6)
        self.dims = (spatial, head_dim - 2 * spatial, spatial)

    def forward(self, hidden_states):
        grid = torch.stack(torch.meshgrid(*(torch.arange(n) for n in hidden_states.shape[2:]), indexing="ij"))
        return _per_axis(grid.reshape(3, -1), self.dims)


@mrope_wrong("CogVideoX's t and h shares exchanged: 3d/8 for t, d/4 for h", "diffusers get_3d_rotary_pos_embed",
             ("sections",), mrope_preset="cogvideox", attention_head_dim=64)
def cogvideox_shares_exchanged(position_ids, head_dim):
    return _per_axis(position_ids, (head_dim // 8 * 3, head_dim // 4, head_dim // 8 * 3))


# -- axes ------------------------------------------------------------------------------------


@mrope_wrong("the axes fed in reverse: w positions into t's slots, t into w's", _QWEN2, ("axes",),
             mrope_preset="qwen2-vl")
def axes_reversed(position_ids, head_dim):
    return _half(_shared(position_ids, head_dim, rows=(2, 1, 0)))


@mrope_wrong("Qwen3-VL's interleave with the h and w offsets exchanged (w at 1, 4, ...; h at 2, 5, ...)", _QWEN3,
             ("axes",), mrope_preset="qwen3-vl")
def qwen3_offsets_exchanged(position_ids, head_dim):
    inv_freq = 1.0 / 5e6 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    freqs = position_ids[..., None].float() * inv_freq
    mixed = freqs[0].clone()
    for axis, offset in ((2, 1), (1, 2)):
        mixed[..., offset:60:3] = freqs[axis, ..., offset:60:3]
    return _half(mixed)


@mrope_wrong("HunyuanDiT's 2-D RoPE with the row first: the comment's grid_h order, not the code's",
             "diffusers get_2d_rotary_pos_embed", ("axes",), mrope_preset="hunyuan-dit", attention_head_dim=64)
def hunyuan_dit_rows_first(position_ids, head_dim):
    return _per_axis(position_ids[[1, 0]], (head_dim // 2, head_dim // 2))


@mrope_wrong("a video grid walked with h slowest (meshgrid indexing='xy' on t, h, w: the first two axes swapped)",
             "diffusers HunyuanVideoRotaryPosEmbed", ("axes",), mrope_preset="hunyuan-video",
             signature="hidden-states", init={"rope_dim": "{axes_dim}"})
class VideoGridXY(torch.nn.Module):
    def __init__(self, rope_dim):
        super().__init__()
        self.rope_dim = rope_dim

    def forward(self, hidden_states):
        t, h, w = hidden_states.shape[2:]
        grid = torch.stack(torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="xy"))
        return _per_axis(grid.reshape(3, -1), self.rope_dim, theta=256.0)


# -- slot order ------------------------------------------------------------------------------


@mrope_wrong("Qwen3-VL declared, Qwen2-VL's contiguous sections computed", _QWEN3, ("slot-order",),
             mrope_preset="qwen3-vl")
def qwen3_contiguous(position_ids, head_dim):
    return _half(_shared(position_ids, head_dim, sections=(24, 20, 20), theta=5e6))


@mrope_wrong("Qwen3-VL's interleave over the previous axis's section (3 x mrope_section[dim - 1] slots)", _QWEN3,
             ("slot-order",), mrope_preset="qwen3-vl")
def qwen3_interleave_range(position_ids, head_dim):
    inv_freq = 1.0 / 5e6 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    freqs = position_ids[..., None].float() * inv_freq
    mixed = freqs[0].clone()
    sections = (24, 20, 20)
    for axis in (1, 2):
        mixed[..., axis:3 * sections[axis - 1]:3] = freqs[axis, ..., axis:3 * sections[axis - 1]:3]
    return _half(mixed)


# -- frequencies -----------------------------------------------------------------------------


@mrope_wrong("rope_theta 10000 where Qwen2-VL's is 1e6", _QWEN2, ("frequencies",), mrope_preset="qwen2-vl")
def theta_ten_thousand(position_ids, head_dim):
    return _half(_shared(position_ids, head_dim, theta=10000.0))


@mrope_wrong("HunyuanVideo's theta 256 replaced by the usual 10000", "diffusers HunyuanVideoRotaryPosEmbed",
             ("frequencies",), mrope_preset="hunyuan-video")
def hunyuan_theta(position_ids, head_dim):
    return _per_axis(position_ids, (16, 56, 56), theta=10000.0)


@mrope_wrong("Qwen2-VL's sections given frequencies of their own (each axis restarting at 1)", _QWEN2,
             ("frequencies",), mrope_preset="qwen2-vl")
def per_axis_for_shared(position_ids, head_dim):
    angles = [torch.outer(positions.float(), 1e6 ** (-torch.arange(n, dtype=torch.float32) / n))
              for positions, n in zip(position_ids, (16, 24, 24), strict=True)]
    return _half(torch.cat(angles, dim=1))


@mrope_wrong("FLUX's axes given one inverse frequency over the whole head (a transformers-style inv_freq)", _FLUX,
             ("frequencies",), mrope_preset="flux")
def shared_for_per_axis(position_ids, head_dim):
    inv_freq = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    owner = torch.repeat_interleave(torch.arange(3), torch.tensor([8, 28, 28]))
    angles = position_ids.double()[owner].T * inv_freq
    return angles.cos().repeat_interleave(2, 1).float(), angles.sin().repeat_interleave(2, 1).float()


@mrope_wrong("each axis's exponent over half its features (2i / (dim / 2) for 2i / dim)", _FLUX, ("frequencies",),
             mrope_preset="flux")
def exponent_over_half_axis(position_ids, head_dim):
    cos, sin = [], []
    for positions, dim in zip(position_ids.double(), (16, 56, 56), strict=True):
        angles = torch.outer(positions, 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / (dim // 2)))
        cos.append(angles.cos().repeat_interleave(2, 1))
        sin.append(angles.sin().repeat_interleave(2, 1))
    return torch.cat(cos, 1).float(), torch.cat(sin, 1).float()


@mrope_wrong("Qwen2-VL's inv_freq over half the head (dim = head_dim // 2, the vision tower's split)", _QWEN2,
             ("frequencies",), mrope_preset="qwen2-vl")
def half_head_inv_freq(position_ids, head_dim):
    half = head_dim // 2
    inv_freq = 1.0 / 1e6 ** (torch.arange(0, half, 2, dtype=torch.float32) / half)
    inv_freq = torch.cat([inv_freq, inv_freq])
    freqs = position_ids[..., None].float() * inv_freq
    return _half(torch.cat([part[i % 3] for i, part in enumerate(freqs.split([16, 24, 24], dim=-1))], dim=-1))


@mrope_wrong("Pixtral's inverse frequencies split in two halves, h the first quarter-head of them and w the "
             "next, where h takes the even-indexed and w the odd-indexed ones", "transformers "
             "PixtralVisionRotaryEmbedding (`torch.cat([inv_freq[0::2], inv_freq[1::2]])` read as a chunk)",
             ("frequencies",), mrope_preset="pixtral-vision")
def pixtral_halves_for_strided(position_ids, head_dim):
    inv_freq = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    first, second = inv_freq.chunk(2)
    return _half(torch.cat([torch.outer(position_ids[0].float(), first), torch.outer(position_ids[1].float(), second)],
                           dim=1))


@mrope_wrong("Cosmos' temporal base left at 10000, its NTK factor rope_scale ** (dim / (dim - 2)) dropped",
             "diffusers CosmosRotaryPosEmbed (`t_ntk_factor`)", ("frequencies",), mrope_preset="cosmos")
def cosmos_ntk_factor_dropped(position_ids, head_dim):
    spatial = head_dim // 6 * 2
    angles = [torch.outer(positions, 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim))
              for positions, dim in zip(position_ids.double(), (head_dim - 2 * spatial, spatial, spatial), strict=True)]
    cos, sin = _half(torch.cat(angles, dim=1))
    return cos.float(), sin.float()


# -- layout ----------------------------------------------------------------------------------


@mrope_wrong("FLUX's cos and sin concatenated with themselves (rotate-half) where they are interleaved", _FLUX,
             ("layout",), mrope_preset="flux")
def flux_rotate_half(position_ids, head_dim):
    cos, sin = _per_axis(position_ids, (16, 56, 56))
    slots = torch.arange(0, head_dim, 2)
    return torch.cat([cos[:, slots]] * 2, 1), torch.cat([sin[:, slots]] * 2, 1)


@mrope_wrong("Qwen2-VL's cos and sin interleaved (repeat_interleave) where rotate-half concatenates them", _QWEN2,
             ("layout",), mrope_preset="qwen2-vl")
def qwen2_interleaved_pairs(position_ids, head_dim):
    angles = _shared(position_ids, head_dim)
    return angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)


@mrope_wrong("sin and cos returned in the wrong order", _QWEN2, ("layout",), mrope_preset="qwen2-vl")
def sin_cos_swapped(position_ids, head_dim):
    cos, sin = _half(_shared(position_ids, head_dim))
    return sin, cos


# -- positions -------------------------------------------------------------------------------


@mrope_wrong("positions counted from 1", _QWEN2, ("positions",), mrope_preset="qwen2-vl")
def positions_from_one(position_ids, head_dim):
    return _half(_shared(position_ids + 1, head_dim))


@mrope_wrong("FLUX's ids cast to the model's bfloat16 before the angles (positions above 256 collide)",
             "diffusers FluxPipeline._prepare_latent_image_ids(..., dtype)", ("precision",), mrope_preset="flux")
def flux_bfloat16_ids(position_ids, head_dim):
    return _per_axis(position_ids.to(torch.bfloat16).double(), (16, 56, 56))


@mrope_wrong("Qwen2-VL's angles computed in float16", _QWEN2, ("precision",), mrope_preset="qwen2-vl")
def angles_in_float16(position_ids, head_dim):
    cos, sin = _half(_shared(position_ids, head_dim).half())
    return cos.float(), sin.float()


@mrope_wrong("a cropped grid's positions as diffusers' linspace(start, stop (n - 1) / n, n): right only from 0",
             "diffusers get_3d_rotary_pos_embed / get_2d_rotary_pos_embed", ("crop",), mrope_preset="cogvideox",
             signature="grid-3d", attention_head_dim=64)
def crop_end_scaled(embed_dim, crops_coords, grid_size, temporal_size):
    (top, left), (bottom, right) = crops_coords
    along = [np.arange(temporal_size, dtype=np.float64),
             np.linspace(top, bottom * (grid_size[0] - 1) / grid_size[0], grid_size[0]),
             np.linspace(left, right * (grid_size[1] - 1) / grid_size[1], grid_size[1])]
    mesh = np.meshgrid(*along, indexing="ij")
    return _per_axis(torch.from_numpy(np.stack([axis.reshape(-1) for axis in mesh])), (16, 24, 24))


@mrope_wrong("the crop ignored: every grid at 0 .. n - 1", "diffusers get_3d_rotary_pos_embed(grid_type='slice')",
             ("crop",), mrope_preset="cogvideox", signature="grid-3d", attention_head_dim=64)
def crop_ignored(embed_dim, crops_coords, grid_size, temporal_size):
    mesh = torch.meshgrid(torch.arange(temporal_size), torch.arange(grid_size[0]), torch.arange(grid_size[1]),
                          indexing="ij")
    return _per_axis(torch.stack([axis.reshape(-1) for axis in mesh]), (16, 24, 24))


def _position_ids(token_types, grids, merge=2, interval=1.0, advance=None, truncate_interval=False):
    """Qwen2-VL's position ids with one rule changeable: ``advance(start, t, h, w, top)`` the text
    position after a vision run (the reference: ``top + 1``)."""
    rows, position, vision, index = [[], [], []], 0, iter(grids.tolist()), 0
    kinds = token_types.tolist()
    while index < len(kinds):
        if kinds[index] == 0:
            for row in rows:
                row.append(position)
            position, index = position + 1, index + 1
            continue
        t, h, w = next(vision)
        step = (int(interval) if truncate_interval else interval) if kinds[index] == 2 else 1
        h, w = h // merge, w // merge
        top = position
        for i in range(t):
            for j in range(h):
                for k in range(w):
                    values = (position + int(i * step), position + j, position + k)
                    for row, value in zip(rows, values, strict=True):
                        row.append(value)
                    top = max(top, *values)
        index += t * h * w
        position = top + 1 if advance is None else advance(position, t, h, w, top)
    return torch.tensor(rows, dtype=torch.int64)


@mrope_wrong("text after a vision run placed after its spatial extent alone (max(h, w)), not after its frames",
             f"{_ROPE_INDEX} in transformers 5.x (`current_pos += max(grid_thw[1], grid_thw[2]) // "
             f"spatial_merge_size`)", ("positions",), api="mrope-positions", signature="sequence")
def text_after_spatial_extent(token_types, grids):
    return _position_ids(token_types, grids, advance=lambda start, t, h, w, top: start + max(h, w))


@mrope_wrong("text after an image one position too far (the largest position plus 2)", _ROPE_INDEX, ("positions",),
             api="mrope-positions", signature="sequence")
def text_after_image_skips_one(token_types, grids):
    return _position_ids(token_types, grids, advance=lambda start, t, h, w, top: top + 2)


@mrope_wrong("text after an image at the image's largest position (no + 1)", _ROPE_INDEX, ("positions",),
             api="mrope-positions", signature="sequence")
def text_after_image_overlaps(token_types, grids):
    return _position_ids(token_types, grids, advance=lambda start, t, h, w, top: top)


@mrope_wrong("the merge size forgotten in the text advance: the next text after start + max(H, W) patches",
             _ROPE_INDEX, ("positions",), api="mrope-positions", signature="sequence")
def merge_forgotten_in_advance(token_types, grids):
    return _position_ids(token_types, grids, advance=lambda start, t, h, w, top: max(top + 1, start + 2 * max(h, w)))


@mrope_wrong("a video's temporal step truncated to an integer before the product (0.5 s per grid -> 0)",
             "transformers Qwen2_5_VLModel.get_rope_index before PR #48669", ("positions",), api="mrope-positions",
             signature="sequence", temporal_interval=0.5)
def temporal_step_truncated(token_types, grids):
    return _position_ids(token_types, grids, interval=0.5, truncate_interval=True)


# -- applies ------------------------------------------------------------------------------------


@mrope_wrong("transformers' rotate_half applied with FLUX's interleaved cos and sin", "diffusers apply_rotary_emb "
             "use_real_unbind_dim mixed up", ("layout",), api="mrope-apply", signature="x-cos-sin",
             mrope_preset="flux")
def apply_rotate_half_on_interleaved(x, freqs):
    cos, sin = freqs
    rotated = torch.cat([-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


@mrope_wrong("the rotation's sign flipped: x cos - rotate_half(x) sin", _QWEN2, ("layout",), api="mrope-apply",
             signature="q-k-cos-sin", mrope_preset="qwen2-vl")
def apply_sign_flipped(q, k, cos, sin):
    def rotate_half(x):
        return torch.cat([-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]], dim=-1)

    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos - rotate_half(q) * sin, k * cos - rotate_half(k) * sin
