"""Rotary applies whose pairing and cos/sin layout disagree, as written in public code (the
gate imports this file by path in its children; the tests never import it).

An apply computes ``x cos + rotate(x) sin``: ``rotate`` pairs the features (rotate-half
``(i, i + r/2)``, or rotate-every-two ``(2i, 2i + 1)``), and cos and sin must be laid out for
the same pairing (``cat((freqs, freqs))``, or ``repeat_interleave(freqs, 2)``).
"""

import torch


def _inv_freq(head_dim, base=10000.0):
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


def _rotate_every_two(x):
    """GPT-J's ``rotate_every_two``: ``(x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)``."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def _half_table(positions, head_dim):
    freqs = torch.outer(positions.float(), _inv_freq(head_dim))
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half(x):
    """transformers' ``rotate_half``: ``cat(-x2, x1)`` of the two halves."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_half_with_interleaved_table(x, positions):
    """transformers' rotate-half apply handed cos and sin built in Meta's order,
    ``repeat_interleave(freqs, 2)``; ``x`` is ``(batch, heads, seq, head_dim)``."""
    freqs = torch.outer(positions.float(), _inv_freq(x.shape[-1])).repeat_interleave(2, dim=-1)
    cos, sin = freqs.cos()[None, None].to(x.dtype), freqs.sin()[None, None].to(x.dtype)
    return x * cos + _rotate_half(x) * sin


def every_two_with_half_table(x, positions):
    """An interleaved apply handed transformers' ``[c | c]`` table; ``x`` is ``(batch, seq, heads, head_dim)``."""
    cos, sin = _half_table(positions, x.shape[-1])
    cos, sin = cos[None, :, None, :].to(x.dtype), sin[None, :, None, :].to(x.dtype)
    return x * cos + _rotate_every_two(x) * sin


def every_two_apply(q, k, cos, sin, unsqueeze_dim=1):
    """transformers' ``apply_rotary_pos_emb`` signature with rotate-every-two in place of rotate_half."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + _rotate_every_two(q) * sin, k * cos + _rotate_every_two(k) * sin
