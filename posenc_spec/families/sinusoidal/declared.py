"""An identified sinusoidal convention as the keys that declare it, and how it differs from
a declaration.

:func:`sinusoidal_keys` gives the keys of ``[tool.posenc-spec]`` (and so the flags of
``check``) that declare what ``identify`` found: a preset and the fields that differ from
it. :func:`sinusoidal_differences` says, in words, how the answer differs from a
declaration already there ("base 500 where 10000 is declared").
"""

from __future__ import annotations

from posenc_spec.families.sinusoidal.conventions import PRESETS, Convention
from posenc_spec.families.sinusoidal.keys import CONVENTION_KEYS
from posenc_spec.gate.identify.toml_text import number
from posenc_spec.gate.keys import DEFAULT_T_MAX
from posenc_spec.text import value_text

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
            words.append(f"{FIELD_WORDS[key]} {value_text(mine)} where {value_text(theirs)} is declared")
    return words












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




