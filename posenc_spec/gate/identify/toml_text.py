"""Declaration keys written as a user types them: TOML assignments and command-line flags.

The standard library reads TOML but does not write it, and a declaration needs little of
it: strings, integers, floats, booleans, lists of numbers and inline tables (the keys
given once per ``KEY=VALUE`` item). :func:`value` writes each so that :mod:`tomllib` reads back the same
value (a float keeps its decimal point or exponent, so it stays a float; a string is a
basic string with every quote, backslash and control character escaped). :func:`flags`
writes the same keys as the flags of ``posenc-spec check``.
"""

from __future__ import annotations

import math
import re

from ..keys import flag, plugin_flag

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    def escape(character: str) -> str:
        if character in _ESCAPES:
            return _ESCAPES[character]
        code = ord(character)
        return f"\\u{code:04x}" if code < 0x20 or code == 0x7F else character

    return '"' + "".join(escape(character) for character in text) + '"'


def _float(number: float) -> str:
    if not math.isfinite(number):
        raise ValueError(f"TOML holds no declaration value {number!r}")
    text = repr(float(number))
    return text if any(mark in text for mark in ".en") else text + ".0"


def number(value):
    """A number as a declaration writes it: an int when it is a whole number (``10000``, not
    ``10000.0``), else the float to 10 significant digits; anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        value = round(value, 9 - int(math.floor(math.log10(abs(value)))))
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else value


def key_name(name: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted."""
    return name if _BARE_KEY.match(name) else _string(name)


def value(item) -> str:
    """``item`` as a TOML value (see the module docstring)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, float):
        return _float(item)
    if isinstance(item, str):
        return _string(item)
    if isinstance(item, (list, tuple)):
        return "[" + ", ".join(value(element) for element in item) + "]"
    if isinstance(item, dict):
        return "{" + ", ".join(f"{key_name(str(key))} = {value(element)}" for key, element in item.items()) + "}"
    raise TypeError(f"TOML holds no declaration value of type {type(item).__name__}")


def assignments(keys: dict) -> str:
    """``key = value`` for each key, joined by ``, `` (one line, for a message)."""
    return ", ".join(f"{key_name(key)} = {value(item)}" for key, item in keys.items())


def lines(keys: dict) -> list[str]:
    """``key = value`` for each key, one line each (the body of a table)."""
    return [f"{key_name(key)} = {value(item)}" for key, item in keys.items()]


def _flag_value(item) -> str:
    if isinstance(item, float) and item.is_integer() and abs(item) < 1e16:
        return str(int(item))
    if isinstance(item, float):
        return repr(item)
    if isinstance(item, (list, tuple, dict, bool)):
        import json

        return json.dumps(item, separators=(",", ":"))
    return str(item)


def flags(keys: dict, spell=flag) -> str:
    """The same keys as ``posenc-spec check`` flags: ``--layout concat``; a table (a key
    given once per ``KEY=VALUE`` item, ``--rope-param factor=8``) as one flag per item.
    ``spell`` names each key's flag (:func:`~posenc_spec.gate.keys.plugin_flag` for the
    pytest plugin's twins)."""
    parts = []
    for key, item in keys.items():
        name = spell(key)
        if isinstance(item, dict):
            parts += [f"{name} {entry}={_flag_value(element)}" for entry, element in item.items()]
        else:
            parts.append(f"{name} {_flag_value(item)}")
    return " ".join(parts)


def plugin_flags(keys: dict) -> str:
    """The same keys as the pytest plugin's flags: ``--posenc-layout concat``."""
    return flags(keys, plugin_flag)


def keywords(keys: dict) -> str:
    """The same keys as ``posenc_spec.check``'s keyword arguments: ``layout='concat', base=100``
    (a table as a dict, ``rope_parameters={'factor': 8}``)."""
    return ", ".join(f"{key}={item!r}" for key, item in keys.items())


def spelled(keys: dict, spelling: str) -> str:
    """``keys`` as the user writes them: ``flags``, ``plugin`` (the pytest plugin's
    ``--posenc-*`` flags), ``toml`` (assignments) or ``python`` (``posenc_spec.check``'s
    keywords); see :attr:`~posenc_spec.gate.declaration.Declaration.spelling`."""
    return {"flags": flags, "plugin": plugin_flags, "toml": assignments, "python": keywords}[spelling](keys)
