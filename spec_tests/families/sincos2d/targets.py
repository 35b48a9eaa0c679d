"""Small 2-D sincos targets the family's gate tests declare: MAE's table written plainly (it
refuses widths that are not multiples of 4), the same with its halves swapped (the row
coordinate first, as ``meshgrid(grid_h, grid_w)`` gives), and a module whose ``forward``
takes a feature map, as SAM 2's and Mask2Former's ``PositionEmbeddingSine`` do."""

import numpy as np
import torch


def _one_axis(positions, half):
    omega = 1.0 / 10000.0 ** (np.arange(half // 2) / (half / 2))
    angles = np.outer(positions, omega)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def mae(height, width, dim):
    if dim % 4:
        raise ValueError(f"embed_dim must be a multiple of 4, got {dim}")
    rows, cols = np.meshgrid(np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64), indexing="ij")
    return np.concatenate([_one_axis(cols.ravel(), dim // 2), _one_axis(rows.ravel(), dim // 2)], axis=1)


def rows_first(height, width, dim):
    if dim % 4:
        raise ValueError(f"embed_dim must be a multiple of 4, got {dim}")
    rows, cols = np.meshgrid(np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64), indexing="ij")
    return np.concatenate([_one_axis(rows.ravel(), dim // 2), _one_axis(cols.ravel(), dim // 2)], axis=1)


class FeatureMapSine(torch.nn.Module):
    """``forward(x)`` with ``x`` of shape ``(B, C, H, W)``: DETR's normalised table, ``(B, D, H, W)``."""

    def __init__(self, num_pos_feats=64, temperature=10000):
        super().__init__()
        self.num_pos_feats, self.temperature = num_pos_feats, temperature

    def forward(self, x):
        if self.num_pos_feats % 2:
            raise ValueError(f"num_pos_feats must be even, got {self.num_pos_feats}")
        ones = torch.ones(x.shape[0], x.shape[2], x.shape[3])
        y_embed, x_embed = ones.cumsum(1), ones.cumsum(2)
        y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6) * 2 * np.pi
        x_embed = x_embed / (x_embed[:, :, -1:] + 1e-6) * 2 * np.pi
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x, pos_y = x_embed[:, :, :, None] / dim_t, y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


def mae_cos_first(height, width, dim):
    """MAE's table with each half's cosines first, as diffusers' ``flip_sin_to_cos=True`` gives."""
    if dim % 4:
        raise ValueError(f"embed_dim must be a multiple of 4, got {dim}")
    rows, cols = np.meshgrid(np.arange(height, dtype=np.float64), np.arange(width, dtype=np.float64), indexing="ij")
    halves = [_one_axis(axis.ravel(), dim // 2) for axis in (cols, rows)]
    return np.concatenate([np.roll(half, dim // 4, axis=1) for half in halves], axis=1)
