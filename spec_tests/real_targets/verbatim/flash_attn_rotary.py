# flash-attn's rotary embedding (Dao-AILab/flash-attention, flash_attn/layers/rotary.py, v2.x):
# rotate_half and apply_rotary_emb_torch, its pure-PyTorch reference of the Triton kernel,
# transcribed for these tests (not checked byte for byte against the upstream file). flash-attn does not install without CUDA, so apply_rotary_emb keeps the
# public function's signature (x, cos, sin, interleaved, inplace, seqlen_offsets, cu_seqlens,
# max_seqlen) and computes through the reference; only the default offsets and no varlen
# batches are taken here. BSD 3-Clause License, Copyright (c) 2022, Tri Dao.
import torch
from einops import rearrange, repeat


def rotate_half(x, interleaved=False):
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    else:
        x1, x2 = x[..., ::2], x[..., 1::2]
        return rearrange(torch.stack((-x2, x1), dim=-1), "... d two -> ... (d two)", two=2)


def apply_rotary_emb_torch(x, cos, sin, interleaved=False):
    """
    x: (batch_size, seqlen, nheads, headdim)
    cos, sin: (seqlen, rotary_dim / 2) or (batch_size, seqlen, rotary_dim / 2)
    """
    ro_dim = cos.shape[-1] * 2
    assert ro_dim <= x.shape[-1]
    cos = repeat(cos, "... d -> ... 1 (2 d)" if not interleaved else "... d -> ... 1 (d 2)")
    sin = repeat(sin, "... d -> ... 1 (2 d)" if not interleaved else "... d -> ... 1 (d 2)")
    return torch.cat(
        [x[..., :ro_dim] * cos + rotate_half(x[..., :ro_dim], interleaved) * sin, x[..., ro_dim:]],
        dim=-1,
    )


def apply_rotary_emb(x, cos, sin, interleaved=False, inplace=False, seqlen_offsets=0, cu_seqlens=None,
                     max_seqlen=None):
    assert seqlen_offsets == 0 and cu_seqlens is None, "the reference takes no offsets or varlen batches"
    return apply_rotary_emb_torch(x, cos, sin, interleaved)
