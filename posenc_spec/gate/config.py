"""Where declarations come from: ``[tool.posenc-spec]``, a ``--config`` file, or flags.

A TOML file holds ``[[targets]]`` tables, each with ``target`` and any of the keys of
:mod:`posenc_spec.gate.declaration`; keys at the top level are defaults for every target.
In a ``pyproject.toml`` the same keys live under ``[tool.posenc-spec]``: one target
directly, or a ``targets`` array. Relative paths (file targets, xfails files) are relative
to the TOML file's folder. Command-line flags override the keys of every target.

Without ``--config`` the gate uses the nearest ``pyproject.toml`` holding a
``[tool.posenc-spec]`` table, looking in the working directory and then each parent up to
the root of the repository (a folder holding ``.git``) or of the file system, as pytest and
ruff find their configuration. Example::

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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .declaration import Declaration, declare
from .errors import UsageError
from .user_files import read_toml

MAX_CONFIG_BYTES = 1 << 20  # a TOML file's objects take up to ~300 times its size in memory
BUILT_IN = "built-in default (the packaged reference implementations)"


def load_toml(path: Path) -> dict:
    """A TOML file as a dict: a UTF-8 byte-order mark and CRLF line ends are accepted; every
    error names the file (and the line, for a syntax error)."""
    return read_toml(path, MAX_CONFIG_BYTES, "configuration file")


def _tool_table(data: dict):
    tool = data.get("tool")
    return tool.get("posenc-spec") if isinstance(tool, dict) else None


def declarations_from_table(section, base_dir, where: str, overrides: dict | None = None) -> list[Declaration]:
    """The declarations of one configuration table (see the module docstring)."""
    if not isinstance(section, dict):
        raise UsageError(f"{where}expected a table of keys, got {type(section).__name__}")
    overrides = {key: value for key, value in (overrides or {}).items() if value is not None}
    defaults = {key: value for key, value in section.items() if key != "targets"}
    if "targets" not in section:
        return [declare({**defaults, **overrides}, base_dir, where)]
    entries = section["targets"]
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise UsageError(f"{where}'targets' must be a non-empty array of tables ([[targets]])")
    return [declare({**defaults, **entry, **overrides}, base_dir, f"{where}targets[{index}]: ")
            for index, entry in enumerate(entries)]


def read_config(path, overrides: dict | None = None) -> list[Declaration]:
    """The declarations of a ``--config`` file: ``[[targets]]`` tables, or a pyproject.toml's
    ``[tool.posenc-spec]``."""
    path = Path(path)
    data = load_toml(path)
    section = _tool_table(data)
    if section is None:
        if "targets" not in data and "target" not in data:
            raise UsageError(f"{path} has no [[targets]] tables and no [tool.posenc-spec] table")
        section, where = data, f"{path}: "
    else:
        where = f"{path} [tool.posenc-spec]: "
    return declarations_from_table(section, path.resolve().parent, where, overrides)


def built_in_declarations(overrides: dict | None = None) -> list[Declaration]:
    """The built-in default: the reference implementations posenc-spec ships."""
    from posenc_spec.references import BUILT_IN_TARGETS

    return declarations_from_table(BUILT_IN_TARGETS, None, "built-in default: ", overrides)


def find_pyproject(start=None) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.posenc-spec]`` table, from ``start``
    (the working directory) up to the repository's root or the file system's. Every
    ``pyproject.toml`` on the way is read: one that cannot be is a usage error."""
    folder = Path(start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if os.path.lexists(path) and _tool_table(load_toml(path)) is not None:
            return path
        if (candidate / ".git").exists():
            return None
    return None


@dataclass(frozen=True)
class Front:
    """How a front end (``posenc-spec check``, the pytest plugin) names the options that
    choose its declarations, for its messages: ``target``, ``config`` and ``xfails`` as the
    user types them; ``where`` prefixes a target's errors and ``flags`` names its keys as
    command-line flags (see :func:`~posenc_spec.gate.declaration.declare`); ``missing`` is
    the error when no configuration is found (None: the built-in default is checked)."""

    target: str
    config: str
    xfails: str
    where: str = ""
    flags: bool = True
    missing: str | None = None


def select_declarations(front: Front, target, config_file, xfails, overrides: dict,
                        base_dir=None) -> tuple[list[Declaration], str | None]:
    """The declarations a front end's options name, and where they come from (None for a
    target, else the configuration file or :data:`BUILT_IN`): ``target`` with its
    ``xfails`` file, else the ``config_file``, else the nearest ``pyproject.toml`` with a
    ``[tool.posenc-spec]`` table, else ``front.missing``. ``overrides`` (the flags) override
    every target's keys; relative paths are taken from ``base_dir`` (the working directory)."""
    if target is not None and config_file is not None:
        raise UsageError(f"give either {front.target} or {front.config}, not both")
    if target is not None:
        keys = {"target": target, **overrides, "xfails": xfails}
        return [declare(keys, base_dir, front.where, flags=front.flags)], None
    if xfails is not None:
        raise UsageError(f"{front.xfails} goes with {front.target}; in a config file give each target an `xfails` key")
    if config_file is not None:
        path = Path(config_file) if base_dir is None else Path(base_dir, config_file)
    else:
        path = find_pyproject(base_dir)
    if path is not None:
        return read_config(path, overrides), str(path)
    if front.missing is not None:
        raise UsageError(front.missing)
    return built_in_declarations(overrides), BUILT_IN
