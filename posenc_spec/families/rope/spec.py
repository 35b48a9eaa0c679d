"""A RoPE declaration: the convention, the head size, and how the target's API is shaped.

Keys (the shared vocabulary's where families share a concept, docs/keys.md; else Hugging
Face names where Hugging Face has one; every one also a ``--`` flag)::

    model_config           a Hugging Face config.json (its keys are read, explicit keys win)
    base                   the base, Hugging Face's rope_theta (default 10000)
    rope_type              default | linear | dynamic | yarn | llama3 | longrope | proportional
    layer_type             one entry of a per-layer-type rope_parameters (Gemma 3/4)
    rope_parameters        that type's parameters (a table; --rope-param KEY=VALUE on the command line)
    partial_rotary_factor  default 1.0: rotary_dim = int(head_dim * factor)
    rotary_dim             or the rotated size itself (GPT-J, CodeGen)
    rotary_features        first (default) | last (DeepSeek-V3)
    attention_factor       in-cache (default: A multiplies cos/sin) | separate
    layout                 half (default) | interleaved: the pairs (i, i + r/2) or (2i, 2i + 1)
    cache_layout           half (default) | interleaved | compact            (rope-cache)
    cache_form             cos-sin (default) | complex | angles | sin-cos-cat | cos-sin-cat | stacked
    cache_call             positions (default) | batched | length | x-positions
    x_layout               bshd (default) | bhsd | sbhd | thd                (rope-apply)
    head_dim               the model's head size: the grid then uses only it
    max_positions          the model's max_position_embeddings

The cache's ``cache_layout`` applies to each of cos and sin (``compact`` is ``(L, r/2)``);
a ``complex`` or ``stacked`` cache is compact by nature.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from posenc_spec.families.rope.config import RopeConfigError, parse_rope_param, read_config
from posenc_spec.families.rope.conventions import (
    ATTENTION_FACTOR_PLACEMENTS,
    ROPE_TYPES,
    ROTARY_FEATURES,
    RopeConvention,
)
from posenc_spec.families.rope.grid import LONGEST
from posenc_spec.families.rope.oracle import LAYOUTS as ROPE_LAYOUTS
from posenc_spec.families.rope.tolerance import rope_frequency_error
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import choice, integer, number
from posenc_spec.tolerance import DEFAULT_ANGLE_DTYPE, UNIT_ROUNDOFF

CACHE_LAYOUTS = ("half", "interleaved", "compact")
CACHE_FORMS = ("cos-sin", "complex", "angles", "sin-cos-cat", "cos-sin-cat", "stacked")
CACHE_CALLS = ("positions", "batched", "length", "x-positions")
X_LAYOUTS = ("bshd", "bhsd", "sbhd", "thd")
GRID_HEAD_DIMS = (8, 64, 128)
MAX_HEAD_DIM = 4096


@dataclass(frozen=True)
class RopeSpec:
    """What a RoPE target is declared to compute and how its API is shaped."""

    convention: RopeConvention
    head_dims: tuple[int, ...] = GRID_HEAD_DIMS
    rope_layout: str = "half"
    cache_layout: str = "half"
    cache_form: str = "cos-sin"
    cache_call: str = "positions"
    x_layout: str = "bshd"
    config: str | None = None
    layer_type: str | None = None

    def describe(self) -> str:
        conv = self.convention
        parts = [conv.describe(), f"{self.rope_layout} pairs"]
        if len(self.head_dims) == 1:
            parts.append(f"head_dim {self.head_dims[0]}")
        return ", ".join(parts)

    @property
    def preset(self) -> str:
        return self.convention.rope_type

    def as_dict(self) -> dict:
        return {**self.convention.as_dict(), "head_dims": list(self.head_dims), "rope_layout": self.rope_layout,
                "cache_layout": self.cache_layout, "cache_form": self.cache_form, "cache_call": self.cache_call,
                "x_layout": self.x_layout, "config": self.config, "layer_type": self.layer_type, "odd": "skip"}

    def header_parts(self) -> list[str]:
        return [self.describe()]  # a rotary head size is even by definition: no odd widths

    def child_sizes(self) -> dict:
        return {"base": self.convention.theta, "rope_theta": self.convention.theta}

    def child_options(self) -> dict:
        return {"x_layout": self.x_layout, "config": self.config}


def _rope_parameters(name, value) -> dict:
    """A table, or ``KEY=VALUE`` texts (the command line's repeated ``--rope-param``)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, tuple)):
        table = {}
        for item in value:
            try:
                key, parsed = parse_rope_param(item)
            except RopeConfigError as error:
                raise UsageError(f"{name}: {error}") from None
            if key in table:
                raise UsageError(f"{name}: {key!r} given twice")
            table[key] = parsed
        return table
    raise UsageError(f"{name} must be a table of that type's parameters, got {value!r}")


def valid_head_dim(name: str, value) -> int:
    """A head size as ``name`` (a key or flag) gives it: an even integer from 2 to :data:`MAX_HEAD_DIM`."""
    size = integer(name, value, minimum=2, maximum=MAX_HEAD_DIM)
    if size % 2:
        raise UsageError(f"{name} must be even, got {size}")
    return size


def rope_spec(keys: dict, base_dir, name, max_positions=None, where="") -> RopeSpec:
    """The :class:`RopeSpec` of the RoPE keys in ``keys``; ``name(key)`` names a key in
    messages, ``where`` prefixes the others."""
    head_dim = valid_head_dim(name("head_dim"), keys["head_dim"]) if "head_dim" in keys else None
    layout = choice(name("layout"), keys["layout"], ROPE_LAYOUTS) if "layout" in keys else None
    config_path = layer_type = None
    overrides = _overrides(keys, name, max_positions)
    try:
        if "model_config" in keys:
            config_path, layer_type = _path(keys["model_config"], base_dir, name), keys.get("layer_type")
            if head_dim is not None:
                overrides["head_dim"] = head_dim
            model = read_config(config_path, layer_type, overrides)
            convention = model.convention
            head_dim = head_dim or valid_head_dim(f"{name('model_config')}: head_dim", model.head_dim)
            layout = layout or model.layout
        else:
            if "layer_type" in keys:
                raise UsageError(f"{name('layer_type')} goes with a rope config (it picks one of its layer types)")
            convention = _convention(overrides)
        head_dims = (head_dim,) if head_dim else GRID_HEAD_DIMS
        for size in head_dims:
            _refuse_infinite_angles(convention, size, max_positions, where)
    except UsageError:
        raise
    except RopeConfigError as error:
        raise UsageError(f"{name('model_config')}: {error}") from None
    except (ValueError, TypeError) as error:
        raise UsageError(f"{where}the rotary convention: {error}") from None
    return RopeSpec(
        convention, head_dims, layout or "half",
        cache_layout=choice(name("cache_layout"), keys.get("cache_layout", "half"), CACHE_LAYOUTS),
        cache_form=choice(name("cache_form"), keys.get("cache_form", "cos-sin"), CACHE_FORMS),
        cache_call=choice(name("cache_call"), keys.get("cache_call", "positions"), CACHE_CALLS),
        x_layout=choice(name("x_layout"), keys.get("x_layout", "bshd"), X_LAYOUTS),
        config=config_path, layer_type=layer_type)


# The x layouts each rotary signature can split or cut (the others take any).
SIGNATURE_LAYOUTS = {"q-k-cos-sin": ("bhsd", "bshd"), "xq-xk-freqs-cis": ("bhsd", "bshd"), "x-offset": ("bhsd",)}
# The roles of a call description that split x into its heads (q and k) or broadcast over them (freqs_cis).
SPLITTING_ROLES = frozenset({"q", "k", "freqs_cis"})
# The rotary signatures whose calls carry the convention's own cos/sin or freqs_cis.
WITH_ROTATION = ("q-k-cos-sin", "xq-xk-freqs-cis")


# |cos a - cos b| and |sin a - sin b| never exceed 2 (and |a - b|): where the bound on an angle
# reaches 2 rad, a cache element within its tolerance may hold any value in [-|A|, |A|].
VACUOUS_ANGLE_BOUND = 2.0


def _frequencies(convention, head_dim: int, seq_len) -> tuple[np.ndarray, float]:
    """The convention's frequencies and attention factor at ``seq_len``, an infinite one
    where float arithmetic passes float64 (dynamic's base at a huge factor)."""
    try:
        frequencies, factor = convention.frequencies(head_dim, seq_len)
    except OverflowError:
        return np.array([math.inf]), math.inf
    return np.asarray(frequencies, dtype=np.float64), factor


def _refuse_infinite_angles(convention, head_dim: int, max_positions, where: str) -> None:
    """A UsageError where the declared convention's angles at the grid's farthest position
    (or its frequencies, or its attention factor) are not finite float64s, or where the
    tolerance of every rotated pair's float32 angle at position 1 reaches
    :data:`VACUOUS_ANGLE_BOUND` (at the original length and the farthest position alike):
    no table can be judged against them (a cache of cos 1 and sin 0 would pass).
    :meth:`~.conventions.RopeConvention.frequencies` itself refuses an odd head, an odd or
    zero rotary size and short factor lists."""
    farthest = max(LONGEST, max_positions or 0)
    frequencies, factor = _frequencies(convention, head_dim, farthest)
    with np.errstate(over="ignore", invalid="ignore"):
        angles = farthest * frequencies
    if not (np.isfinite(angles).all() and np.isfinite(factor)):
        raise UsageError(f"{where}the rotary convention {convention.describe()} gives angles or an attention "
                         f"factor that are not finite at head_dim {head_dim}, position {farthest}: no table can be "
                         "judged against it")
    bound = min(_position_one_bound(convention, head_dim, seq_len) for seq_len in (farthest, None))
    if bound >= VACUOUS_ANGLE_BOUND:
        raise UsageError(f"{where}the rotary convention {convention.describe()} leaves every rotated pair's angle "
                         f"uncertain by at least {bound:.3g} rad from position 1 on at head_dim {head_dim} (float32): "
                         "any cos and sin would pass, so no table can be judged against it")


def _position_one_bound(convention, head_dim: int, seq_len) -> float:
    """The smallest bound, over the rotated pairs, on a float32 angle at position 1 (R1 and
    R3 of :mod:`.tolerance`: ``(delta_i + u_a) f'_i``); 0 where nothing rotates (the
    identity is then what every check asks, and it is judged exactly)."""
    frequencies = _frequencies(convention, head_dim, seq_len)[0]
    relative = rope_frequency_error(convention, head_dim, seq_len) + UNIT_ROUNDOFF[DEFAULT_ANGLE_DTYPE]
    with np.errstate(over="ignore", invalid="ignore"):
        bounds = relative * frequencies
    rotated = bounds[frequencies > 0]
    return float(rotated.min()) if rotated.size else 0.0


# What a call description's roles ask of the grid (docs/declaring.md, "Call descriptions"): the
# cache call whose arguments hold them, and the signature whose apply calls hand the same.
CACHE_CALL_OF_ROLES = (("x", "x-positions"), ("positions", "positions"), ("num_positions", "length"))
APPLY_SIGNATURE_OF_ROLES = (("freqs_cis", "xq-xk-freqs-cis"), ("cos", "q-k-cos-sin"), ("sin", "q-k-cos-sin"),
                            ("positions", "x-input-pos"), ("q", "q-k-cos-sin"), ("k", "q-k-cos-sin"))


def grid_signature(calling, api: str) -> str:
    """The signature whose calls the grid makes: the declared one, or for a call description
    the one handing the same arguments (:data:`APPLY_SIGNATURE_OF_ROLES`)."""
    if calling.form is None or api != "rope-apply":
        return calling.signature
    return next((signature for role, signature in APPLY_SIGNATURE_OF_ROLES if role in calling.roles), "x-positions")


def _cache_call(keys: dict, context) -> str | None:
    """The cache call a description's roles need (None: no description, or another API); a
    declared ``cache_call`` must agree (``batched`` is a ``positions`` call with a batch axis)."""
    if context.calling.form is None or context.api != "rope-cache":
        return None
    role, needed = next(((role, call) for role, call in CACHE_CALL_OF_ROLES if role in context.calling.roles),
                        (None, None))
    if needed is None:
        raise UsageError(f"{context.name('call')}: a rope-cache call hands positions, num_positions or x (the rows "
                         "of the cache follow them)")
    declared = keys.get("cache_call")
    if declared is not None and declared != needed and (declared, needed) != ("batched", "positions"):
        raise UsageError(f"{context.name('cache_call')}: the call hands {role}, as a {needed!r} cache call does, "
                         f"got {declared!r}")
    return declared or needed


def declare(keys: dict, context) -> RopeSpec:
    """The :class:`RopeSpec` of a rotary declaration's keys, its x layout one its signature takes."""
    cache_call = _cache_call(keys, context)
    if cache_call is not None:
        keys = {**keys, "cache_call": cache_call}
    if context.calling.form is not None and context.api == "rope-apply" and not (
            {role for role, _ in APPLY_SIGNATURE_OF_ROLES} & context.calling.roles):
        # Its calls would be judged on positions the target never received.
        raise UsageError(f"{context.name('call')}: a rope-apply call hands the positions, cos and sin, or freqs_cis "
                         "(the rotation follows them); one that hands x alone rotates by positions the gate cannot "
                         "choose (pass them, e.g. layer(x, positions=positions))")
    spec = rope_spec(keys, context.base_dir, context.name, context.max_positions, context.where)
    signature = grid_signature(context.calling, context.api)
    split = sorted(SPLITTING_ROLES & context.calling.roles)
    if context.calling.form is None:
        layouts, what = SIGNATURE_LAYOUTS.get(signature), f"the {signature} signature"
    else:
        layouts, what = (SIGNATURE_LAYOUTS["q-k-cos-sin"] if split else None), f"a call handing {', '.join(split)}"
    if layouts is not None and spec.x_layout not in layouts:
        raise UsageError(f"{context.name('x_layout')}: {what} takes x as {' or '.join(layouts)}, got "
                         f"{spec.x_layout!r}")
    return spec


# The config reader's (Hugging Face's) name of a key's field, where the key is named otherwise.
CONFIG_NAMES = {"base": "rope_theta"}


def _overrides(keys: dict, name, max_positions) -> dict:
    """The convention's fields the keys state, validated, under the names the config reader takes."""
    validators = {
        "rope_type": lambda key, value: choice(key, value, ROPE_TYPES),
        "base": lambda key, value: number(key, value, above=0),
        "partial_rotary_factor": lambda key, value: number(key, value, above=0, maximum=1),
        "rotary_dim": lambda key, value: integer(key, value, minimum=2, maximum=MAX_HEAD_DIM),
        "rotary_features": lambda key, value: choice(key, value, ROTARY_FEATURES),
    }
    overrides = {CONFIG_NAMES.get(key, key): check(name(key), keys[key]) for key, check in validators.items()
                 if key in keys}
    if "attention_factor" in keys:
        overrides["attention_factor_placement"] = choice(name("attention_factor"), keys["attention_factor"],
                                                         ATTENTION_FACTOR_PLACEMENTS)
    if max_positions is not None:
        overrides["max_position_embeddings"] = max_positions
    if "rope_parameters" in keys:
        overrides.update(_rope_parameters(name("rope_parameters"), keys["rope_parameters"]))
    return overrides


def _path(value, base_dir, name) -> str:
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise UsageError(f"{name('model_config')} must be a file path, got {value!r}")
    return str(Path(value) if Path(value).is_absolute() or base_dir is None else Path(base_dir) / value)


def _convention(overrides: dict) -> RopeConvention:
    fields = {"rope_type": overrides.pop("rope_type", "default"), "theta": overrides.pop("rope_theta", 10000.0)}
    for key in ("partial_rotary_factor", "rotary_dim", "max_position_embeddings", "rotary_features",
                "attention_factor_placement"):
        if key in overrides:
            fields[key] = overrides.pop(key)
    return RopeConvention(params=overrides, **fields)
