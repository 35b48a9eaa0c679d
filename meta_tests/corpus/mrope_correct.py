"""Correct multi-axis rotary implementations in other idioms than the real code the family's tests
gate: NumPy and torch, complex and real, functions and modules, of positions and of grids.

Each is registered with the declaration it meets (:mod:`meta_tests.corpus.mrope_registry`) and
conforms on the family's whole grid.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .mrope_registry import mrope_correct

_HEAD = {"mrope_preset": "qwen2-vl"}


def _shared_inverse_frequencies(head_dim: int, theta: float) -> torch.Tensor:
    return 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)


@mrope_correct("Qwen2-VL's M-RoPE as transformers writes it: per-axis angles, mrope_section picked by i % 3, "
               "cos and sin concatenated", **_HEAD)
def qwen2_vl_sections(position_ids, head_dim):
    inv_freq = _shared_inverse_frequencies(head_dim, 1e6)
    freqs = position_ids[..., None].float() * inv_freq  # (3, L, head_dim / 2)
    picked = torch.cat([part[i % 3] for i, part in enumerate(freqs.split([16, 24, 24], dim=-1))], dim=-1)
    angles = torch.cat([picked, picked], dim=-1)
    return angles.cos(), angles.sin()


@mrope_correct("Qwen2-VL's M-RoPE in NumPy float64: each slot's axis looked up in a table", **_HEAD)
def qwen2_vl_numpy_lookup(position_ids, head_dim):
    positions = np.asarray(position_ids, dtype=np.float64)
    slot_axis = np.repeat([0, 1, 2], [16, 24, 24])
    inv_freq = 1e6 ** (-np.arange(head_dim // 2) * 2.0 / head_dim)
    angles = positions[slot_axis].T * inv_freq
    return np.concatenate([np.cos(angles)] * 2, axis=1), np.concatenate([np.sin(angles)] * 2, axis=1)


@mrope_correct("Qwen3-VL's interleaved M-RoPE: the h and w slots strided by three over their 3 x section slots",
               mrope_preset="qwen3-vl")
def qwen3_vl_interleaved(position_ids, head_dim):
    inv_freq = _shared_inverse_frequencies(head_dim, 5e6)
    freqs = position_ids[..., None].float() * inv_freq
    mixed = freqs[0].clone()
    for axis, section in ((1, 20), (2, 20)):
        mixed[..., axis:3 * section:3] = freqs[axis, ..., axis:3 * section:3]
    angles = torch.cat([mixed, mixed], dim=-1)
    return angles.cos(), angles.sin()


@mrope_correct("GLM-4V's M-RoPE (8/12/12 sections, theta 10000, interleaved pairs) with einsum and a gather of the "
               "axes",
               mrope_preset="glm-4v")
def glm4v_einsum(position_ids, head_dim):
    inv_freq = _shared_inverse_frequencies(2 * 32, 10000.0)
    owner = torch.repeat_interleave(torch.arange(3), torch.tensor([8, 12, 12]))
    chosen = position_ids.float()[owner]  # (32, L)
    angles = torch.einsum("sl,s->ls", chosen, inv_freq)
    return angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)


class Qwen2VLStyleRotary(torch.nn.Module):
    """A rotary module called as transformers calls its own: ``forward(x, position_ids (3, B, L))``."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.register_buffer("inv_freq", _shared_inverse_frequencies(head_dim, 1e6), persistent=False)

    def forward(self, x, position_ids):
        freqs = position_ids[..., None].float() * self.inv_freq  # (3, B, L, d/2)
        owner = torch.repeat_interleave(torch.arange(3), torch.tensor([16, 24, 24]))
        picked = freqs.gather(0, owner.view(1, 1, 1, -1).expand(1, *freqs.shape[1:])).squeeze(0)
        emb = torch.cat([picked, picked], dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


mrope_correct("a module of Qwen2-VL's M-RoPE whose forward takes transformers' (3, batch, L) position ids",
              signature="x-position-ids", init={"head_dim": "{head_dim}"}, **_HEAD)(Qwen2VLStyleRotary)


@mrope_correct("FLUX's per-axis RoPE as complex freqs_cis (torch.polar per axis, concatenated)",
               mrope_preset="flux")
def flux_complex(position_ids, head_dim):
    parts = []
    for positions, dim in zip(position_ids.double(), (16, 56, 56), strict=True):
        freqs = 1.0 / 10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        angles = torch.outer(positions, freqs)
        parts.append(torch.polar(torch.ones_like(angles), angles))
    return torch.cat(parts, dim=-1).to(torch.complex64)


class FluxStyleIds(torch.nn.Module):
    """FLUX's embedder called with ids ``(L, axes)``, interleaved cos and sin per axis."""

    def __init__(self, axes_dim, theta):
        super().__init__()
        self.axes_dim, self.theta = axes_dim, theta

    def forward(self, ids):
        cos, sin = [], []
        for axis, dim in enumerate(self.axes_dim):
            freqs = self.theta ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
            angles = ids[:, axis].double()[:, None] * freqs
            cos.append(angles.cos().repeat_interleave(2, dim=1))
            sin.append(angles.sin().repeat_interleave(2, dim=1))
        return torch.cat(cos, -1).float(), torch.cat(sin, -1).float()


mrope_correct("a FLUX-style embedder of (L, 3) ids with axes_dim and theta from its constructor",
              signature="ids", init={"axes_dim": "{axes_dim}", "theta": "{theta}"}, mrope_preset="flux")(FluxStyleIds)


class HunyuanStyleVideo(torch.nn.Module):
    """A video rotary module of the patch grid of ``hidden_states`` (B, C, F, H, W), theta 256."""

    def __init__(self, rope_dim):
        super().__init__()
        self.rope_dim = rope_dim

    def forward(self, hidden_states):
        sizes = hidden_states.shape[2:]
        grid = torch.stack(torch.meshgrid(*(torch.arange(n, dtype=torch.float32) for n in sizes), indexing="ij"))
        cos, sin = [], []
        for axis, dim in enumerate(self.rope_dim):
            freqs = 1.0 / 256.0 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
            angles = grid[axis].reshape(-1, 1) * freqs
            cos.append(torch.stack([angles.cos()] * 2, dim=-1).flatten(1))
            sin.append(torch.stack([angles.sin()] * 2, dim=-1).flatten(1))
        return torch.cat(cos, dim=1), torch.cat(sin, dim=1)


mrope_correct("a HunyuanVideo-style module: the grid from hidden_states, per-axis interleaved cos and sin",
              signature="hidden-states", init={"rope_dim": "{axes_dim}"},
              mrope_preset="hunyuan-video")(HunyuanStyleVideo)


class WanStyleTable(torch.nn.Module):
    """Wan's idea in NumPy: one table per axis built once for 1024 positions, sliced by the grid."""

    def __init__(self, head_dim):
        super().__init__()
        spatial = 2 * (head_dim // 6)
        self.dims = (head_dim - 2 * spatial, spatial, spatial)
        self.tables = [np.arange(1024)[:, None] * 10000.0 ** (-np.arange(0, dim, 2) / dim) for dim in self.dims]

    def forward(self, hidden_states):
        frames, height, width = hidden_states.shape[2:]
        grids = np.meshgrid(np.arange(frames), np.arange(height), np.arange(width), indexing="ij")
        angles = np.concatenate([table[grid.reshape(-1)] for table, grid in zip(self.tables, grids, strict=True)],
                                axis=1)
        cos, sin = np.repeat(np.cos(angles), 2, axis=1), np.repeat(np.sin(angles), 2, axis=1)
        return cos[None, :, None], sin[None, :, None]


mrope_correct("a Wan-style module: per-axis tables of 1024 positions sliced by the patch grid, (1, L, 1, D)",
              signature="hidden-states", init={"head_dim": "{head_dim}"}, mrope_preset="wan")(WanStyleTable)


@mrope_correct("CogVideoX's 3-D RoPE of a cropped grid with np.linspace(start, stop, n, endpoint=False)",
               signature="grid-3d", mrope_preset="cogvideox", attention_head_dim=64)
def cogvideox_linspace(embed_dim, crops_coords, grid_size, temporal_size):
    (top, left), (bottom, right) = crops_coords
    along = [np.arange(temporal_size, dtype=np.float64),
             np.linspace(top, bottom, grid_size[0], endpoint=False),
             np.linspace(left, right, grid_size[1], endpoint=False)]
    dims = (embed_dim // 4, embed_dim // 8 * 3, embed_dim // 8 * 3)
    mesh = np.meshgrid(*along, indexing="ij")
    cos, sin = [], []
    for positions, dim in zip(mesh, dims, strict=True):
        angles = positions.reshape(-1, 1) / 10000.0 ** (np.arange(0, dim, 2) / dim)
        cos.append(np.repeat(np.cos(angles), 2, axis=1))
        sin.append(np.repeat(np.sin(angles), 2, axis=1))
    return np.concatenate(cos, axis=1), np.concatenate(sin, axis=1)


@mrope_correct("HunyuanDiT's 2-D RoPE: the first half of the head turned by the column (w), the second by the row",
               signature="grid-2d", mrope_preset="hunyuan-dit", attention_head_dim=64)
def hunyuan_dit_2d(embed_dim, crops_coords, grid_size):
    (top, left), (bottom, right) = crops_coords
    rows = np.linspace(top, bottom, grid_size[0], endpoint=False)
    columns = np.linspace(left, right, grid_size[1], endpoint=False)
    w, h = np.meshgrid(columns, rows)
    half = embed_dim // 2
    freqs = 10000.0 ** (-np.arange(0, half, 2) / half)
    angles = np.concatenate([w.reshape(-1, 1) * freqs, h.reshape(-1, 1) * freqs], axis=1)
    return torch.from_numpy(np.repeat(np.cos(angles), 2, axis=1)), torch.from_numpy(np.repeat(np.sin(angles), 2, 1))


@mrope_correct("Qwen2-VL's vision tower RoPE: h and w frequencies over a quarter of the head each, rotate-half",
               mrope_preset="qwen2-vl-vision", attention_head_dim=40)
def qwen2_vl_vision(position_ids, head_dim):
    quarter = head_dim // 2
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, quarter, 2, dtype=torch.float32) / quarter)
    freqs = torch.cat([torch.outer(position_ids[0].float(), inv_freq), torch.outer(position_ids[1].float(), inv_freq)],
                      dim=-1)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


@mrope_correct("Pixtral's vision tower RoPE in NumPy float64: one inverse frequency over the head, the even-indexed "
               "ones turned by h and the odd-indexed ones by w, each block contiguous, rotate-half",
               mrope_preset="pixtral-vision")
def pixtral_strided(position_ids, head_dim):
    inv_freq = 10000.0 ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    rows, cols = position_ids.numpy().astype(np.float64)
    angles = np.concatenate([np.outer(rows, inv_freq[0::2]), np.outer(cols, inv_freq[1::2])], axis=1)
    return (torch.from_numpy(np.concatenate([np.cos(angles)] * 2, axis=1)),
            torch.from_numpy(np.concatenate([np.sin(angles)] * 2, axis=1)))


@mrope_correct("Cosmos' video RoPE as a function of positions: t's base scaled by its NTK factor rope_scale ** "
               "(dim / (dim - 2)), cat([t, h, w] * 2)", mrope_preset="cosmos")
def cosmos_ntk_bases(position_ids, head_dim):
    spatial = head_dim // 6 * 2
    dims = (head_dim - 2 * spatial, spatial, spatial)
    angles = []
    for positions, dim, scale in zip(position_ids.double(), dims, (2.0, 1.0, 1.0), strict=True):
        base = 10000.0 * scale ** (dim / (dim - 2))
        angles.append(torch.outer(positions, base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)))
    emb = torch.cat(angles * 2, dim=1)
    return emb.cos().float(), emb.sin().float()


@mrope_correct("diffusers-style get_1d_rotary_pos_embed: one axis, interleaved cos and sin",
               signature="get-1d", mrope_preset="rope-1d", attention_head_dim=64)
def one_axis(dim, positions):
    freqs = [math.pow(10000.0, -2 * i / dim) for i in range(dim // 2)]
    angles = positions.double()[:, None] * torch.tensor(freqs, dtype=torch.float64)
    return angles.cos().repeat_interleave(2, 1), angles.sin().repeat_interleave(2, 1)


@mrope_correct("Qwen2-VL's reference get_rope_index in plain Python: text after vision at the vision's largest "
               "position plus one", api="mrope-positions", signature="sequence")
def qwen2_vl_position_ids(token_types, grids, merge=2):
    rows, position, vision = [[], [], []], 0, iter(grids.tolist())
    kinds = token_types.tolist()
    index = 0
    while index < len(kinds):
        if kinds[index] == 0:
            for row in rows:
                row.append(position)
            position, index = position + 1, index + 1
            continue
        t, h, w = next(vision)
        top = position
        for i in range(t):
            for j in range(h // merge):
                for k in range(w // merge):
                    for row, value in zip(rows, (i, j, k), strict=True):
                        row.append(position + value)
                    top = max(top, position + i, position + j, position + k)
        index += t * (h // merge) * (w // merge)
        position = top + 1
    return torch.tensor(rows, dtype=torch.int64)


@mrope_correct("q and k rotated from the position ids: Qwen2-VL's cache and rotate_half in one function",
               api="mrope-apply", signature="x-positions", mrope_preset="qwen2-vl")
def qwen2_vl_apply(x, position_ids):
    cos, sin = qwen2_vl_sections(position_ids, x.shape[-1])
    rotated = torch.cat([-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


@mrope_correct("FLUX's apply in complex arithmetic: view_as_complex of interleaved pairs times freqs_cis",
               api="mrope-apply", signature="x-positions", mrope_preset="flux")
def flux_apply_complex(x, position_ids):
    freqs_cis = flux_complex(position_ids, x.shape[-1])
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs_cis).flatten(-2).to(x.dtype)
