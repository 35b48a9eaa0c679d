"""An identified convention as the keys that declare it, and how it differs from a declaration.

:func:`sinusoidal_keys` and :func:`rope_keys` give the keys of ``[tool.posenc-spec]`` (and
so the flags of ``check``) that declare what ``identify`` found: a preset and the fields
that differ from it, or the rotary keys. :func:`differences` says, in words, how the
answer differs from a declaration already there ("theta 10000 where 500000 is declared").
"""

from __future__ import annotations

from posenc_spec.conventions import PRESETS, Convention
from posenc_spec.families.sinusoidal.keys import CONVENTION_KEYS
from posenc_spec.gate.keys import DEFAULT_T_MAX

from .toml_text import number

FIELD_WORDS = {"layout": "layout", "first": "first", "freq_shift": "freq_shift", "base": "base", "offset": "offset",
               "scale": "scale", "odd": "odd widths"}


def sinusoidal_keys(found: Convention, preferred: str | None = None, odd: bool = True) -> dict:
    """``convention`` (the preset with the fewest fields to change, ``preferred`` on a tie)
    and the fields that differ from it; ``odd`` unless it is unidentified (None) or not wanted."""
    def changed(name):
        return [key for key in CONVENTION_KEYS if getattr(found, key) != getattr(PRESETS[name], key)]

    order = sorted(PRESETS, key=lambda name: (len(changed(name)), name != preferred))
    preset = order[0]
    keys = {"convention": preset, **{key: number(getattr(found, key)) for key in changed(preset)}}
    if odd and found.odd is not None:
        keys["odd"] = found.odd
    return keys


def sinusoidal_differences(found: Convention, declared: Convention, odd_known: bool) -> list[str]:
    """``"layout concat where interleaved is declared"`` for each field that differs."""
    words = []
    for key in (*CONVENTION_KEYS, "odd"):
        if key == "odd" and not odd_known:
            continue
        mine, theirs = getattr(found, key), getattr(declared, key)
        if mine != theirs:
            words.append(f"{FIELD_WORDS[key]} {_shown(mine)} where {_shown(theirs)} is declared")
    return words


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def rope_keys(convention: dict, api: str, layout: str | None) -> dict:
    """The rotary keys of an identified convention (``convention``: the answer's fields)."""
    keys = {"rope_type": convention["rope_type"], "rope_theta": number(convention["theta"])}
    if convention.get("params"):
        keys["rope_parameters"] = {name: number(value) for name, value in convention["params"].items()}
    if convention.get("rotary_dim") is not None:
        keys["rotary_dim"] = convention["rotary_dim"]
    elif convention.get("partial_rotary_factor", 1.0) != 1.0:
        keys["partial_rotary_factor"] = convention["partial_rotary_factor"]
    if convention.get("rotary_features", "first") != "first" and api == "rope-apply":
        keys["rotary_features"] = convention["rotary_features"]
    if layout is not None and api == "rope-apply":
        keys["rope_layout"] = layout
    elif layout is not None and api == "rope-cache":
        keys["cache_layout"] = layout
    return keys


ROPE_WORDS = {"rope_type": "rope_type", "theta": "theta", "partial_rotary_factor": "partial_rotary_factor",
              "rotary_dim": "rotary_dim", "rotary_features": "rotary_features"}


def rope_differences(found: dict, found_layout: str | None, declared, declared_layout: str | None) -> list[str]:
    """How an identified rotary convention (its fields) differs from a declared one."""
    words = []
    mine = {"rope_type": found["rope_type"], "theta": found["theta"],
            "partial_rotary_factor": found.get("partial_rotary_factor", 1.0), "rotary_dim": found.get("rotary_dim"),
            "rotary_features": found.get("rotary_features", "first")}
    for key, name in ROPE_WORDS.items():
        theirs = getattr(declared, "theta" if key == "theta" else key)
        if mine[key] != theirs and not (key == "rotary_dim" and mine[key] is None):
            words.append(f"{name} {_shown(mine[key])} where {_shown(theirs)} is declared")
    params, declared_params = found.get("params") or {}, declared.params_dict()
    if mine["rope_type"] == declared.rope_type:
        for name in sorted(set(params) | set(declared_params)):
            if params.get(name) != declared_params.get(name):
                shown = [listed(params.get(name)), listed(declared_params.get(name))]
                words.append(f"{name} {shown[0]} where {shown[1]} is declared")
    if found_layout is not None and declared_layout is not None and found_layout != declared_layout:
        words.append(f"layout {found_layout} where {declared_layout} is declared")
    return words


def listed(value) -> str:
    """A parameter's value in a message: a list by its length, None as none."""
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} values]"
    return _shown(value)


def answer_keys(answer: dict, api: str, t_max=None, max_positions=None) -> dict:
    """The keys of a ``[[tool.posenc-spec.targets]]`` entry (without ``target``) that declare
    a sinusoidal answer of ``identify``: its convention, its odd widths (``skip`` when they
    were not identified) and the call keys that differ from their defaults."""
    fields = answer["convention"]
    keys = sinusoidal_keys(Convention(**{**fields, "odd": "error"}), odd=False)
    keys["odd"] = fields.get("odd") or "skip"
    if api != "table":
        keys["api"] = api
    if t_max is not None and t_max != DEFAULT_T_MAX and api == "timesteps":
        keys["t_max"] = number(float(t_max))
    if max_positions is not None:
        keys["max_positions"] = max_positions
    return keys


# The call keys of a rotary declaration, with their defaults (written only when they differ).
ROPE_CALL_DEFAULTS = {"cache_form": "cos-sin", "cache_call": "positions", "x_layout": "bshd"}


def rope_answer_keys(answer: dict, shape, head_dim=None, max_positions=None) -> dict:
    """The keys that declare a rotary answer of ``identify`` (``shape``: how the target is
    called, :class:`~posenc_spec.gate.identify.rope_readings.CallShape`)."""
    convention = answer["convention"]
    keys = {"api": shape.api, **rope_keys(convention, shape.api, convention.get("layout"))}
    for key, default in ROPE_CALL_DEFAULTS.items():
        value = getattr(shape, key)
        if value != default and (key == "x_layout") == (shape.api == "rope-apply"):
            keys[key] = value
    if head_dim is not None:
        keys["head_dim"] = head_dim
    if max_positions is not None:
        keys["max_positions"] = max_positions
    return keys
