"""Correct 2-D sincos tables in other idioms, each registered with the convention it follows.

None reuses the family's oracle: each builds its table as the code it imitates does (a
module run on a mask, a crop of a larger table, a complex exponential, a channel-first
permute ...), so the family's checks meet the variety of correct code. Low-precision
outputs form the angles in float32 and round once at the end.

A catalogue, one function per idiom; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .sincos2d_registry import sincos2d_correct


def _check_width(dim):
    if dim % 4:
        raise ValueError(f"embed_dim must be divisible by 4, got {dim}")


@sincos2d_correct(idiom="MAE's pos_embed.py taking a (H, W) pair: meshgrid(grid_w, grid_h), per-axis [sin | cos] "
                        "from np.einsum, float64", convention="mae", signature="dim-pair",
                  seen="facebookresearch/mae#151 (the (H, W) version of get_2d_sincos_pos_embed)")
def mae_with_a_pair(embed_dim, grid_size):
    assert embed_dim % 4 == 0
    grid_h = np.arange(grid_size[0], dtype=np.float32)
    grid_w = np.arange(grid_size[1], dtype=np.float32)
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0).reshape([2, 1, grid_size[0], grid_size[1]])
    halves = []
    for axis in (0, 1):
        omega = 1.0 / 10000 ** (np.arange(embed_dim // 4, dtype=np.float64) / (embed_dim / 4.0))
        out = np.einsum("m,d->md", grid[axis].reshape(-1), omega)
        halves.append(np.concatenate([np.sin(out), np.cos(out)], axis=1))
    return np.concatenate(halves, axis=1)


@sincos2d_correct(idiom="diffusers' stretched positions as np.linspace(0, base_size / scale, L, endpoint=False), "
                        "torch outer products in float64", convention="diffusers", signature="dim-pair",
                  interpolation_scale=0.5, seen="huggingface/diffusers get_2d_sincos_pos_embed")
def diffusers_linspace(embed_dim, grid_size, base_size=16, interpolation_scale=0.5):
    _check_width(embed_dim)
    axes = [torch.from_numpy(np.linspace(0, base_size / interpolation_scale, n, endpoint=False)) for n in grid_size]
    omega = 10000.0 ** -(torch.arange(embed_dim // 4, dtype=torch.float64) / (embed_dim // 4))
    rows, cols = torch.meshgrid(axes[0], axes[1], indexing="ij")
    parts = [torch.outer(grid.flatten(), omega) for grid in (cols, rows)]
    return torch.cat([f(part) for part in parts for f in (torch.sin, torch.cos)], dim=1)


@sincos2d_correct(idiom="vit-pytorch's posemb_sincos_2d: meshgrid 'ij', omega = arange / (D/4 - 1), float32, with "
                         "the D = 4 refusal it lacks (there omega is 0/0: NaN)",
                  convention="big-vision", seen="lucidrains/vit-pytorch simple_vit.py (posemb_sincos_2d)")
def vit_pytorch_style(h, w, dim, temperature=10000, dtype=torch.float32):
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    assert (dim % 4) == 0, "feature dimension must be multiple of 4 for sincos emb"
    assert dim >= 8, "one frequency per axis: D/4 - 1 = 0 has no exponent"
    omega = torch.arange(dim // 4) / (dim // 4 - 1)
    omega = 1.0 / (temperature**omega)
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1).type(dtype)


@sincos2d_correct(idiom="big_vision's numpy: np.mgrid, einsum 'm,d->md', a leading batch axis, float32, with the "
                         "D = 4 refusal it lacks",
                  convention="big-vision", seen="google-research/big_vision models/vit.py (posemb_sincos_2d)")
def big_vision_mgrid(h, w, width, temperature=10_000.0):
    y, x = np.mgrid[:h, :w]
    if width % 4 or width < 8:
        raise ValueError("Width must be mult of 4 for sincos posemb (and at least 8: D/4 - 1 divides)")
    omega = 1.0 / (temperature ** (np.arange(width // 4) / (width // 4 - 1)))
    y, x = np.einsum("m,d->md", y.flatten(), omega), np.einsum("m,d->md", x.flatten(), omega)
    return np.asarray(np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1), np.float32)[None]


class _PositionEmbeddingSine(nn.Module):
    """DETR's module: positions from the padding mask's cumsum, normalised to (0, 2 pi]."""

    def __init__(self, num_pos_feats=64, temperature=10000, offset=0.0):
        super().__init__()
        self.num_pos_feats, self.temperature, self.offset = num_pos_feats, temperature, offset
        self.scale = 2 * math.pi

    def forward(self, x, mask):
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        eps = 1e-6
        y_embed = (y_embed + self.offset) / (y_embed[:, -1:, :] + eps) * self.scale
        x_embed = (x_embed + self.offset) / (x_embed[:, :, -1:] + eps) * self.scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


@sincos2d_correct(idiom="DETR's PositionEmbeddingSine(normalize=True) run on a feature map with an all-valid mask, "
                        "(1, D, H, W)", convention="detr", seen="facebookresearch/detr models/position_encoding.py")
def detr_module_on_a_mask(height, width, dim):
    _check_width(dim)
    module = _PositionEmbeddingSine(dim // 2).eval()
    with torch.no_grad():
        return module(torch.zeros(1, 3, height, width), torch.zeros(1, height, width, dtype=torch.bool))


@sincos2d_correct(idiom="Deformable DETR's module (offset -0.5) on an all-valid mask, rounded once to float16",
                  convention="deformable-detr",
                  seen="fundamentalvision/Deformable-DETR models/position_encoding.py")
def deformable_detr_float16(height, width, dim):
    _check_width(dim)
    module = _PositionEmbeddingSine(dim // 2, offset=-0.5).eval()
    with torch.no_grad():
        return module(torch.zeros(1, 3, height, width), torch.zeros(1, height, width, dtype=torch.bool)).half()


@sincos2d_correct(idiom="transformers 5's build_2d_sinusoidal_position_embedding: float64 angles, "
                        "[sin h | cos h | sin w | cos w], cast to bfloat16", convention="transformers",
                  seen="huggingface/transformers#41380 (the row-major table for non-square images)")
def transformers_style_bfloat16(height, width, embed_dim):
    if embed_dim % 4:
        raise ValueError(f"`embed_dim` must be divisible by 4, got {embed_dim}")
    pos_dim = embed_dim // 4
    omega = 1.0 / 10000.0 ** (torch.arange(pos_dim, dtype=torch.float64) / pos_dim)
    grid_h, grid_w = torch.meshgrid(torch.arange(height, dtype=torch.float64), torch.arange(width, dtype=torch.float64),
                                    indexing="ij")
    emb_h, emb_w = grid_h.flatten().outer(omega), grid_w.flatten().outer(omega)
    return torch.cat([emb_h.sin(), emb_h.cos(), emb_w.sin(), emb_w.cos()], dim=1).to(torch.bfloat16)


@sincos2d_correct(idiom="SD3: one max-size table built once (positions i / (max / base)), the centred crop "
                        "reshaped to tokens", convention="sd3",
                  seen="huggingface/diffusers PatchEmbed.cropped_pos_embed")
def sd3_centred_crop(height, width, dim, max_size=192, base_size=64):
    _check_width(dim)
    grid = torch.arange(max_size, dtype=torch.float32) / (max_size / base_size)
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4.0))
    angles = torch.outer(grid.double(), omega)
    one_d = torch.cat([angles.sin(), angles.cos()], dim=1)
    table = torch.cat([one_d[None, :, :].expand(max_size, -1, -1), one_d[:, None, :].expand(-1, max_size, -1)],
                      dim=-1).float()
    top, left = (max_size - height) // 2, (max_size - width) // 2
    return table[top:top + height, left:left + width].reshape(1, -1, dim)


@sincos2d_correct(idiom="angles of both axes concatenated, then [sin | cos] of the lot: the by-function grouping, "
                        "declared as such", convention="mae", grouping="by-function",
                  seen="facebookresearch/mae#218 (the layouts side by side)")
def by_function_declared(height, width, dim):
    _check_width(dim)
    rows, cols = np.indices((height, width)).reshape(2, -1).astype(np.float64)
    omega = np.exp(-np.log(10000.0) * np.arange(dim // 4) / (dim // 4))
    angles = np.concatenate([np.multiply.outer(cols, omega), np.multiply.outer(rows, omega)], axis=1)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)


@sincos2d_correct(idiom="a complex exponential per axis, exp(1j * p * omega), split into [imag | real]",
                  convention="mae", seen="facebookresearch/llama model.py (polar/complex idiom, precompute_freqs_cis)")
def complex_exponential(height, width, dim):
    _check_width(dim)
    omega = 10000.0 ** (-np.arange(dim // 4) / (dim / 4))
    rows, cols = np.divmod(np.arange(height * width), width)
    parts = [np.exp(1j * np.multiply.outer(axis.astype(np.float64), omega)) for axis in (cols, rows)]
    return np.concatenate([piece for z in parts for piece in (z.imag, z.real)], axis=1)


@sincos2d_correct(idiom="MoCo v3's build_2d_sincos_position_embedding: meshgrid(grid_w, grid_h) 'ij' (tokens "
                        "column by column) and a zero cls row, square grids", convention="moco-v3",
                  signature="dim-size", seen="facebookresearch/moco-v3 vits.py")
def moco_v3_square(embed_dim, grid_size, temperature=10000.0):
    grid_w = torch.arange(grid_size, dtype=torch.float32)
    grid_h = torch.arange(grid_size, dtype=torch.float32)
    grid_w, grid_h = torch.meshgrid(grid_w, grid_h, indexing="ij")
    assert embed_dim % 4 == 0, "Embed dimension must be divisible by 4 for 2D sin-cos position embedding"
    pos_dim = embed_dim // 4
    omega = 1.0 / (temperature ** (torch.arange(pos_dim, dtype=torch.float32) / pos_dim))
    out_w = torch.einsum("m,d->md", [grid_w.flatten(), omega])
    out_h = torch.einsum("m,d->md", [grid_h.flatten(), omega])
    pos_emb = torch.cat([torch.sin(out_w), torch.cos(out_w), torch.sin(out_h), torch.cos(out_h)], dim=1)
    return torch.cat([torch.zeros(1, embed_dim), pos_emb], dim=0)[None]


@sincos2d_correct(idiom="DAB-DETR's per-axis temperatures (height 10, width 20) through the DETR module's formula",
                  convention="dab-detr", row_base=10.0, col_base=20.0,
                  seen="IDEA-Research/DAB-DETR PositionEmbeddingSineHW (temperatureH, temperatureW)")
def dab_detr_per_axis_temperatures(height, width, dim):
    _check_width(dim)
    not_mask = torch.ones(1, height, width)
    embeds = [not_mask.cumsum(axis, dtype=torch.float32) for axis in (1, 2)]
    embeds = [embeds[0] / (embeds[0][:, -1:, :] + 1e-6) * 2 * math.pi,
              embeds[1] / (embeds[1][:, :, -1:] + 1e-6) * 2 * math.pi]
    out = []
    for embed, temperature in zip(embeds, (10.0, 20.0), strict=True):
        dim_t = torch.arange(dim // 2, dtype=torch.float32)
        dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / (dim // 2))
        pos = embed[:, :, :, None] / dim_t
        out.append(torch.stack((pos[:, :, :, 0::2].sin(), pos[:, :, :, 1::2].cos()), dim=4).flatten(3))
    return torch.cat(out, dim=3).permute(0, 3, 1, 2)


@sincos2d_correct(idiom="an (H, W, D) grid returned as it is (an NHWC feature map's table), from np.indices",
                  convention="mae", output_layout="grid", seen="facebookresearch/mae util/pos_embed.py")
def grid_layout_nhwc(height, width, dim):
    _check_width(dim)
    rows, cols = np.indices((height, width), dtype=np.float64)
    omega = 10000.0 ** (-np.arange(dim // 4) / (dim // 4))
    halves = [np.multiply.outer(axis, omega) for axis in (cols, rows)]
    return np.concatenate([f(half) for half in halves for f in (np.sin, np.cos)], axis=-1)
