"""Rotary targets as their authors wrote them (runs in the sealed child; see
:mod:`posenc_spec.gate.child.adapters` for ``init``, ``method`` and ``kwargs``).

``q`` and ``k`` are the first and second heads of the gate's ``x``; the rotated pair comes
back as one ``x`` again. Signatures (:mod:`posenc_spec.gate.signatures` lists them):
``q-k-cos-sin`` (transformers' ``apply_rotary_pos_emb``, ``unsqueeze_dim=2`` for bshd),
``xq-xk-freqs-cis`` (Meta's ``apply_rotary_emb``), ``x-offset`` (rotary-embedding-torch's
``rotate_queries_or_keys``, one call per run of consecutive positions) and ``x-input-pos``
(torchtune's ``RotaryPositionalEmbeddings``).
"""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.child.adapters import canonical, is_as_written, join, pair, plain, quiet
from posenc_spec.gate.child.described import Described

try:
    import torch
except ImportError:
    torch = None

# Where each x layout keeps its heads (q and k are head 0 and head 1 of the gate's x) and
# its sequence.
HEAD_AXIS = {"bhsd": 1, "bshd": 2}
SEQ_AXIS = {"bhsd": 2, "bshd": 1}


def _split(x, layout: str):
    axis = HEAD_AXIS[layout]
    return x.narrow(axis, 0, 1), x.narrow(axis, 1, 1), axis


def _runs(positions: np.ndarray):
    """``(first index, end index, first position)`` of each run of consecutive positions."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [positions.size]])
    return [(int(start), int(end), int(positions[start])) for start, end in zip(starts, ends, strict=True)]


def _sizes(arguments) -> dict:
    """The sizes of a canonical call that ``init`` may name."""
    first = arguments[0] if arguments else None
    if hasattr(first, "shape") and len(first.shape) >= 3:  # x first: rope-apply, an x-positions cache
        return {"head_dim": int(first.shape[-1])}
    if len(arguments) == 2 and isinstance(first, int):  # a length cache: fn(L, D)
        return {"num_positions": first, "head_dim": arguments[1]}
    return {"head_dim": arguments[-1]}  # fn(D), fn(positions, D)


def _cache_roles(arguments) -> dict:
    """A cache call's roles, from its canonical arguments: ``(L, D)`` (a length call),
    ``(x, positions)`` or ``(positions, D)``; ``num_positions`` the length the positions need."""
    first = arguments[0]
    if isinstance(first, int):
        return {"positions": torch.arange(first), "num_positions": first, "head_dim": arguments[1],
                "dtype": torch.float32}
    if first.dim() >= 3:
        x, positions = arguments
        roles = {"x": x, "positions": positions, "head_dim": int(x.shape[-1]), "dtype": x.dtype}
    else:
        positions, head_dim = arguments
        roles = {"positions": positions, "head_dim": head_dim, "dtype": torch.float32}
    return {**roles, "num_positions": int(positions.max()) + 1 if positions.numel() else 0}


def described(target, how: dict):
    """The canonical call of a target declared with a call description (``how["call"]``): the
    roles of :data:`~posenc_spec.families.rope.keys.NAMES` from the canonical arguments; a call
    handing ``q`` and ``k`` returns the pair, joined back into one ``x``."""
    made = Described(target, how["call"])
    sizes = how.get("sizes") or {}
    declared = {"base": sizes.get("base"), "max_positions": sizes.get("max_positions")}
    api, layout = how.get("api"), how.get("x_layout")
    splits = any(argument == ["role", role] for step in how["call"] if step[0] == "call"
                 for argument in (*step[1], *step[2].values()) for role in ("q", "k"))
    if api == "rope-freqs":
        return lambda head_dim: made({"head_dim": head_dim, **declared})
    if api == "rope-cache":
        return lambda *arguments: made({**declared, **_cache_roles(arguments)})

    def apply(x, positions, *handed):
        roles = {"x": x, "positions": positions, "head_dim": int(x.shape[-1]), "dtype": x.dtype, **declared,
                 **dict(zip(("freqs_cis",) if len(handed) == 1 else ("cos", "sin"), handed, strict=False))}
        if not splits:
            return made(roles)
        q, k, axis = _split(x, layout)
        return join(*pair(made({**roles, "q": q, "k": k})), axis)

    return apply


def adapt(target, how: dict, maker):
    """The canonical rotary call of ``target`` as ``how`` declares it."""
    signature = how.get("signature") or "canonical"
    if is_as_written(signature, maker):
        return target
    if how.get("call"):
        return described(target, how)
    layout = how.get("x_layout")

    def q_k_cos_sin(x, positions, cos, sin):
        q, k, axis = _split(x, layout)
        with quiet(maker):
            call = maker(head_dim=int(x.shape[-1]))
            result = call(q, k, cos, sin) if layout == "bhsd" else call(q, k, cos, sin, unsqueeze_dim=2)
        return join(*pair(result), axis)

    def xq_xk_freqs_cis(x, positions, freqs_cis):
        q, k, axis = _split(x, layout)
        with quiet(maker):
            return join(*pair(maker(head_dim=int(x.shape[-1]))(q, k, freqs_cis)), axis)

    def x_offset(x, positions):
        axis = SEQ_AXIS[layout]
        with quiet(maker):
            call = maker(head_dim=int(x.shape[-1]))
            pieces = [plain(call(x.narrow(axis, start, end - start), offset=offset))
                      for start, end, offset in _runs(positions.numpy())]
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=axis)

    def x_input_pos(x, positions):
        input_pos = positions if positions.dim() == 2 else positions[None]  # (batch, seq): a row each
        with quiet(maker):
            return maker(head_dim=int(x.shape[-1]))(x, input_pos=input_pos)

    return {"canonical": canonical(maker, _sizes), "q-k-cos-sin": q_k_cos_sin, "xq-xk-freqs-cis": xq_xk_freqs_cis,
            "x-offset": x_offset, "x-input-pos": x_input_pos}[signature]
