"""Read the RoPE convention of a Hugging Face ``config.json``.

Three shapes are found on the hub and in transformers 5:

- ``rope_parameters = {"rope_type": ..., "rope_theta": ..., <type keys>}`` (transformers 5);
- the same nested by layer type (``{"full_attention": {...}, "sliding_attention": {...}}``,
  Gemma 3 and 4): the caller names the ``layer_type``;
- the older top-level ``rope_theta`` with a ``rope_scaling`` dict whose type key is
  ``rope_type`` or ``type`` (``"su"`` is Phi-3's early name for ``longrope``); as in
  transformers, a non-empty ``rope_scaling`` wins over ``rope_parameters``.

As in transformers, ``rope_theta`` and ``partial_rotary_factor`` may sit beside the RoPE dict
(GPT-NeoX spells them ``rotary_emb_base`` and ``rotary_pct``); llama3, yarn and longrope take
``original_max_position_embeddings`` from the top level when it is there (Phi-3), else from the
RoPE dict, else ``max_position_embeddings``. The head size is ``head_dim``, else
``hidden_size // num_attention_heads``; Gemma 4's full-attention layers use ``global_head_dim``;
DeepSeek's MLA heads (``qk_rope_head_dim``) rotate the last ``qk_rope_head_dim`` of
``qk_nope_head_dim + qk_rope_head_dim`` features; GPT-J states an absolute ``rotary_dim``.

Overrides use the same names (``rope_type``, ``rope_theta``, ``factor``, ``head_dim``, ...,
plus the convention's ``rotary_dim``, ``rotary_features``, ``attention_factor_placement`` and
``layout``) and win over the file; an override of ``None`` removes a key.
:func:`parse_rope_param` turns ``NAME=VALUE`` text (VALUE in JSON) into one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from posenc_spec.families.rope.conventions import ROPE_TYPES, TYPE_KEYS, RopeConvention
from posenc_spec.families.rope.oracle import LAYOUTS
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.user_files import parse_json, read_json
from posenc_spec.text import one_line

TYPE_ALIASES = {"su": "longrope"}
_FIELD_NAMES = {"rope_type", "rope_theta", "partial_rotary_factor", "head_dim", "max_position_embeddings",
                "rotary_dim", "rotary_features", "attention_factor_placement", "layout"}
_TYPE_PARAMETERS = {name for required, optional in TYPE_KEYS.values() for name in required + optional}
_LENGTH_FROM_TOP = ("llama3", "yarn", "longrope")
MAX_CONFIG_BYTES = 1 << 22  # a config.json is kilobytes; this leaves room for long label lists
MAX_SHOWN = 80  # characters of a NAME=VALUE text a message quotes


class RopeConfigError(ValueError):
    """A config that does not state a usable RoPE convention; the message names the file."""


@dataclass(frozen=True)
class RopeModelConfig:
    """What a config states: the convention, the head size, and the layout when it says so."""

    convention: RopeConvention
    head_dim: int
    source: str
    layer_type: str | None = None
    layout: str | None = None  # "interleaved" or "half" from ``rope_interleave``; None: not stated

    def as_dict(self) -> dict:
        return {"convention": self.convention.as_dict(), "head_dim": self.head_dim, "source": self.source,
                "layer_type": self.layer_type, "layout": self.layout}


def parse_rope_param(text: str) -> tuple[str, object]:
    """``"factor=8"`` -> ``("factor", 8)``: NAME=VALUE with VALUE in JSON (``truncate=false``,
    ``short_factor=[1, 1.5]``, ``rope_type="yarn"``), nested at most as deep as a file's
    JSON may be (:func:`~posenc_spec.gate.user_files.parse_json`)."""
    text = str(text)
    name, sep, value = text.partition("=")
    name = name.strip()
    shown = repr(one_line(text, MAX_SHOWN))
    if not sep or not name.isidentifier():
        raise RopeConfigError(f"rope parameter {shown} must be NAME=VALUE, e.g. factor=8")
    try:
        return name, parse_json(value, f"rope parameter {shown}")
    except UsageError as error:
        hint = '; strings need quotes: rope_type="yarn"' if value.strip().isidentifier() else ""
        raise RopeConfigError(f"{error}{hint}") from None


def _load(source) -> tuple[dict, str]:
    if isinstance(source, Mapping):
        return dict(source), "<config dict>"
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path or a dict, got {type(source).__name__}")
    name = os.fspath(source)
    try:
        data = read_json(name, MAX_CONFIG_BYTES, "Hugging Face config")
    except UsageError as error:
        raise RopeConfigError(str(error)) from None
    if not isinstance(data, dict):
        raise RopeConfigError(f"{name}: the JSON is a {type(data).__name__}, not an object")
    return data, name


def _first(*values):
    """The first value that is not None (a config's null means absent, as in transformers)."""
    return next((value for value in values if value is not None), None)


def _is_nested(parameters: dict) -> bool:
    return bool(parameters) and not {"rope_type", "type", "rope_theta"} & set(parameters) \
        and all(value is None or isinstance(value, dict) for value in parameters.values())


def _rope_dict(data: dict, name: str, layer_type) -> tuple[dict, bool]:
    """The RoPE dict the config states for ``layer_type``, and whether it came nested."""
    parameters = data.get("rope_scaling") or data.get("rope_parameters") or {}  # transformers' precedence
    if not isinstance(parameters, dict):
        raise RopeConfigError(f"{name}: rope_parameters must be an object, got {parameters!r}")
    if not _is_nested(parameters):
        return dict(parameters), False
    found = ", ".join(parameters)
    if layer_type is None:
        raise RopeConfigError(f"{name}: rope_parameters has one entry per layer type ({found}); name a layer_type")
    if layer_type not in parameters:
        raise RopeConfigError(f"{name}: no layer type {layer_type!r} in rope_parameters; found: {found}")
    if parameters[layer_type] is None:
        raise RopeConfigError(f"{name}: layer type {layer_type!r} has no RoPE (its rope_parameters entry is null)")
    return dict(parameters[layer_type]), True


def _head_dim(data: dict, name: str, layer_type: str | None) -> tuple[int, dict]:
    """The head size and the placement fields it implies (DeepSeek's MLA, GPT-J)."""
    fields = {}
    if data.get("qk_rope_head_dim") is not None:
        fields = {"rotary_dim": data["qk_rope_head_dim"], "rotary_features": "last"}
        return data.get("qk_nope_head_dim", 0) + data["qk_rope_head_dim"], fields
    if data.get("rotary_dim") is not None:
        fields["rotary_dim"] = data["rotary_dim"]
    if layer_type == "full_attention" and data.get("global_head_dim") is not None:
        return data["global_head_dim"], fields
    if data.get("head_dim") is not None:
        return data["head_dim"], fields
    hidden, heads = data.get("hidden_size"), data.get("num_attention_heads")
    if not isinstance(hidden, int) or not isinstance(heads, int) or heads <= 0:
        raise RopeConfigError(f"{name}: missing head_dim, and hidden_size / num_attention_heads "
                              f"({hidden!r} / {heads!r}) cannot stand in for it")
    return hidden // heads, fields


def read_config(source, layer_type: str | None = None, overrides: Mapping | None = None) -> RopeModelConfig:
    """The convention a Hugging Face config states (a path to ``config.json`` or its dict)."""
    data, name = _load(source)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - _FIELD_NAMES - _TYPE_PARAMETERS)
    if unknown:
        raise RopeConfigError(f"{name}: unknown override(s) {', '.join(unknown)}")
    rope, nested = _rope_dict(data, name, layer_type)
    kinds = {rope.pop(key) for key in ("rope_type", "type") if key in rope} - {None}
    if len(kinds) > 1:
        raise RopeConfigError(f"{name}: rope_type and type disagree ({' vs '.join(sorted(map(str, kinds)))})")
    view = {"rope_type": kinds.pop() if kinds else "default",
            "rope_theta": _first(rope.pop("rope_theta", None), data.get("rope_theta"), data.get("rotary_emb_base"),
                                 10000.0),
            "partial_rotary_factor": _first(rope.pop("partial_rotary_factor", None), data.get("partial_rotary_factor"),
                                            data.get("rotary_pct"), 1.0),
            "max_position_embeddings": data.get("max_position_embeddings")}
    if data.get("rope_interleave") is not None:
        view["layout"] = "interleaved" if data["rope_interleave"] else "half"
    view["rope_type"] = TYPE_ALIASES.get(view["rope_type"], view["rope_type"])
    kind = overrides.get("rope_type", view["rope_type"])
    if kind in _LENGTH_FROM_TOP:
        top_length = None if nested else data.get("original_max_position_embeddings")
        rope["original_max_position_embeddings"] = _first(top_length, rope.get("original_max_position_embeddings"),
                                                          data.get("max_position_embeddings"))
    try:
        view["head_dim"], placement = _head_dim(data, name, layer_type if nested else None)
        view.update(placement)
    except RopeConfigError:
        if "head_dim" not in overrides:
            raise
    for key, value in overrides.items():
        (view if key in _FIELD_NAMES else rope)[key] = value
    if view["rope_type"] not in ROPE_TYPES:
        raise RopeConfigError(f"{name}: unknown rope_type {view['rope_type']!r}; known: {', '.join(ROPE_TYPES)}")
    if view.get("layout") not in (None, *LAYOUTS):
        raise RopeConfigError(f"{name}: layout must be one of {', '.join(LAYOUTS)}, got {view['layout']!r}")
    fields = {key: view[key] for key in ("rotary_dim", "rotary_features", "attention_factor_placement",
                                         "max_position_embeddings") if view.get(key) is not None}
    try:
        convention = RopeConvention(view["rope_type"], _first(view["rope_theta"], 10000.0), rope,
                                    _first(view["partial_rotary_factor"], 1.0), **fields)
        convention.num_pairs(view["head_dim"])
        if convention.rope_type == "longrope":
            convention.longrope_factors(view["head_dim"])
    except (ValueError, TypeError) as error:
        raise RopeConfigError(f"{name}: {error}") from None
    return RopeModelConfig(convention, int(view["head_dim"]), name, layer_type if nested else None, view.get("layout"))
