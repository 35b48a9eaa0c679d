"""A rotary answer of ``identify`` as the keys that declare it (:func:`rope_answer_keys`),
and how it differs from a declaration, in words (:func:`rope_differences`)."""

from __future__ import annotations

from posenc_spec.gate.identify.toml_text import number
from posenc_spec.text import value_text


def rope_keys(convention: dict, api: str, layout: str | None) -> dict:
    """The rotary keys of an identified convention (``convention``: the answer's fields)."""
    keys = {"rope_type": convention["rope_type"], "base": number(convention["theta"])}
    if convention.get("params"):
        keys["rope_parameters"] = {name: number(value) for name, value in convention["params"].items()}
    if convention.get("rotary_dim") is not None:
        keys["rotary_dim"] = convention["rotary_dim"]
    elif convention.get("partial_rotary_factor", 1.0) != 1.0:
        keys["partial_rotary_factor"] = convention["partial_rotary_factor"]
    if convention.get("rotary_features", "first") != "first" and api == "rope-apply":
        keys["rotary_features"] = convention["rotary_features"]
    if layout is not None and api == "rope-apply":
        keys["layout"] = layout
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
            words.append(f"{name} {value_text(mine[key])} where {value_text(theirs)} is declared")
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
    return value_text(value)


# The call keys of a rotary declaration, with their defaults (written only when they differ).
ROPE_CALL_DEFAULTS = {"cache_form": "cos-sin", "cache_call": "positions", "x_layout": "bshd"}


def rope_answer_keys(answer: dict, shape, head_dim=None, max_positions=None, call=None) -> dict:
    """The keys that declare a rotary answer of ``identify`` (``shape``: how the target is
    called, :class:`~posenc_spec.families.rope.readings.CallShape`; ``call``: the declaration
    of how it is called, whose signature, ``init``, ``method`` and ``kwargs`` the keys keep)."""
    convention = answer["convention"]
    keys = {"api": shape.api, **rope_keys(convention, shape.api, convention.get("layout"))}
    calling = call.calling.declared_keys() if call is not None else {}
    for key, default in ROPE_CALL_DEFAULTS.items():
        value = getattr(shape, key)
        if (value != default or "signature" in calling) and (key == "x_layout") == (shape.api == "rope-apply"):
            keys[key] = value
    keys.update(calling)
    if head_dim is not None:
        keys["head_dim"] = head_dim
    if max_positions is not None:
        keys["max_positions"] = max_positions
    return keys
