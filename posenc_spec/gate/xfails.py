"""Known deviations: an xfails file lists check ids whose failure is expected.

One entry per line: a check id or a glob pattern over check ids (``*`` any text, ``?`` one
character; brackets are literal, as in the ids: ``odd[*]``, ``formula[4096x1024]``), then
optionally ``# reason``. Blank lines and lines that start
with ``#`` are ignored; a UTF-8 byte-order mark and CRLF line ends are accepted. A failed
check an entry matches is reported as ``xfailed`` (with the reason); a passed one as
``xpassed`` with a warning that the deviation is gone. Every error names the file and line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .user_files import read_text

MAX_XFAILS_BYTES = 1 << 20
_ID = re.compile(r"^[A-Za-z0-9_.*?=:\[\]!,x-]+$")


@dataclass(frozen=True)
class Entry:
    pattern: str
    reason: str
    line: int

    def matches(self, check_id: str) -> bool:
        return _compiled(self.pattern).fullmatch(check_id) is not None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", "."))


@dataclass(frozen=True)
class Xfails:
    """The entries of one xfails file (``path`` for messages)."""

    entries: tuple[Entry, ...] = ()
    path: str = ""

    def __bool__(self) -> bool:
        return bool(self.entries)

    def match(self, check_id: str) -> Entry | None:
        for entry in self.entries:
            if entry.matches(check_id):
                return entry
        return None

    def unmatched(self, check_ids) -> list[Entry]:
        ids = list(check_ids)
        return [entry for entry in self.entries if not any(entry.matches(check_id) for check_id in ids)]


def parse_xfails(text: str, path: str = "<xfails>") -> Xfails:
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        pattern, _, reason = line.partition("#")
        pattern = pattern.strip()
        if not pattern:
            continue
        if not _ID.match(pattern):
            raise UsageError(f"{path}, line {number}: {pattern!r} is not a check id or a glob pattern over check ids")
        entries.append(Entry(pattern, " ".join(reason.split()), number))
    return Xfails(tuple(entries), path)


def read_xfails(path) -> Xfails:
    """The entries of the xfails file at ``path``."""
    path = Path(path)
    text = read_text(path, MAX_XFAILS_BYTES, "xfails file")
    if "\x00" in text:
        raise UsageError(f"{path}, line {text[: text.index(chr(0))].count(chr(10)) + 1}: a NUL byte (a binary file?)")
    return parse_xfails(text, str(path))

