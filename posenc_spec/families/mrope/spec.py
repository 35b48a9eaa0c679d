"""A multi-axis rotary declaration: the convention, the head size, and how the target is called.

Keys (every one also a ``--`` flag)::

    convention          qwen2-vl (default) | qwen2.5-vl | qwen3-vl | glm-4v | flux | hunyuan-video | wan |
                        cogvideox | hunyuan-dit | qwen2-vl-vision | rope-1d
    axes                the axes in the target's order: a list or "t,h,w" (names t, h, w, p)
    mrope_section       pairs per axis (transformers' name)  } one of the two; both give
    axes_dim            features per axis (diffusers' name)  } the axes' shares of the head
    mrope_interleaved   true | false: Qwen3-VL's interleaved slots
    axes_frequencies    shared | per-axis | strided
    base                one base, or one per axis
    layout              half | interleaved
    head_dim            the head size of the calls (default the preset's: 2 x its slots; a preset whose
                        split follows the head size is rescaled)
    mrope_patch         (t, h, w) patch of the hidden-states signature (default 1, 1, 1)
    model_config        a transformers config.json: rope_parameters (or rope_scaling) rope_theta,
                        mrope_section, mrope_interleaved, and head_dim (or hidden_size /
                        num_attention_heads), its text_config's where it has one; the object
                        ``init = "config"`` builds

Explicit keys win over the config, the config over the preset.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.user_files import read_json
from posenc_spec.gate.values import choice, fail, integer, number

from .conventions import DEFAULT_PRESET, FREQUENCIES, LAYOUTS, PRESETS, MropeConvention, at_head_dim
from .grid import GRID_SIGNATURES
from .keys import API, POSITIONS_API

MAX_CONFIG_BYTES = 1 << 22
MAX_HEAD_DIM = 4096
# The signatures that take a grid of three axes, and those that take two.
THREE_AXES = ("grid-3d", "hidden-states")
# How many axes each signature's positions have, where it says.
SIGNATURE_AXES = {"grid-3d": 3, "hidden-states": 3, "grid-2d": 2, "get-1d": 1}


@dataclass(frozen=True)
class MropeSpec:
    """What a multi-axis rotary target is declared to compute and how it is called."""

    convention: MropeConvention
    preset: str = DEFAULT_PRESET
    head_dim: int = 128
    signature: str = "positions"
    patch_size: tuple[int, int, int] = (1, 1, 1)
    config: str | None = None
    spatial_merge_size: int = 2
    temporal_interval: float = 1.0

    def describe(self) -> str:
        said = self.preset if self.convention == at_head_dim(self.preset, self.head_dim) else self.convention.name()
        return f"{said}, head {self.head_dim}"

    def as_dict(self) -> dict:
        return {**self.convention.as_dict(), "attention_head_dim": self.head_dim, "mrope_patch": list(self.patch_size),
                "mrope_config": self.config, "spatial_merge_size": self.spatial_merge_size,
                "temporal_interval": self.temporal_interval}

    def header_parts(self) -> list[str]:
        return [self.describe()]

    def child_sizes(self) -> dict:
        return {"head_dim": self.head_dim, "axes_dim": [2 * n for n in self.convention.sections],
                "theta": self.convention.theta[0], "patch_size": list(self.patch_size)}

    def child_options(self) -> dict:
        return {"mrope_patch": list(self.patch_size), "config": self.config}


def _numbers(name: str, value, kind=int) -> tuple:
    """A list, or ``"a,b,c"`` as the command line gives it."""
    if isinstance(value, str):
        try:
            value = [kind(part) for part in value.split(",")]
        except ValueError:
            fail(name, "numbers separated by commas", value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or any(
            isinstance(item, bool) or not isinstance(item, (int, float)) for item in value):
        fail(name, "a list of numbers", value)
    if kind is int and any(item != int(item) or item < 1 for item in value):
        fail(name, "a list of positive integers", value)
    return tuple(kind(item) for item in value)


def _flag(name: str, value) -> bool:
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if not isinstance(value, bool):
        fail(name, "true or false", value)
    return value


def _axes(name: str, value) -> tuple:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        fail(name, "a list of axis names such as [\"t\", \"h\", \"w\"]", value)
    return tuple(value)


def config_fields(path: str, name: str) -> dict:
    """What a transformers ``config.json`` says of the convention (see the module docstring)."""
    try:
        data = read_json(path, MAX_CONFIG_BYTES, "mrope config")
    except UsageError as problem:
        raise UsageError(f"{name}: {problem}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{name}: {path} holds no JSON object")
    if isinstance(data.get("text_config"), dict):
        data = {**data["text_config"], "vision_config": data.get("vision_config")}
    rope = data.get("rope_parameters") or data.get("rope_scaling") or {}
    fields = {}
    theta = rope.get("rope_theta", data.get("rope_theta"))
    if theta is not None:
        fields["base"] = theta
    for key in ("mrope_section", "mrope_interleaved"):
        if key in rope:
            fields[key] = rope[key]
    vision = data.get("vision_config") if isinstance(data.get("vision_config"), dict) else {}
    for key, spelled in (("spatial_merge_size", "spatial_merge_size"), ("temporal_interval", "tokens_per_second")):
        if spelled in vision:
            fields[key] = vision[spelled]
    head_dim = data.get("head_dim")
    if head_dim is None and data.get("hidden_size") and data.get("num_attention_heads"):
        head_dim = data["hidden_size"] // data["num_attention_heads"]
    if head_dim is not None:
        fields["head_dim"] = head_dim
    return fields


def declare(keys: dict, context) -> MropeSpec:
    """The :class:`MropeSpec` of ``keys``; each bad value a one-line :class:`UsageError` naming its key."""
    name, signature = context.name, context.calling.signature
    preset = choice(name("convention"), keys.get("convention", DEFAULT_PRESET), tuple(PRESETS))
    config, config_keys = None, set()
    if "model_config" in keys:
        value = keys["model_config"]
        if not isinstance(value, str) or not value:
            fail(name("model_config"), "the path of a transformers config.json", value)
        config = str(Path(value) if Path(value).is_absolute() or context.base_dir is None
                     else Path(context.base_dir) / value)
        from_config = config_fields(config, name("model_config"))
        config_keys = set(from_config) - set(keys)
        keys = {**from_config, **keys}
    head_dim = PRESETS[preset].rotary_dim
    if "head_dim" in keys:
        head_dim = integer(name("head_dim"), keys["head_dim"], minimum=2, maximum=MAX_HEAD_DIM)
    convention = _convention(keys, name, at_head_dim(preset, head_dim))
    if convention.rotary_dim > head_dim:
        raise UsageError(f"{name('head_dim')}: the sections rotate {convention.rotary_dim} features, more "
                         f"than the head's {head_dim}")
    if context.api == API:
        _check_signature(signature, convention, name)
    patch = _numbers(name("mrope_patch"), keys["mrope_patch"]) if "mrope_patch" in keys else (1, 1, 1)
    if len(patch) != 3:
        fail(name("mrope_patch"), "three patch sizes, t, h and w", list(patch))
    if "mrope_patch" in keys and signature != "hidden-states":
        raise UsageError(f"{name('mrope_patch')} is read by the hidden-states signature, not by {signature}")
    if signature == "square-grid" and context.calling.init != "config":
        raise UsageError(f"{name('init')}: square-grid builds its module from {name('model_config')} (init \"config\")")
    if context.calling.init == "config" and config is None:
        raise UsageError(f"{name('init')}: \"config\" builds from {name('model_config')}, and none is given")
    merge = integer(name("spatial_merge_size"), keys.get("spatial_merge_size", 2), minimum=1, maximum=64)
    interval = number(name("temporal_interval"), keys.get("temporal_interval", 1.0), above=0, maximum=1e6)
    if context.api != POSITIONS_API and any(key in keys for key in ("spatial_merge_size", "temporal_interval")
                                            if key not in config_keys):
        raise UsageError(f"{name('spatial_merge_size')} and {name('temporal_interval')} declare the "
                         f"{POSITIONS_API} API's position ids")
    return MropeSpec(convention, preset, head_dim, signature, patch, config, merge, float(interval))


def _convention(keys: dict, name, base: MropeConvention) -> MropeConvention:
    fields = {}
    if "axes" in keys:
        fields["axes"] = _axes(name("axes"), keys["axes"])
    if "mrope_section" in keys and "axes_dim" in keys:
        raise UsageError(f"{name('mrope_section')} and {name('axes_dim')} say the same: give one")
    if "mrope_section" in keys:
        fields["sections"] = _numbers(name("mrope_section"), keys["mrope_section"])
    if "axes_dim" in keys:
        features = _numbers(name("axes_dim"), keys["axes_dim"])
        if any(value % 2 for value in features):
            fail(name("axes_dim"), "even feature counts (two per slot)", list(features))
        fields["sections"] = tuple(value // 2 for value in features)
    if "mrope_interleaved" in keys:
        fields["interleaved"] = _flag(name("mrope_interleaved"), keys["mrope_interleaved"])
    if "axes_frequencies" in keys:
        fields["frequencies"] = choice(name("axes_frequencies"), keys["axes_frequencies"], FREQUENCIES)
    if "base" in keys:
        fields["theta"] = _numbers(name("base"), keys["base"], float)
    if "layout" in keys:
        fields["layout"] = choice(name("layout"), keys["layout"], LAYOUTS)
    if "axes" in fields and "sections" not in fields and len(fields["axes"]) != len(base.axes):
        raise UsageError(f"{name('axes')}: {len(fields['axes'])} axes need their sections "
                         f"({name('mrope_section')} or {name('axes_dim')})")
    try:
        return dataclasses.replace(base, **fields)
    except ValueError as error:
        raise UsageError(f"{name('convention')} with the keys given: {error}") from None


def _check_signature(signature: str, convention: MropeConvention, name) -> None:
    if signature in GRID_SIGNATURES and not set(convention.axes) <= set("thw"):
        raise UsageError(f"{name('signature')}: {signature} takes a grid of t, h and w; the axes are "
                         f"{', '.join(convention.axes)}")
    if signature in THREE_AXES and len(convention.axes) != 3:
        raise UsageError(f"{name('signature')}: {signature} takes a t x h x w grid; declare three axes")
    if signature == "grid-2d" and len(convention.axes) != 2:
        raise UsageError(f"{name('signature')}: grid-2d takes an h x w grid; declare two axes")
    if signature == "get-1d" and len(convention.axes) != 1:
        raise UsageError(f"{name('signature')}: get-1d takes one axis of positions; declare one axis")
    if signature == "grid-2d" and "t" in convention.axes:
        raise UsageError(f"{name('signature')}: grid-2d takes an h x w grid, no t axis")
    if signature == "square-grid" and sorted(convention.axes) != ["h", "w"]:
        raise UsageError(f"{name('signature')}: square-grid takes an n x n grid of h and w; the axes are "
                         f"{', '.join(convention.axes)}")
