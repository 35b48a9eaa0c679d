"""Turn command-line flags, a ``--config`` TOML file or ``[tool.posenc-spec]`` into GateSpecs.

One function, :func:`make_spec`, takes the keys of any of them::

    target          "package.module:attr" or "path/to/file.py:attr" (required)
    convention      a preset name (default "vaswani"); the next six keys override its fields
    layout          "interleaved" | "concat"
    first           "sin" | "cos"
    freq_shift      0 | 1
    base, offset, scale
    odd             "error" | "zero-pad" | "ceil" | "skip"     (default "error")
    api             "table" | "timesteps"                      (default "table")
    t_max           largest timestep for the timesteps API     (default 1000)
    max_positions   cap on every length of the grid
    xfails          a file of check ids that are known deviations
    timeout         seconds allowed for the import and for each call (default 60)

A TOML file holds ``[[targets]]`` tables, each with ``target`` and any of the keys; keys
at the top level are defaults for every target. In a ``pyproject.toml`` the same keys
live under ``[tool.posenc-spec]``: one target directly, or a ``targets`` array. Relative
paths (file targets, xfails files) are relative to the TOML file's folder. Example::

    [tool.posenc-spec]
    convention = "vaswani"

    [[tool.posenc-spec.targets]]
    target = "mypkg.encoding:sinusoidal_table"
    max_positions = 2048

    [[tool.posenc-spec.targets]]
    target = "mypkg.diffusion:timestep_embedding"
    api = "timesteps"
    convention = "tensor2tensor"
    odd = "skip"

An xfails file lists one check id per line; ``#`` starts a comment.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import tomllib

from posenc_spec.conventions import Convention, get_convention

from .engine import APIS, DEFAULT_TIMEOUT, GateSpec
from .loader import TargetError, absolute_target

CONVENTION_KEYS = ("layout", "first", "freq_shift", "base", "offset", "scale")
KEYS = ("target", "convention", *CONVENTION_KEYS, "odd", "api", "t_max", "max_positions", "xfails", "timeout")
ODD_CHOICES = ("error", "zero-pad", "ceil", "skip")


class ConfigError(ValueError):
    """A usage error: a bad key, value, file or TARGET (exit status 2)."""


def _number(where, key, value, positive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}{key} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{where}{key} must be positive, got {value!r}")
    return value


def _choice(where, key, value, choices):
    if value not in choices:
        raise ConfigError(f"{where}{key} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def read_xfails(path) -> frozenset[str]:
    """The check ids in an xfails file: one per line, ``#`` comments and blank lines ignored."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read the xfails file {path}: {error.strerror or error}") from None
    names = set()
    for line in text.splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return frozenset(names)


def make_spec(keys: dict, base_dir=None, where: str = "") -> GateSpec:
    """A :class:`GateSpec` from ``keys`` (see the module docstring); ``None`` values are
    absent keys. ``where`` prefixes error messages (``"pyproject.toml, targets[2]: "``)."""
    keys = {key: value for key, value in keys.items() if value is not None}
    unknown = sorted(set(keys) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(KEYS)}")
    target = keys.get("target")
    if not isinstance(target, str) or not target:
        raise ConfigError(f"{where}'target' is required: 'package.module:attr' or 'path/to/file.py:attr'")
    try:
        target = absolute_target(target, base_dir)
    except TargetError as error:
        raise ConfigError(f"{where}{error}") from None
    name = keys.get("convention", "vaswani")
    if not isinstance(name, (str, Convention)):
        raise ConfigError(f"{where}convention must be a preset name, got {name!r}")
    odd = _choice(where, "odd", keys.get("odd", "error"), ODD_CHOICES)
    fields = {key: keys[key] for key in CONVENTION_KEYS if key in keys}
    if "freq_shift" in fields:
        _choice(where, "freq_shift", fields["freq_shift"], (0, 1))
        if isinstance(fields["freq_shift"], bool):
            raise ConfigError(f"{where}freq_shift must be 0 or 1, got {fields['freq_shift']!r}")
    for key in ("base", "offset", "scale"):
        if key in fields:
            _number(where, key, fields[key])
    if odd != "skip":
        fields["odd"] = odd
    try:
        convention = get_convention(name, **fields)
    except ValueError as error:
        raise ConfigError(f"{where}{error}") from None
    api = _choice(where, "api", keys.get("api", "table"), APIS)
    t_max = _number(where, "t_max", keys.get("t_max", 1000.0), positive=True)
    max_positions = keys.get("max_positions")
    if max_positions is not None and (isinstance(max_positions, bool) or not isinstance(max_positions, int)
                                      or max_positions < 1):
        raise ConfigError(f"{where}max_positions must be a positive integer, got {max_positions!r}")
    xfails = frozenset()
    if "xfails" in keys:
        if not isinstance(keys["xfails"], (str, os.PathLike)):
            raise ConfigError(f"{where}xfails must be a file path, got {keys['xfails']!r}")
        path = Path(keys["xfails"])
        xfails = read_xfails(path if path.is_absolute() or base_dir is None else Path(base_dir) / path)
    timeout = _number(where, "timeout", keys.get("timeout", DEFAULT_TIMEOUT), positive=True)
    return GateSpec(target, convention, api=api, t_max=t_max, max_positions=max_positions,
                    skip_odd=odd == "skip", xfails=xfails, timeout=timeout)


def _load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None


def specs_from_table(section: dict, base_dir, where: str, overrides: dict | None = None) -> list[GateSpec]:
    """The specs of one configuration table: top-level keys are defaults for each entry
    of ``targets``; without ``targets`` the table is itself the one target. ``overrides``
    (command-line flags) replace the keys of every target."""
    if not isinstance(section, dict):
        raise ConfigError(f"{where}expected a table of keys, got {type(section).__name__}")
    overrides = {key: value for key, value in (overrides or {}).items() if value is not None}
    defaults = {key: value for key, value in section.items() if key != "targets"}
    if "targets" not in section:
        return [make_spec({**defaults, **overrides}, base_dir, where)]
    entries = section["targets"]
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise ConfigError(f"{where}'targets' must be a non-empty array of tables ([[targets]])")
    return [make_spec({**defaults, **entry, **overrides}, base_dir, f"{where}targets[{index}]: ")
            for index, entry in enumerate(entries)]


def read_config(path, overrides: dict | None = None) -> list[GateSpec]:
    """The specs of a ``--config`` file: ``[[targets]]`` tables, or a pyproject.toml's
    ``[tool.posenc-spec]``."""
    path = Path(path)
    data = _load_toml(path)
    section = data.get("tool", {}).get("posenc-spec") if isinstance(data.get("tool"), dict) else None
    if section is None:
        if "targets" not in data and "target" not in data:
            raise ConfigError(f"{path} has no [[targets]] tables and no [tool.posenc-spec] table")
        section = data
        where = f"{path}: "
    else:
        where = f"{path} [tool.posenc-spec]: "
    return specs_from_table(section, path.resolve().parent, where, overrides)


def read_pyproject(path="pyproject.toml", overrides: dict | None = None) -> list[GateSpec]:
    """The specs in ``[tool.posenc-spec]`` of a pyproject.toml."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no TARGET given and no {path} to read [tool.posenc-spec] from")
    data = _load_toml(path)
    section = data.get("tool", {}).get("posenc-spec") if isinstance(data.get("tool"), dict) else None
    if section is None:
        raise ConfigError(f"no TARGET given and {path} has no [tool.posenc-spec] table")
    return specs_from_table(section, path.resolve().parent, f"{path} [tool.posenc-spec]: ", overrides)
