"""Where declarations come from: a TARGET and flags, a ``--config`` file, the nearest
``[tool.posenc-spec]``, or ``--builtin``.

A TOML file holds ``[[targets]]`` tables, each with ``target`` and any of the keys of
:mod:`posenc_spec.gate.declaration`; keys at the top level are defaults for every target
they fit (a family's keys for the targets of that family; a default that fits none is a
usage error). Numbers are TOML numbers:
``max_positions = "2048"`` is a usage error.
In a ``pyproject.toml`` the same keys live under ``[tool.posenc-spec]``: one target
directly, or a ``targets`` array. Relative paths (file targets, xfails files) are relative
to the TOML file's folder. Command-line flags override the keys of every target.

Without a TARGET, ``--config`` or ``--builtin`` the gate uses the nearest ``pyproject.toml``
holding a ``[tool.posenc-spec]`` table, looking in the working directory and then each
parent up to the root of the repository (a folder holding ``.git``) or of the file system,
as pytest and ruff find their configuration. Example::

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

When there is none, nothing is checked: a usage error says where the search looked and how
to declare targets (a run that checked something other than what the project declares
would pass whatever the project does). For the same reason a table spelled close to
``tool.posenc-spec`` (``[tool.posenc_spec]``, ``[tool.posenc]``, ``[posenc-spec]``), in any
``pyproject.toml`` the search reads or in a ``--config`` file, a key close to a known one,
and ``[[target]]`` for ``[[targets]]`` are usage errors naming the right spelling. The
reference implementations posenc-spec ships are checked only when asked (``--builtin``).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from posenc_spec import registry

from .declaration import Declaration, declare, refuse_quoted_numbers, refuse_unknown_keys
from .errors import UsageError
from .keys import APIS, KEYS
from .user_files import read_toml

MAX_CONFIG_BYTES = 1 << 20  # a TOML file's objects take up to ~300 times its size in memory
BUILT_IN = "built-in default (the packaged reference implementations)"
TABLE = "tool.posenc-spec"
TABLE_KEYS = (*KEYS, "targets")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def load_toml(path: Path) -> dict:
    """A TOML file as a dict: a UTF-8 byte-order mark and CRLF line ends are accepted; every
    error names the file (and the line, for a syntax error)."""
    return read_toml(path, MAX_CONFIG_BYTES, "configuration file")


def _tool_table(data: dict):
    tool = data.get("tool")
    return tool.get("posenc-spec") if isinstance(tool, dict) else None


def _normal(name: str) -> str:
    return "".join(character for character in name.lower() if character.isalnum())


def _close_to_table(name: str) -> bool:
    """A slip of case, punctuation, plural or a letter or two in ``posenc-spec``, or its first word alone."""
    normal = _normal(name)
    return normal.startswith("posenc") or difflib.SequenceMatcher(None, normal, "posencspec").ratio() > 0.8


def _is_table(value) -> bool:
    return isinstance(value, dict) or (isinstance(value, list) and bool(value)
                                       and all(isinstance(item, dict) for item in value))


def _dotted(*names: str) -> str:
    """A table's name as TOML writes it: ``tool."posenc spec"``."""
    return ".".join(name if _BARE_KEY.match(name) else f'"{name}"' for name in names)


def near_misses(data: dict) -> list[str]:
    """The tables of a parsed TOML file whose names are close to ``tool.posenc-spec`` but not it."""
    found = []
    for top, value in data.items():
        if not _is_table(value):
            continue
        if top == "tool" and isinstance(value, dict):
            found += [_dotted(top, key) for key, inner in value.items()
                      if key != "posenc-spec" and _is_table(inner) and _close_to_table(key)]
        elif _close_to_table(top):
            found.append(_dotted(top))
        elif _normal(top) in ("tool", "tools") and isinstance(value, dict):
            found += [_dotted(top, key) for key, inner in value.items() if _is_table(inner) and _close_to_table(key)]
    return found


def _refuse_near_misses(path: Path, data: dict) -> None:
    misses = near_misses(data)
    if misses:
        raise UsageError(f"{path}: [{misses[0]}] is not read; did you mean [{TABLE}]?")


def declarations_from_table(section, base_dir, where: str, overrides: dict | None = None,
                            table: str = "") -> list[Declaration]:
    """The declarations of one configuration table (see the module docstring); ``table`` is
    its name for messages (``tool.posenc-spec``, or empty at the top of a ``--config`` file)."""
    if not isinstance(section, dict):
        raise UsageError(f"{where}expected a table of keys, got {type(section).__name__}")
    prefix = f"{table}." if table else ""
    if isinstance(section.get("target"), list):
        raise UsageError(f"{where}[[{prefix}target]] should be [[{prefix}targets]] (one table per target)")
    refuse_unknown_keys(section, TABLE_KEYS, where)
    refuse_quoted_numbers(section, where)
    overrides = {key: value for key, value in (overrides or {}).items() if value is not None}
    defaults = {key: value for key, value in section.items() if key != "targets"}
    if "targets" not in section:
        return [declare({**defaults, **overrides}, base_dir, where)]
    entries = section["targets"]
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise UsageError(f"{where}'targets' must be a non-empty array of tables ([[{prefix}targets]])")
    declarations, taken = [], set()
    families = {getattr(_family({**defaults, **entry, **overrides}), "name", None) for entry in entries}
    for index, entry in enumerate(entries):
        refuse_quoted_numbers(entry, f"{where}targets[{index}]: ")
        fitting = _defaults_for({**defaults, **entry, **overrides}, defaults, families)
        taken.update(fitting)
        declarations.append(declare({**fitting, **entry, **overrides}, base_dir, f"{where}targets[{index}]: "))
    unused = [key for key in defaults if key not in taken]
    if unused:
        raise UsageError(f"{where}{unused[0]} is a default for the targets it fits, and no target is "
                         f"{registry.nouns(registry.owners_of_key(unused[0]))}")
    return declarations


def _family(keys: dict):
    """The names of the family of the target ``keys`` declare (None: an API no family has)."""
    api = keys.get("api", APIS[0])
    return registry.names_of_api(api) if api in APIS else None


def _defaults_for(keys: dict, defaults: dict, families=frozenset()) -> dict:
    """The top-level ``defaults`` that fit the target ``keys`` declare: a family's keys go to
    the targets of that family only (their ``api`` says which), the core's to every target,
    so that one table holds targets of several families (``families``: the names of the
    file's targets' families). A key several families read, in a file holding targets of
    more than one of them, goes to the family that had the name
    before the families shared it (:func:`_first_reader`): a file written then reads as it
    did; give the key in each target to set it for the others."""
    own = _family(keys)
    if own is None:  # declare() says so
        return dict(defaults)
    return {key: value for key, value in defaults.items() if _fits(key, own, families)}


def _fits(key: str, own, families) -> bool:
    owners = registry.owners_of_key(key)
    if not owners:
        return True
    if own not in owners:
        return False
    return sum(owner.name in families for owner in owners) <= 1 or own is _first_reader(key, owners)


def _first_reader(key: str, owners):
    """The first family that reads ``key`` under its own name, not a former one (else the first)."""
    return next((names for names in owners if key in names.keys and key not in names.aliases.values()), owners[0])


def read_config(path, overrides: dict | None = None) -> list[Declaration]:
    """The declarations of a ``--config`` file: ``[[targets]]`` tables, or a pyproject.toml's
    ``[tool.posenc-spec]``."""
    path = Path(path)
    data = load_toml(path)
    _refuse_near_misses(path, data)
    section = _tool_table(data)
    if section is not None:
        return declarations_from_table(section, path.resolve().parent, f"{path} [{TABLE}]: ", overrides, TABLE)
    if not {"targets", "target"} & set(data):
        raise UsageError(f"{path} has no [[targets]] tables and no [{TABLE}] table")
    return declarations_from_table(data, path.resolve().parent, f"{path}: ", overrides)


def built_in_declarations(overrides: dict | None = None) -> list[Declaration]:
    """The built-in default: the reference implementations posenc-spec ships, each family's."""
    return declarations_from_table({"targets": registry.builtin_targets()}, None, "built-in default: ", overrides)


@dataclass(frozen=True)
class Search:
    """Where the search for ``[tool.posenc-spec]`` went: the ``pyproject.toml`` it ``found``
    (None: none), the folders it looked in from ``start`` up to ``stop``, and, when it found
    none, whether it stopped at a repository's root (else at the file system's)."""

    found: Path | None
    start: Path
    stop: Path
    at_repository: bool

    def places(self) -> str:
        """Where it looked, for a message."""
        root = "the repository root" if self.at_repository else "the file system root"
        if self.start == self.stop:
            return f"in {self.start} ({root})"
        return f"in {self.start} and each folder above it up to {self.stop} ({root})"


def find_pyproject(start=None) -> Search:
    """The search for the nearest ``pyproject.toml`` with a ``[tool.posenc-spec]`` table, from
    ``start`` (the working directory) up to the repository's root or the file system's. Every
    ``pyproject.toml`` on the way is read: one that cannot be, or that holds a near miss of
    the table's name, is a usage error."""
    folder = Path(start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if os.path.lexists(path):
            data = load_toml(path)
            _refuse_near_misses(path, data)
            if _tool_table(data) is not None:
                return Search(path, folder, candidate, False)
        if (candidate / ".git").exists():
            return Search(None, folder, candidate, True)
    return Search(None, folder, candidate, False)


@dataclass(frozen=True)
class Front:
    """How a front end (``posenc-spec check``, the pytest plugin) names the options that
    choose its declarations, for its messages: ``target``, ``config`` and ``xfails`` as the
    user types them; ``where`` prefixes a target's errors and ``flags`` names its keys as
    command-line flags (see :func:`~posenc_spec.gate.declaration.declare`) and ``spelling``
    says how its flags are written in advice; ``others`` says
    how else than a ``[tool.posenc-spec]`` table targets are declared, for the error when
    nothing is."""

    target: str
    config: str
    xfails: str
    others: str
    where: str = ""
    flags: bool = True
    spelling: str = "flags"  # how its flags are written (Declaration.spelling): flags, or the plugin's


def select_declarations(front: Front, target, config_file, xfails, overrides: dict,
                        base_dir=None, builtin: bool = False) -> tuple[list[Declaration], str | None]:
    """The declarations a front end's options name, and where they come from (None for a
    target, else the configuration file or :data:`BUILT_IN`): ``target`` with its
    ``xfails`` file, else the ``config_file``, else the built-in default when ``builtin``,
    else the nearest ``pyproject.toml`` with a ``[tool.posenc-spec]`` table; none of them is
    a usage error. ``overrides`` (the flags) override every target's keys; relative paths
    are taken from ``base_dir`` (the working directory)."""
    if target is not None and config_file is not None:
        raise UsageError(f"give either {front.target} or {front.config}, not both")
    if builtin and (target is not None or config_file is not None):
        given = front.target if target is not None else front.config
        raise UsageError(f"--builtin checks the reference implementations posenc-spec ships: give it without {given}")
    if target is not None:
        keys = {"target": target, **overrides, "xfails": xfails}
        declaration = declare(keys, base_dir, front.where, flags=front.flags)
        return [dataclasses.replace(declaration, spelling=front.spelling, flag_spelling=front.spelling)], None
    if xfails is not None:
        raise UsageError(f"{front.xfails} goes with {front.target}; in a config file give each target an `xfails` key")
    if builtin:
        return _flagged(built_in_declarations(overrides), overrides, front), BUILT_IN
    if config_file is not None:
        path = Path(config_file) if base_dir is None else Path(base_dir, config_file)
        return _flagged(read_config(path, overrides), overrides, front), str(path)
    search = find_pyproject(base_dir)
    if search.found is None:
        raise UsageError(f"{front.where}nothing to check: no pyproject.toml with a [{TABLE}] table {search.places()}; "
                         f"declare targets in one, or give {front.others}")
    return _flagged(read_config(search.found, overrides), overrides, front), str(search.found)


def _flagged(declarations: list[Declaration], overrides: dict, front: Front) -> list[Declaration]:
    """A file's declarations, each knowing the keys the flags gave over the file's (advice to
    change one of those is a flag: the file's key would stay overridden)."""
    given = frozenset(key for key, value in overrides.items() if value is not None)
    return [dataclasses.replace(declaration, flagged=given, flag_spelling=front.spelling)
            for declaration in declarations]
