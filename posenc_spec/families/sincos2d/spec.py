"""A 2-D sincos declaration: the preset, the keys that override its fields, and how the call
is made (the channels and patch size of what a module is handed, the dtype a target is asked for).

Keys (each field of :class:`~.conventions.Sincos2d` has one; :data:`.keys.FIELDS` maps them)::

    convention           a preset name (default "mae"): mae, mae-cls, transformers, diffusers, sd3,
                         detr, deformable-detr, dab-detr, big-vision, moco-v3
    first_axis           "row" | "col"
    grouping             "by-axis" | "by-function" (by-function takes layout "concat")
    layout               "concat" | "interleaved" (each half's sin/cos pairs; the field ``pairing``)
    first                "sin" | "cos": each pair's function that comes first (the field ``first_function``)
    freq_shift           0 | 1
    base                 finite, > 1: both axes' base; row_base, col_base: one axis's
    position_transform   "index" | "relative" | "crop" | "normalized"
    offset, scale, base_size, interpolation_scale, pos_embed_max_size, position_eps
                         the transform's parameters (a parameter of another transform is refused)
    extra_tokens         0 .. 64 zero rows before the grid (output_layout "tokens" only)
    token_order          "row-major" | "column-major"
    output_layout        "tokens" | "channels-first" | "grid"
    in_channels          1 .. 4096: the channels of the feature map or sample a module is handed
    patch_size           1 .. 64: adds-to-patches hands a sample of H*P x W*P pixels
    call_dtype           "float32" | "float64" | "float16" | "bfloat16": the dtype handed to a
                         target that takes one (positionally for shape-device-dtype and
                         w-h-device-dtype, as dtype= for the others; default: none handed but
                         float32 to those two)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import choice, fail, integer, number

from .conventions import (
    AXES,
    FUNCTIONS,
    GROUPINGS,
    MAX_EXTRA_TOKENS,
    MAX_GRID,
    OUTPUT_LAYOUTS,
    PAIRINGS,
    POSITION_PARAMETERS,
    POSITIONS,
    PRESETS,
    TOKEN_ORDERS,
    Sincos2d,
    get_convention,
)
from .keys import FIELDS, PRESET_NAMES

DEFAULT_PRESET = "mae"
CALL_DTYPES = ("float32", "float64", "float16", "bfloat16")
MAX_CHANNELS = 4096
MAX_PATCH = 64
# The signatures that hand a module a feature map or a sample (in_channels), and a sample of patches.
WITH_CHANNELS = ("x", "nested-tensor", "shape-device-dtype", "adds-to-patches")
# The key of each position parameter, by its field name.
PARAMETER_KEYS = {field: key for key, field in FIELDS.items() if field in
                  ("offset", "scale", "base_size", "interpolation_scale", "max_size", "eps")}


def _value(key: str, value, name):
    """The value of one convention key, validated (``name(key)`` names it in messages)."""
    if key in ("first_axis", "grouping", "layout", "first", "position_transform", "token_order", "output_layout"):
        choices = {"first_axis": AXES, "grouping": GROUPINGS, "layout": PAIRINGS, "first": FUNCTIONS,
                   "position_transform": POSITIONS, "token_order": TOKEN_ORDERS, "output_layout": OUTPUT_LAYOUTS}[key]
        return choice(name(key), value, choices)
    if key == "freq_shift":
        if isinstance(value, bool):
            fail(name(key), "0 or 1", value)
        return choice(name(key), value, (0, 1))
    if key in ("base", "row_base", "col_base"):
        return float(number(name(key), value, above=1))
    if key == "pos_embed_max_size":
        return integer(name(key), value, maximum=MAX_GRID)
    if key == "extra_tokens":
        return integer(name(key), value, minimum=0, maximum=MAX_EXTRA_TOKENS)
    if key in ("base_size", "interpolation_scale"):
        return float(number(name(key), value, above=0))
    if key == "position_eps":
        return float(number(name(key), value, minimum=0))
    return float(number(name(key), value, nonzero=key == "scale"))


def _fields(keys: dict, preset: Sincos2d, name) -> dict:
    """The :class:`Sincos2d` fields the keys override, with the cross-key rules said in key names."""
    fields = {FIELDS[key]: _value(key, keys[key], name) for key in FIELDS if key in keys}
    position = fields.get("position", preset.position)
    used = POSITION_PARAMETERS[position]
    for field, key in PARAMETER_KEYS.items():
        if field in fields and field not in used:
            takes = ", ".join(PARAMETER_KEYS[parameter] for parameter in used)
            raise UsageError(f"{name(key)} is not a parameter of position_transform {position!r} (it takes {takes})")
    if position == "crop" and "max_size" not in fields and (preset.position != "crop" or preset.max_size is None):
        raise UsageError(f"{name('position_transform')} 'crop' needs {name('pos_embed_max_size')}: the side of the "
                         "table the grid is cut from")
    if fields.get("grouping", preset.grouping) == "by-function" and fields.get("pairing", preset.pairing) != "concat":
        raise UsageError(f"{name('grouping')} 'by-function' ([sin A | sin B | cos A | cos B]) takes "
                         f"{name('layout')} 'concat', got {fields.get('pairing', preset.pairing)!r}")
    layout = fields.get("output_layout", preset.output_layout)
    if fields.get("extra_tokens", preset.extra_tokens) and layout != "tokens":
        raise UsageError(f"{name('extra_tokens')} needs {name('output_layout')} 'tokens' (a {layout} table has no "
                         "rows to put them in)")
    return fields


def keys_between(declared: Sincos2d, member: Sincos2d) -> dict:
    """The declaration keys whose values take ``declared`` to ``member`` (``base`` when
    both bases change to one value)."""
    keys = {key: getattr(member, field) for key, field in FIELDS.items()
            if field != "base" and getattr(member, field) != getattr(declared, field)
            and getattr(member, field) is not None}
    if "row_base" in keys and keys.get("col_base") == keys["row_base"]:
        keys = {"base": keys.pop("row_base"), **keys}
        keys.pop("col_base")
    return keys


def convention_keys(member: Sincos2d) -> dict:
    """The declaration of ``member``: the preset it differs least from and the keys that differ."""
    preset = min(PRESET_NAMES, key=lambda name: len(keys_between(PRESETS[name], member)))
    return {"convention": preset, **keys_between(PRESETS[preset], member)}


def _short(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Sincos2dSpec:
    """The declared convention (``preset`` and its fields) and how calls are made."""

    convention: Sincos2d
    preset: str = DEFAULT_PRESET
    in_channels: int = 1
    patch_size: int = 1
    call_dtype: str | None = None

    def changed(self) -> dict:
        """The declaration keys whose values differ from the preset's, as keys."""
        return keys_between(PRESETS[self.preset], self.convention)

    def describe(self) -> str:
        """The preset's name, with the keys that differ from it."""
        changed = [f"{key}={_short(value)}" for key, value in self.changed().items()]
        return self.preset + (f" ({', '.join(changed)})" if changed else "")

    def as_dict(self) -> dict:
        return {**self.convention.as_dict(), "in_channels": self.in_channels, "patch_size": self.patch_size,
                "call_dtype": self.call_dtype}

    def header_parts(self) -> list[str]:
        return [self.describe()]

    def child_sizes(self) -> dict:
        return {"patch_size": self.patch_size, "in_channels": self.in_channels}

    def child_options(self) -> dict:
        return {"in_channels": self.in_channels, "patch_size": self.patch_size, "call_dtype": self.call_dtype}


def _refuse_infinite_positions(convention: Sincos2d, name) -> None:
    """A UsageError where the declared positions of the longest axis the grid may call
    (:data:`~.conventions.MAX_GRID`, the angles' largest factor: every frequency is at most 1)
    are not finite float64s: no table can be judged against them."""
    with np.errstate(over="ignore", invalid="ignore"):
        farthest = convention.positions(MAX_GRID)
    if not np.isfinite(farthest).all():
        raise UsageError(f"{name('position_transform')} {convention.position}: the declared positions of a "
                         f"{MAX_GRID}-token axis are not finite ({', '.join(map(repr, farthest[-2:].tolist()))}); "
                         "no table can be judged against them")


def declare(keys: dict, context) -> Sincos2dSpec:
    """The :class:`Sincos2dSpec` of ``keys`` (see the module docstring)."""
    name = context.name
    if "x_layout" in keys:
        raise UsageError(f"{name('x_layout')}: the {context.api} API hands no x (in_channels and patch_size say "
                         "what a module is handed)")
    preset = choice(name("convention"), keys.get("convention", DEFAULT_PRESET), PRESET_NAMES)
    fields = _fields(keys, PRESETS[preset], name)
    signature = context.calling.signature
    in_channels = integer(name("in_channels"), keys["in_channels"], maximum=MAX_CHANNELS) \
        if "in_channels" in keys else 1
    patch_size = integer(name("patch_size"), keys["patch_size"], maximum=MAX_PATCH) if "patch_size" in keys else 1
    if "in_channels" in keys and signature not in WITH_CHANNELS:
        raise UsageError(f"{name('in_channels')}: the {signature} signature hands no feature map or sample "
                         f"({', '.join(WITH_CHANNELS)} do)")
    if "patch_size" in keys and signature != "adds-to-patches":
        raise UsageError(f"{name('patch_size')}: the {signature} signature hands no sample of patches "
                         "(adds-to-patches does)")
    if signature == "adds-to-patches" and context.calling.init is None:
        raise UsageError(f"{name('signature')} adds-to-patches needs {name('init')}: the gate builds the module, "
                         "zeroes its trainable parameters and reads what it adds to a zero sample")
    call_dtype = choice(name("call_dtype"), keys["call_dtype"], CALL_DTYPES) if "call_dtype" in keys else None
    try:
        convention = get_convention(preset, **fields)
    except (ValueError, TypeError) as error:  # what _fields leaves: the conventions' own checks
        raise UsageError(f"{name('convention')} {preset}: {error}") from None
    _refuse_infinite_positions(convention, name)
    return Sincos2dSpec(convention, preset, in_channels, patch_size, call_dtype)
