"""``posenc-spec init TARGET``: declare what ``identify`` finds, in the nearest pyproject.toml.

The answer of ``identify`` (the same flags, and the same check on ``check``'s whole grid)
becomes one ``[[tool.posenc-spec.targets]]`` entry, appended to the nearest
``pyproject.toml`` (from the working directory up to the repository's root; none: a new
one in the working directory). The file's bytes are kept as they are and the entry is
added after them as text (the standard library reads TOML but does not write it); the
result must read back with the old content unchanged and with the entry declaring the
answer, else nothing is written. An entry for the same target is replaced only with
``--force`` (and only one written as a ``[[tool.posenc-spec.targets]]`` table); "none" is
refused, saying why, and so is an answer that is a known slip of a nearby member (``base =
100`` where the code meant 10000 with ``2i/d``) unless ``--accept-slip`` says it is meant.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

from .arguments import error
from .identify import add_command, identify, request_of

EPILOG = """\
exit status: 0 the entry was written; 1 identify answers "none", or an answer that is a known
slip of a nearby member without --accept-slip (nothing written, the answer says why); 2
usage error (an entry for TARGET already there without --force, a pyproject.toml that cannot
be read or extended, a TARGET that cannot be imported); 3 the file could not be written at
the end.
"""
TABLE = "tool.posenc-spec"
ENTRY_HEADER = "[[tool.posenc-spec.targets]]"
# A header line of the targets array, as TOML lets it be spelled (quotes, spaces).
_ENTRY_LINE = re.compile(r'^\s*\[\[\s*tool\s*\.\s*(?:posenc-spec|"posenc-spec"|\'posenc-spec\')\s*\.\s*'
                         r'(?:targets|"targets"|\'targets\')\s*\]\]\s*(?:#.*)?$')
_HEADER_LINE = re.compile(r"^\s*\[")


def register(subparsers) -> None:
    parser = add_command(subparsers, "init", run, epilog=EPILOG,
                         help="declare the convention a target computes in the nearest pyproject.toml",
                         description="Identify TARGET (as posenc-spec identify does, checked on check's whole "
                                     "grid) and append the declaration it finds to the nearest pyproject.toml as a "
                                     "[[tool.posenc-spec.targets]] entry, leaving the rest of the file as it is.")
    parser.add_argument("--force", action="store_true", help="replace an entry already there for TARGET")
    parser.add_argument("--accept-slip", dest="accept_slip", action="store_true",
                        help="write the answer even where it is a known slip of a nearby member (base = 100 for the "
                             "i/d-for-2i/d slip, axes swapped, geometric ALiBi slopes ...): the code means it")


def nearest_pyproject(start=None) -> Path:
    """The nearest ``pyproject.toml`` from ``start`` (the working directory) up to the
    repository's root (a folder holding ``.git``) or the file system's; none: ``start``'s."""
    folder = Path(start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate / "pyproject.toml"):
            return candidate / "pyproject.toml"
        if (candidate / ".git").exists():
            break
    return folder / "pyproject.toml"


def written_target(target: str, folder: Path) -> str:
    """A file target relative to the pyproject's folder (the keys of a file are read from
    there); a module target as it is."""
    from posenc_spec.gate.loader import absolute_target

    resolved = absolute_target(target)
    path, _, attribute = resolved.rpartition(":")
    if not os.path.isabs(path):
        return target
    try:
        return f"{Path(os.path.relpath(path, folder)).as_posix()}:{attribute}"
    except ValueError:  # another drive
        return resolved


class Pyproject:
    """The file's bytes, what they parse to, and the index of the entry for a target."""

    def __init__(self, path: Path):
        from posenc_spec.gate.config import MAX_CONFIG_BYTES, near_misses
        from posenc_spec.gate.errors import UsageError
        from posenc_spec.gate.user_files import read_bytes, read_toml

        self.path = path
        self.data = read_bytes(path, MAX_CONFIG_BYTES, "pyproject.toml") if os.path.lexists(path) else b""
        self.parsed = read_toml(path, MAX_CONFIG_BYTES, "pyproject.toml") if self.data else {}
        misses = near_misses(self.parsed)
        if misses:
            raise UsageError(f"{path}: [{misses[0]}] is not read; did you mean [{TABLE}]?")
        self.section = (self.parsed.get("tool") or {}).get("posenc-spec")
        if isinstance(self.section, dict) and "target" in self.section:
            raise UsageError(f"{path}: [{TABLE}] declares one target by its own keys; move them into a "
                             f"{ENTRY_HEADER} table first, then run init again")
        self.entries = (self.section or {}).get("targets", [])
        if not isinstance(self.entries, list) or not all(isinstance(entry, dict) for entry in self.entries):
            raise UsageError(f"{path}: {TABLE}.targets is not an array of tables")

    def index_of(self, target: str) -> int | None:
        """The entry that declares ``target`` (resolved from the file's folder), if any."""
        from posenc_spec.gate.loader import TargetError, absolute_target

        wanted = absolute_target(target, self.path.parent)
        for index, entry in enumerate(self.entries):
            written = entry.get("target")
            try:
                if isinstance(written, str) and absolute_target(written, self.path.parent) == wanted:
                    return index
            except TargetError:
                continue
        return None

    @property
    def newline(self) -> bytes:
        return b"\r\n" if b"\r\n" in self.data else b"\n"

    def with_entry(self, keys: dict, replace: int | None) -> bytes:
        """The file with the entry appended (or entry ``replace`` replaced), every other byte as it was."""
        from posenc_spec.gate.identify import toml_text

        newline = self.newline
        block = newline.join(line.encode("utf-8") for line in [ENTRY_HEADER, *toml_text.lines(keys)]) + newline
        if replace is None:
            before = self.data if not self.data or self.data.endswith(newline) else self.data + newline
            return before + (newline if before.strip() else b"") + block
        start, end = self._span(replace)
        return self.data[:start] + block + (newline if end < len(self.data) else b"") + self.data[end:]

    def _span(self, index: int) -> tuple[int, int]:
        """The bytes of entry ``index``'s table: its header line up to the next header's line
        (its blank lines before the next header stay where they are)."""
        from posenc_spec.gate.errors import UsageError

        lines = self.data.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        headers = [number for number, line in enumerate(lines) if _ENTRY_LINE.match(line.decode("utf-8", "replace"))]
        if len(headers) != len(self.entries):
            raise UsageError(f"{self.path}: the entries of {TABLE}.targets are not all written as {ENTRY_HEADER} "
                             "tables; replace the entry by hand")
        first = headers[index]
        last = next((number for number in range(first + 1, len(lines))
                     if _HEADER_LINE.match(lines[number].decode("utf-8", "replace"))), len(lines))
        while last > first + 1 and not lines[last - 1].strip():
            last -= 1
        return offsets[first], offsets[last]


def _checked(pyproject: Pyproject, new: bytes, keys: dict, replace: int | None, answer_declaration) -> None:
    """The new file must parse, keep everything else, and declare the answer (UsageError otherwise)."""
    from posenc_spec.gate.config import declarations_from_table
    from posenc_spec.gate.errors import UsageError

    try:
        parsed = tomllib.loads(new.decode("utf-8").lstrip("\ufeff"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as problem:
        from posenc_spec.gate.identify.toml_text import assignments

        raise UsageError(f"{pyproject.path}: {ENTRY_HEADER} cannot be added to this file ({problem}); add the "
                         f"entry by hand: {assignments(keys)}") from None
    entries = list(pyproject.entries)
    if replace is None:
        entries.append(keys)
    else:
        entries[replace] = keys
    expected = {**pyproject.parsed, "tool": {**pyproject.parsed.get("tool", {}),
                                             "posenc-spec": {**(pyproject.section or {}), "targets": entries}}}
    if parsed != expected:
        raise UsageError(f"{pyproject.path}: adding {ENTRY_HEADER} as text would change other keys of the file; "
                         "add the entry by hand")
    section = parsed["tool"]["posenc-spec"]
    written = declarations_from_table(section, pyproject.path.parent, f"{pyproject.path}: ")
    mine = written[len(entries) - 1 if replace is None else replace]
    if mine.as_dict() != answer_declaration.as_dict():
        raise UsageError(f"{pyproject.path}: the defaults of [{TABLE}] would change what the entry declares; add "
                         "it by hand")


def _entry_keys(target: str, result: dict, request, defaults: dict) -> dict:
    """The entry: the target, its API (unless it is the default one and the table's defaults
    say none), how it is called (the keys of the call's declaration that differ from the API's
    own call, as ``check`` reads them), the answer's keys, and explicit values for the keys the
    table's defaults would otherwise give it."""
    from posenc_spec.gate.identify import call_keys_of
    from posenc_spec.gate.keys import APIS

    call = request.call
    keys = {**call_keys_of(call), **request.asked.entry_keys(result, defaults)}
    api = keys.pop("api", call.api if call.api != APIS[0] or "api" in defaults else None)
    return {"target": target, **({"api": api} if api is not None else {}), **keys}


def run(args) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.identify import IdentifyError
    from posenc_spec.gate.output import destination

    try:
        request = request_of(args)
        pyproject = Pyproject(nearest_pyproject())
        target = written_target(args.target, pyproject.path.parent)
        existing = pyproject.index_of(target)
        if existing is not None and not args.force:
            raise UsageError(f"{pyproject.path} already declares {target} ({TABLE}.targets[{existing}]); --force "
                             "replaces that entry")
        out = destination.open_destination("pyproject.toml", str(pyproject.path))
        result = identify(request)
    except UsageError as problem:
        return error("init", problem)
    except IdentifyError as problem:
        return error("init", f"cannot import {args.target}: {problem}")
    try:
        return _write(args, request, pyproject, target, existing, result, out)
    finally:
        out.close()


def _write(args, request, pyproject, target, existing, result, out) -> int:
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output import destination
    from posenc_spec.gate.output.destination import Unwritten

    if result["convention"] is None or (result.get("slip") and not args.accept_slip):
        destination.emit(f"posenc-spec init: {args.target}: nothing written to {pyproject.path}: {result['message']}",
                         sys.stderr)
        return 1
    defaults = {key: value for key, value in (pyproject.section or {}).items() if key != "targets"}
    keys = _entry_keys(target, result, request, defaults)
    try:
        answer_declaration = declare({**defaults, **keys}, pyproject.path.parent)
        new = pyproject.with_entry(keys, existing)
        _checked(pyproject, new, keys, existing, answer_declaration)
        out.write(new.decode("utf-8"))
    except UsageError as problem:
        return error("init", problem)
    except (Unwritten, OSError) as problem:
        from .arguments import OUTPUT_STATUS

        error("init", problem)
        return OUTPUT_STATUS
    from posenc_spec.gate.identify import toml_text

    verb = "replaced" if existing is not None else "added"
    destination.emit(f"{args.target}: {result['message']}", sys.stdout)
    destination.emit(f"{verb} {ENTRY_HEADER} in {pyproject.path}: {toml_text.assignments(keys)}", sys.stdout)
    return 0
