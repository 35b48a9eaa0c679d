"""Wrong 2-D sincos tables: each a slip seen in public code, written the way it appears there.

Every function is registered with the convention it claims (see
:mod:`meta_tests.corpus.sincos2d_registry`) and the smallest call that shows it; most slips
show only on non-square grids, which square-grid tests never make. The helpers are the
shared code such a module would import; the slip is in the registered function.

A catalogue, one function per slip; it grows by appending, so it stays one file.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .sincos2d_registry import sincos2d_wrong


def _mae_1d(embed_dim, pos, base=10000.0):
    """MAE's get_1d_sincos_pos_embed_from_grid: [sin | cos] of pos x omega, float64."""
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / base**omega
    out = np.einsum("m,d->md", pos.reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def _sincos_1d_torch(positions, omega):
    angles = torch.outer(positions, omega)
    return torch.cat([angles.sin(), angles.cos()], dim=1)


def _detr_axis(embed, num_pos_feats, temperature=10000):
    """DETR's per-axis block: dim_t with 2 * (k // 2), interleaved sin/cos."""
    dim_t = torch.arange(num_pos_feats, dtype=torch.float32)
    dim_t = temperature ** (2 * (dim_t // 2) / num_pos_feats)
    pos = embed[:, :, :, None] / dim_t
    return torch.stack((pos[:, :, :, 0::2].sin(), pos[:, :, :, 1::2].cos()), dim=4).flatten(3)


def _detr_embeds(height, width):
    not_mask = torch.ones(1, height, width)
    return not_mask.cumsum(1, dtype=torch.float32), not_mask.cumsum(2, dtype=torch.float32)


def _detr_normalised(height, width, eps=1e-6, scale=2 * math.pi):
    """DETR's normalize=True positions: cumsum / (last + eps) * 2 pi, per axis."""
    y_embed, x_embed = _detr_embeds(height, width)
    return y_embed / (y_embed[:, -1:, :] + eps) * scale, x_embed / (x_embed[:, :, -1:] + eps) * scale


# -- axis order ---------------------------------------------------------------------------


@sincos2d_wrong(bug="meshgrid(grid_h, grid_w) without indexing='ij': the arrays come out (W, H), so the first half "
                    "holds the row and the tokens run column by column; on square grids the two slips cancel",
                classes=("axis-order", "token-order", "non-square"), smallest="2x3:d=4",
                seen="pytorch/torchtitan#4244 (axis swap and traversal swap masking each other on square grids)")
def meshgrid_h_w_xy(height, width, dim):
    grid_h = np.arange(height, dtype=np.float32)
    grid_w = np.arange(width, dtype=np.float32)
    grid = np.stack(np.meshgrid(grid_h, grid_w), axis=0)
    return np.concatenate([_mae_1d(dim // 2, grid[0]), _mae_1d(dim // 2, grid[1])], axis=1)


@sincos2d_wrong(bug="MAE's meshgrid 'fixed' to meshgrid(grid_h, grid_w, indexing='ij') keeping [grid[0] | grid[1]]: "
                    "the row fills the first half where the checkpoint's layout has the column",
                classes=("axis-order",), smallest="2x2:d=4",
                seen="facebookresearch/mae#67 (the suggested meshgrid); facebookresearch/mae#18 (swapping grid[0] "
                     "and grid[1] alone changes emb)")
def mae_meshgrid_ij(height, width, dim):
    grid = np.stack(np.meshgrid(np.arange(height, dtype=np.float32), np.arange(width, dtype=np.float32),
                                indexing="ij"), axis=0)
    return np.concatenate([_mae_1d(dim // 2, grid[0]), _mae_1d(dim // 2, grid[1])], axis=1)


@sincos2d_wrong(bug="torch.cat((pos_x, pos_y)): the column block first where DETR puts pos_y first",
                classes=("axis-order",), convention="detr", smallest="2x2:d=4",
                seen="NVIDIA/physicsnemo#1096 (x and y stacked in the wrong order); HXMap/MapQR#17 ([y, x] for [x, y])")
def detr_cat_x_then_y(height, width, dim):
    y_embed, x_embed = _detr_normalised(height, width)
    return torch.cat((_detr_axis(x_embed, dim // 2), _detr_axis(y_embed, dim // 2)), dim=3).permute(0, 3, 1, 2)


@sincos2d_wrong(bug="DAB-DETR's per-axis temperatures crossed: temperature_width divides the row's dim_t",
                classes=("frequency", "axis-order"), convention="dab-detr", row_base=10.0, col_base=20.0,
                smallest="1x1:d=8", seen="huggingface/transformers DabDetrSinePositionEmbedding (dim_tx from "
                                     "temperature_width, dim_ty from temperature_height)")
def dab_detr_temperatures_crossed(height, width, dim):
    y_embed, x_embed = _detr_normalised(height, width)
    pos_y = _detr_axis(y_embed, dim // 2, temperature=20.0)
    pos_x = _detr_axis(x_embed, dim // 2, temperature=10.0)
    return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


# -- token order ---------------------------------------------------------------------------


@sincos2d_wrong(bug="RT-DETR before transformers 5: meshgrid(grid_w, grid_h, indexing='ij') flattens column by "
                    "column while the features flatten row by row; square grids give the row-first table",
                classes=("token-order", "non-square"), convention="transformers", signature="w-h-dim",
                smallest="2x3:d=4", seen="huggingface/transformers#41380; ultralytics/ultralytics#14351")
def rtdetr_meshgrid_ij(width, height, embed_dim, temperature=10000.0):
    grid_w = torch.arange(int(width), dtype=torch.float32)
    grid_h = torch.arange(int(height), dtype=torch.float32)
    grid_w, grid_h = torch.meshgrid(grid_w, grid_h, indexing="ij")
    pos_dim = embed_dim // 4
    omega = torch.arange(pos_dim, dtype=torch.float32) / pos_dim
    omega = 1.0 / (temperature**omega)
    out_w = grid_w.flatten()[..., None] @ omega[None]
    out_h = grid_h.flatten()[..., None] @ omega[None]
    return torch.concat([out_w.sin(), out_w.cos(), out_h.sin(), out_h.cos()], dim=1)[None, :, :]


@sincos2d_wrong(bug="a forward(width, height) table called as (height, width): the grid is built transposed and "
                    "its tokens run down the columns",
                classes=("token-order", "non-square"), convention="transformers", smallest="2x3:d=4",
                seen="huggingface/transformers RTDetrSinePositionEmbedding.forward(width, height, device, dtype)")
def width_height_argument_order(width, height, dim):
    grid_h, grid_w = torch.meshgrid(torch.arange(height, dtype=torch.float64), torch.arange(width, dtype=torch.float64),
                                    indexing="ij")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim // 4))
    emb_h, emb_w = grid_h.flatten().outer(omega), grid_w.flatten().outer(omega)
    return torch.cat([emb_h.sin(), emb_h.cos(), emb_w.sin(), emb_w.cos()], dim=1).float()


@sincos2d_wrong(bug="the (H, W, D) table flattened after .transpose(0, 1) (an NCHW/NHWC permute slip): tokens "
                    "column-major", classes=("token-order", "non-square"), convention="big-vision", smallest="2x2:d=8",
                seen="pytorch/torchtitan#4244 (flattened traversal order swapped)")
def flatten_after_transpose(height, width, dim):
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4) / (dim // 4 - 1))
    y, x = y[..., None] * omega, x[..., None] * omega
    pe = torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=-1)
    return pe.transpose(0, 1).reshape(-1, dim)


# -- position transform ------------------------------------------------------------------------


@sincos2d_wrong(bug="both axes stretched by the grid height: grid_w = arange(W) / (H / base_size)",
                classes=("position-transform", "non-square"), convention="diffusers", signature="dim-pair",
                smallest="2x3:d=4",
                seen="mkocabas/CoordConv-pytorch#1 (x normalised by y_dim); hpcaitech/Open-Sora#638")
def diffusers_normalised_by_height(embed_dim, grid_size, base_size=16, interpolation_scale=1.0):
    height, width = grid_size
    grid_h = torch.arange(height, dtype=torch.float32) / (height / base_size) / interpolation_scale
    grid_w = torch.arange(width, dtype=torch.float32) / (height / base_size) / interpolation_scale
    grid = torch.stack(torch.meshgrid(grid_w, grid_h, indexing="xy"), dim=0)
    omega = 1.0 / 10000 ** (torch.arange(embed_dim // 4, dtype=torch.float64) / (embed_dim / 4))
    return torch.cat([_sincos_1d_torch(grid[0].reshape(-1).double(), omega),
                      _sincos_1d_torch(grid[1].reshape(-1).double(), omega)], dim=1)


@sincos2d_wrong(bug="the interpolation scale divided in twice: the caller passes base_size / scale and the "
                    "function divides by the scale again (PixArt-1024, interpolation_scale 2)",
                classes=("position-transform",), convention="diffusers", signature="dim-pair",
                interpolation_scale=2.0, smallest="2x2:d=4", seen="huggingface/diffusers#6783 (PixArt's interpolation "
                                                              "scale giving gridded images)")
def interpolation_scale_twice(embed_dim, grid_size, interpolation_scale=2.0):
    base_size = 16 / interpolation_scale
    height, width = grid_size
    grid_h = np.arange(height, dtype=np.float32) / (height / base_size) / interpolation_scale
    grid_w = np.arange(width, dtype=np.float32) / (width / base_size) / interpolation_scale
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0)
    return np.concatenate([_mae_1d(embed_dim // 2, grid[0]), _mae_1d(embed_dim // 2, grid[1])], axis=1)


@sincos2d_wrong(bug="positions from np.linspace(0, base_size / scale, L): linspace includes its end point, so "
                    "the step is base_size / (L - 1)", classes=("position-transform",), convention="diffusers",
                signature="dim-pair", smallest="2x2:d=4",
                seen="facebookresearch/dino#8 (position grids of the wrong step on resize)")
def linspace_with_endpoint(embed_dim, grid_size, base_size=16, interpolation_scale=1.0):
    height, width = grid_size
    grid_h = np.linspace(0, base_size / interpolation_scale, height)
    grid_w = np.linspace(0, base_size / interpolation_scale, width)
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0)
    return np.concatenate([_mae_1d(embed_dim // 2, grid[0]), _mae_1d(embed_dim // 2, grid[1])], axis=1)


@sincos2d_wrong(bug="a square table of side int(sqrt(H * W)) for a non-square grid, added by broadcasting: "
                    "diffusers' PatchEmbed sizes its table so when pos_embed_max_size is unset",
                classes=("position-transform", "non-square"), convention="diffusers", signature="dim-pair",
                base_size=1.0, smallest="2x2:d=4",
                seen="huggingface/diffusers PatchEmbed.__init__ (grid_size = int(num_patches ** 0.5))")
def square_table_for_any_grid(embed_dim, grid_size):
    height, width = grid_size
    side = int((height * width) ** 0.5)
    grid_h = np.arange(side, dtype=np.float32) / (side / height)
    grid = np.stack(np.meshgrid(grid_h, grid_h), axis=0)
    table = np.concatenate([_mae_1d(embed_dim // 2, grid[0]), _mae_1d(embed_dim // 2, grid[1])], axis=1)
    return np.broadcast_to(table, (height * width, embed_dim)) if table.shape[0] == 1 else table


@sincos2d_wrong(bug="the SD3 crop taken from the top-left corner of the max-size table instead of its centre",
                classes=("position-transform",), convention="sd3", smallest="1x1:d=4",
                seen="huggingface/diffusers PatchEmbed.cropped_pos_embed (top = (max - h) // 2)")
def sd3_crop_top_left(height, width, dim, max_size=192, base_size=64):
    table = torch.cat([_sincos_1d_torch(p, 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4)))
                       for p in _mae_grid_torch(max_size, max_size, base_size)], dim=1).float()
    return table.reshape(max_size, max_size, dim)[:height, :width].reshape(-1, dim)


def _mae_grid_torch(height, width, base_size):
    grid_h = torch.arange(height, dtype=torch.float32) / (height / base_size)
    grid_w = torch.arange(width, dtype=torch.float32) / (width / base_size)
    grid = torch.stack(torch.meshgrid(grid_w, grid_h, indexing="xy"), dim=0)
    return grid[0].reshape(-1).double(), grid[1].reshape(-1).double()


@sincos2d_wrong(bug="the SD3 crop's top taken from the width and left from the height", classes=(
                "position-transform", "non-square"), convention="sd3", smallest="2x3:d=4",
                seen="huggingface/diffusers PatchEmbed.cropped_pos_embed; mkocabas/CoordConv-pytorch#1")
def sd3_crop_offsets_crossed(height, width, dim, max_size=192, base_size=64):
    table = torch.cat([_sincos_1d_torch(p, 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4)))
                       for p in _mae_grid_torch(max_size, max_size, base_size)], dim=1).float()
    top, left = (max_size - width) // 2, (max_size - height) // 2
    return table.reshape(max_size, max_size, dim)[top:top + height, left:left + width].reshape(-1, dim)


@sincos2d_wrong(bug="x normalised by the last row's count: x_embed / (y_embed[:, -1:, :] + eps)",
                classes=("position-transform", "non-square"), convention="detr", smallest="2x2:d=4",
                seen="mkocabas/CoordConv-pytorch#1 (normalised by the other axis's size); "
                     "xiuqhou/Salience-DETR#37 (which cumsum axis is which)")
def detr_x_normalised_by_height(height, width, dim):
    y_embed, x_embed = _detr_embeds(height, width)
    y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6) * 2 * math.pi
    x_embed = x_embed / (y_embed[:, -1:, :] / (2 * math.pi) + 1e-6) * 2 * math.pi
    return torch.cat((_detr_axis(y_embed, dim // 2), _detr_axis(x_embed, dim // 2)), dim=3).permute(0, 3, 1, 2)


@sincos2d_wrong(bug="Deformable DETR's -0.5 applied after the division: (i + 1) / L - 0.5 instead of (i + 0.5) / L",
                classes=("position-transform",), convention="deformable-detr", smallest="2x2:d=4",
                seen="IDEA-Research/DN-DETR#51 (where the -0.5 belongs)")
def deformable_offset_outside(height, width, dim):
    y_embed, x_embed = _detr_embeds(height, width)
    eps, scale = 1e-6, 2 * math.pi
    y_embed = (y_embed / (y_embed[:, -1:, :] + eps) - 0.5) * scale
    x_embed = (x_embed / (x_embed[:, :, -1:] + eps) - 0.5) * scale
    return torch.cat((_detr_axis(y_embed, dim // 2), _detr_axis(x_embed, dim // 2)), dim=3).permute(0, 3, 1, 2)


@sincos2d_wrong(bug="PositionEmbeddingSine built with its default normalize=False: positions 1..L where the "
                    "model was declared normalized to 2 pi", classes=("position-transform",), convention="detr",
                smallest="1x1:d=4", seen="open-mmlab/mmdetection#3850 (PositionEmbeddingSine's normalize and scale)")
def detr_normalize_left_off(height, width, dim):
    y_embed, x_embed = _detr_embeds(height, width)
    return torch.cat((_detr_axis(y_embed, dim // 2), _detr_axis(x_embed, dim // 2)), dim=3).permute(0, 3, 1, 2)


@sincos2d_wrong(bug="positions from not_mask.cumsum (1 .. L) in an MAE-style table: every position one too far",
                classes=("position-transform",), smallest="1x1:d=4",
                seen="facebookresearch/detr PositionEmbeddingSine (cumsum positions start at 1)")
def cumsum_positions_in_mae(height, width, dim):
    ones = torch.ones(height, width)
    y, x = ones.cumsum(0), ones.cumsum(1)
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float32) / (dim // 4))
    return torch.cat([_sincos_1d_torch(x.flatten(), omega), _sincos_1d_torch(y.flatten(), omega)], dim=1)


# -- frequencies ------------------------------------------------------------------------------


@sincos2d_wrong(bug="omega = arange(D/4) / (D/4) where big_vision divides by D/4 - 1: the lowest frequency is "
                    "not 1/10000", classes=("frequency",), convention="big-vision", smallest="2x2:d=8",
                seen="google-research/big_vision posemb_sincos_2d against facebookresearch/mae get_2d_sincos_pos_embed")
def big_vision_without_the_minus_one(height, width, dim):
    y, x = np.mgrid[:height, :width]
    omega = 1.0 / 10000 ** (np.arange(dim // 4) / (dim // 4))
    y, x = np.einsum("m,d->md", y.flatten(), omega), np.einsum("m,d->md", x.flatten(), omega)
    return np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1).astype(np.float32)[None]


@sincos2d_wrong(bug="omega /= embed_dim / 2 with the 2-D embed_dim, not the half's: the exponents stop at 1/2",
                classes=("frequency",), smallest="2x2:d=8",
                seen="jadore801120/attention-is-all-you-need-pytorch#32 (the 1-D exponent over the wrong width)")
def exponent_over_full_width(height, width, dim):
    grid = np.stack(np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32)), axis=0)
    omega = 1.0 / 10000 ** (np.arange(dim // 4, dtype=np.float64) / (dim / 2.0))
    halves = [np.einsum("m,d->md", grid[axis].reshape(-1), omega) for axis in (0, 1)]
    return np.concatenate([f(h) for h in halves for f in (np.sin, np.cos)], axis=1)


@sincos2d_wrong(bug="DETR's dim_t = temperature ** (2 * dim_t / n) without the // 2: a pair's sin and cos get "
                    "different frequencies", classes=("frequency", "layout"), convention="detr", smallest="1x1:d=8",
                seen="shenweichen/DeepCTR#379 and Kyubyong/transformer#38 (2i/d per column, the 1-D slip)")
def detr_dim_t_without_floor(height, width, dim):
    y_embed, x_embed = _detr_normalised(height, width)
    dim_t = 10000 ** (2 * torch.arange(dim // 2, dtype=torch.float32) / (dim // 2))
    pos = [(e[:, :, :, None] / dim_t) for e in (y_embed, x_embed)]
    pos = [torch.stack((p[:, :, :, 0::2].sin(), p[:, :, :, 1::2].cos()), dim=4).flatten(3) for p in pos]
    return torch.cat(pos, dim=3).permute(0, 3, 1, 2)


@sincos2d_wrong(bug="floor division in the exponent, np.arange(D/4) // (D/4): every exponent 0, every "
                    "frequency 1", classes=("frequency",), smallest="2x2:d=8",
                seen="SamLynnEvans/Transformer#25 (integer arithmetic in the exponent, the 1-D slip)")
def exponent_floor_division(height, width, dim):
    omega = 1.0 / 10000 ** (np.arange(dim // 4) // (dim / 4))
    grid = np.stack(np.meshgrid(np.arange(width), np.arange(height)), axis=0)
    halves = [np.einsum("m,d->md", grid[axis].reshape(-1).astype(np.float64), omega) for axis in (0, 1)]
    return np.concatenate([f(h) for h in halves for f in (np.sin, np.cos)], axis=1)


# -- layout ---------------------------------------------------------------------------------


@sincos2d_wrong(bug="both axes' angles concatenated first, then [sin | cos] of the lot: grouped by function where "
                    "MAE groups by axis", classes=("layout",), smallest="1x1:d=4",
                seen="facebookresearch/mae#218 (which half is which)")
def grouped_by_function(height, width, dim):
    grid = np.stack(np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32)), axis=0)
    omega = 1.0 / 10000 ** (np.arange(dim // 4, dtype=np.float64) / (dim / 4))
    angles = np.concatenate([np.einsum("m,d->md", grid[axis].reshape(-1), omega) for axis in (0, 1)], axis=1)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


@sincos2d_wrong(bug="sin and cos interleaved per axis (stack(..., -1).flatten) where MAE concatenates them",
                classes=("layout",), smallest="1x1:d=8",
                seen="facebookresearch/detr PositionEmbeddingSine (the interleaved idiom) against facebookresearch/mae")
def interleaved_where_concat(height, width, dim):
    grid_h, grid_w = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float32) / (dim // 4))
    halves = [torch.outer(g.flatten().float(), omega) for g in (grid_w, grid_h)]
    return torch.cat([torch.stack([h.sin(), h.cos()], dim=-1).flatten(1) for h in halves], dim=1)


@sincos2d_wrong(bug="[cos | sin] per axis: the halves of each 1-D table swapped (a flip_sin_to_cos left on)",
                classes=("layout",), convention="diffusers", signature="dim-pair", smallest="1x1:d=4",
                seen="huggingface/diffusers get_1d_sincos_pos_embed_from_grid(flip_sin_to_cos=True); "
                     "flashinfer-ai/flashinfer#3819")
def flip_sin_to_cos_left_on(embed_dim, grid_size, base_size=16):
    height, width = grid_size
    grid = _mae_grid_torch(height, width, base_size)
    omega = 1.0 / 10000 ** (torch.arange(embed_dim // 4, dtype=torch.float64) / (embed_dim / 4))
    halves = [_sincos_1d_torch(p, omega) for p in grid]
    return torch.cat([torch.cat([h[:, embed_dim // 4:], h[:, :embed_dim // 4]], dim=1) for h in halves], dim=1)


# -- extra tokens and output layout --------------------------------------------------------------


@sincos2d_wrong(bug="cls_token=True alone adds no row: diffusers prepends only when extra_tokens > 0 as well",
                classes=("extra-tokens",), convention="mae-cls", signature="dim-pair", smallest="1x1:d=4",
                seen="huggingface/diffusers get_2d_sincos_pos_embed (if cls_token and extra_tokens > 0)")
def cls_token_without_extra_tokens(embed_dim, grid_size, cls_token=True, extra_tokens=0):
    height, width = grid_size
    grid = np.stack(np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32)), axis=0)
    pos_embed = np.concatenate([_mae_1d(embed_dim // 2, grid[0]), _mae_1d(embed_dim // 2, grid[1])], axis=1)
    if cls_token and extra_tokens > 0:
        pos_embed = np.concatenate([np.zeros([extra_tokens, embed_dim]), pos_embed], axis=0)
    return pos_embed


@sincos2d_wrong(bug="the class token's zero row appended after the patches instead of before them",
                classes=("extra-tokens",), convention="mae-cls", smallest="1x1:d=4",
                seen="facebookresearch/mae models_mae.py (cls_token first: pos_embed[:, 1:] for the patches)")
def cls_row_at_the_end(height, width, dim):
    grid = np.stack(np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32)), axis=0)
    pos_embed = np.concatenate([_mae_1d(dim // 2, grid[0]), _mae_1d(dim // 2, grid[1])], axis=1)
    return np.concatenate([pos_embed, np.zeros([1, dim])], axis=0)


@sincos2d_wrong(bug="DETR's table returned (B, H, W, D): the final permute(0, 3, 1, 2) left out",
                classes=("output-layout",), convention="detr", smallest="1x1:d=4",
                seen="facebookresearch/detr PositionEmbeddingSine (pos.permute(0, 3, 1, 2))")
def detr_channels_last(height, width, dim):
    y_embed, x_embed = _detr_normalised(height, width)
    return torch.cat((_detr_axis(y_embed, dim // 2), _detr_axis(x_embed, dim // 2)), dim=3)


# -- precision and widths ----------------------------------------------------------------------


@sincos2d_wrong(bug="the table built in the model's dtype, float16: positions, dim_t and angles all rounded to "
                    "11 bits", classes=("precision",), convention="detr", smallest="1x7:d=4",
                seen="huggingface/transformers DetrSinePositionEmbedding.build_sine_position_embedding (computes "
                     "in the requested dtype)")
def detr_in_float16(height, width, dim):
    dtype = torch.float16
    y_embed = torch.arange(1, height + 1, dtype=dtype)[None, :, None].expand(1, height, width)
    x_embed = torch.arange(1, width + 1, dtype=dtype)[None, None, :].expand(1, height, width)
    y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6) * (2 * math.pi)
    x_embed = x_embed / (x_embed[:, :, -1:] + 1e-6) * (2 * math.pi)
    dim_t = torch.arange(dim // 2, dtype=torch.int64).to(dtype)
    dim_t = 10000 ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / (dim // 2))
    pos = [(e[:, :, :, None] / dim_t) for e in (y_embed, x_embed)]
    pos = [torch.stack((p[:, :, :, 0::2].sin(), p[:, :, :, 1::2].cos()), dim=4).flatten(3) for p in pos]
    return torch.cat(pos, dim=3).permute(0, 3, 1, 2)


@sincos2d_wrong(bug="a width that is not a multiple of 4 padded with zero columns instead of refused",
                classes=("width",), convention="big-vision", smallest="2x3:d=6",
                seen="NVlabs/Forecasting-Model-Search#7 (odd widths patched instead of refused, the 1-D slip)")
def pads_indivisible_widths(height, width, dim):
    pos_dim = dim // 4
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    omega = 1.0 / 10000 ** (torch.arange(pos_dim) / (pos_dim - 1))
    y, x = y.flatten()[:, None] * omega[None, :], x.flatten()[:, None] * omega[None, :]
    pe = torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1)
    return torch.nn.functional.pad(pe, (0, dim - 4 * pos_dim))
