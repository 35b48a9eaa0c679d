"""Multi-axis rotary targets as their authors wrote them (runs in the sealed child; ``init``,
``method`` and ``kwargs``: :mod:`posenc_spec.gate.child.adapters`).

Every request carries the canonical arguments of :mod:`.grid`: ``position_ids`` ``(axes, L)``
int64, ``head_dim``, the grid ``t, h, w`` and its ``crop`` ``(3, 2)``. Signatures::

    positions       fn(position_ids, head_dim)                          the family's own form
    x-position-ids  obj(x, position_ids[:, None, :])                    transformers' Qwen2-VL, Qwen2.5-VL,
                    x: zeros (1, L, head_dim) float32                    Qwen3-VL, GLM-4V rotary embeddings
    ids             obj(ids), ids = position_ids.T as float32 (L, axes)   diffusers' FluxPosEmbed
    x-ids           obj(x, position_ids.T) (int64, (L, axes)), x zeros    transformers' Qwen2VLVisionRotaryEmbedding
                    (1, L, head_dim) float32                             (rope type axial)
    batch-ids       obj(ids[None]), ids = position_ids.T (1, L, axes)    diffusers' Lumina2RotaryPosEmbed
                    int64                                                (method _get_freqs_cis)
    get-1d          fn(head_dim, position_ids[0])                        diffusers' get_1d_rotary_pos_embed
    grid-2d         fn(head_dim, ((top, left), (bottom, right)), (h, w)) diffusers' get_2d_rotary_pos_embed
    grid-3d         fn(head_dim, ((top, left), (bottom, right)), (h, w), t)
                                                                        diffusers' get_3d_rotary_pos_embed
    hidden-states   obj(hidden_states), zeros (1, 1, t pt, h ph, w pw)   diffusers' HunyuanVideo and Wan
                    float32, (pt, ph, pw) the declared mrope_patch        rotary modules
    square-grid     Class(config at image_size = h patch_size)(x),      transformers' Llama4VisionRotaryEmbedding
                    x zeros (1, h w + 1, head_dim) float32 (h = w)       (its patches and a class token)

Apply signatures (``mrope-apply``; ``x`` ``(1, 2, L, head_dim)``, q its head 0, k its head 1)::

    x-positions     fn(x, position_ids) -> x rotated                    the family's own form
    q-k-cos-sin     fn(q, k, cos[None], sin[None]) -> (q', k')            transformers' apply_rotary_pos_emb
                    (cos, sin: the declared cache in x's dtype)           (Qwen2/2.5/3-VL; GLM-4V's own)
    x-cos-sin       fn(x, (cos, sin)) -> x rotated                       diffusers' apply_rotary_emb

``init`` and ``kwargs`` may name ``"{head_dim}"``, ``"{axes_dim}"`` (the features of each axis, a
list), ``"{theta}"`` (the first axis's base) and ``"{patch_size}"``.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np

from posenc_spec.gate.child.adapters import join, pair, quiet

try:
    import torch
except ImportError:
    torch = None


def _number(value: float):
    """A crop end as real code passes it: an int where it is whole."""
    return int(value) if float(value).is_integer() else float(value)


def _crops(crop) -> tuple:
    """``crops_coords``: ``((top, left), (bottom, right))`` from the (t, h, w) rows of ``crop``."""
    values = np.asarray(crop)
    return ((_number(values[1, 0]), _number(values[2, 0])), (_number(values[1, 1]), _number(values[2, 1])))


def _input_ids(types, maker):
    """Token ids for ``types``: the config's image and video token ids where it has them (and its
    vision start token before each vision run), 0 for text, for code that reads ids, not types."""
    config = maker._config() if maker.config_path else None
    ids = torch.zeros_like(types)
    for kind, name in ((1, "image_token_id"), (2, "video_token_id")):
        value = getattr(config, name, None)
        if value is not None:
            ids[types == kind] = value
    start = getattr(config, "vision_start_token_id", None)
    if start is not None:
        before = torch.nonzero((types[0, 1:] != 0) & (types[0, :-1] == 0)).flatten()
        ids[0, before] = start
    return ids


def _cache_calls(maker, patch) -> dict:
    """The ``mrope-cache`` signatures' calls (see the module docstring)."""

    def positions(position_ids, head_dim, t, h, w, crop):
        with quiet(maker):
            return maker(head_dim=head_dim)(position_ids, head_dim)

    def x_position_ids(position_ids, head_dim, t, h, w, crop):
        x = torch.zeros(1, position_ids.shape[1], head_dim)
        with torch.no_grad():
            return maker(head_dim=head_dim)(x, position_ids[:, None, :])

    def ids(position_ids, head_dim, t, h, w, crop):
        with torch.no_grad():
            return maker(head_dim=head_dim)(position_ids.T.to(torch.float32).contiguous())

    def x_ids(position_ids, head_dim, t, h, w, crop):
        x = torch.zeros(1, position_ids.shape[1], head_dim)
        with torch.no_grad():
            return maker(head_dim=head_dim)(x, position_ids.T.contiguous())

    def batch_ids(position_ids, head_dim, t, h, w, crop):
        with quiet(maker):
            return maker(head_dim=head_dim)(position_ids.T[None].contiguous())

    def get_1d(position_ids, head_dim, t, h, w, crop):
        with quiet(maker):
            return maker(head_dim=head_dim)(head_dim, position_ids[0])

    def grid_2d(position_ids, head_dim, t, h, w, crop):
        with quiet(maker):
            return maker(head_dim=head_dim)(head_dim, _crops(crop), (h, w))

    def grid_3d(position_ids, head_dim, t, h, w, crop):
        with quiet(maker):
            return maker(head_dim=head_dim)(head_dim, _crops(crop), (h, w), t)

    def hidden_states(position_ids, head_dim, t, h, w, crop):
        states = torch.zeros(1, 1, t * patch[0], h * patch[1], w * patch[2])
        with torch.no_grad():
            return maker(head_dim=head_dim)(states)

    def square_grid(position_ids, head_dim, t, h, w, crop):
        # The module makes the tokens of its config's image: one config per grid size.
        config = copy.deepcopy(maker._config())
        config.image_size = h * config.patch_size
        with torch.no_grad():
            return maker.target(config)(torch.zeros(1, h * w + 1, head_dim))

    return {"canonical": positions, "positions": positions, "x-position-ids": x_position_ids, "ids": ids,
            "x-ids": x_ids, "batch-ids": batch_ids, "get-1d": get_1d, "grid-2d": grid_2d, "grid-3d": grid_3d,
            "hidden-states": hidden_states, "square-grid": square_grid}


def _position_calls(maker) -> dict:
    """The ``mrope-positions`` signatures' calls."""

    def sequence(token_types, grids):
        with quiet(maker):
            return maker()(token_types, grids)

    def get_rope_index(token_types, grids):
        types = token_types[None]
        runs = [kind for kind, _ in itertools.groupby(token_types.tolist()) if kind]
        images = grids[[k for k, kind in enumerate(runs) if kind == 1]]
        videos = grids[[k for k, kind in enumerate(runs) if kind == 2]]
        with torch.no_grad():
            result = maker()(input_ids=_input_ids(types, maker), mm_token_type_ids=types,
                             image_grid_thw=images if len(images) else None,
                             video_grid_thw=videos if len(videos) else None)
        return result[0][:, 0] if isinstance(result, tuple) else result[:, 0]

    return {"canonical": sequence, "sequence": sequence, "get-rope-index": get_rope_index}


def _apply_calls(maker) -> dict:
    """The ``mrope-apply`` signatures' calls."""

    def x_positions(x, position_ids, *handed):
        with quiet(maker):
            return maker(head_dim=int(x.shape[-1]))(x, position_ids)

    def q_k_cos_sin(x, position_ids, cos, sin):
        with quiet(maker):
            rotated = maker(head_dim=int(x.shape[-1]))(x.narrow(1, 0, 1), x.narrow(1, 1, 1), cos[None], sin[None])
        return join(*pair(rotated), 1)

    def x_cos_sin(x, position_ids, cos, sin):
        with quiet(maker):
            return maker(head_dim=int(x.shape[-1]))(x, (cos, sin))

    return {"canonical": x_positions, "x-positions": x_positions, "q-k-cos-sin": q_k_cos_sin, "x-cos-sin": x_cos_sin}


def adapt(target, how: dict, maker):
    """The canonical call of ``target`` as ``how`` declares it."""
    # A list size ("{axes_dim}") arrives as a JSON list; the core's Maker keys its objects by
    # their arguments, so it is handed over as a tuple (FluxPosEmbed and HunyuanVideo index it).
    maker.sizes = {name: tuple(value) if isinstance(value, list) else value for name, value in maker.sizes.items()}
    api = how.get("api")
    if api == "mrope-apply":
        calls = _apply_calls(maker)
    elif api == "mrope-positions":
        calls = _position_calls(maker)
    else:
        calls = _cache_calls(maker, tuple(how.get("mrope_patch") or (1, 1, 1)))
    return calls[how.get("signature") or "canonical"]
