"""Known deviations: an xfails file lists check ids whose failure is expected.

One entry per line: a check id or a glob pattern over check ids (``*`` any text, ``?`` one
character; brackets are literal, as in the ids: ``odd[*]``, ``formula[4096x64]``), then
optionally ``# reason``. Blank lines and lines that start
with ``#`` are ignored; a UTF-8 byte-order mark and CRLF line ends are accepted. A failed
check an entry matches is reported as ``xfailed`` (with the reason); a passed one as
``xpassed`` with a warning that the deviation is gone; the entries that match no check of
the run are named in one warning. Every error names the file and line.

A pattern is matched without backtracking (:class:`Glob`), in time linear in the pattern's
length times the id's: a file is the user's, and a regular expression such as ``.*.*.*!``
takes time exponential in its stars on an id it does not match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .user_files import read_text

MAX_XFAILS_BYTES = 1 << 20
UNMATCHED_SHOWN = 3  # entries the warning about unmatched entries names; it counts the rest
_ID = re.compile(r"^[A-Za-z0-9_.*?=:\[\]!,x-]+$")


class Glob:
    """A glob pattern over check ids: ``*`` any text, ``?`` one character, all else literal.

    The pattern is cut at its stars into pieces of fixed length. The first piece must match
    where the id starts and the last where it ends; each piece between is matched at the
    leftmost place after the one before it (leaving the most room for the rest, so that a
    match is found whenever one exists). Each piece is found in time linear in the id times
    the piece, and the pieces do not overlap: linear in the id times the pattern overall.
    """

    def __init__(self, pattern: str):
        pieces = pattern.split("*")
        self.pattern = pattern
        self.head = pieces[0]
        self.tail = pieces[-1] if len(pieces) > 1 else None  # None: no star, the head is the whole pattern
        self.middle = [piece for piece in pieces[1:-1] if piece]  # a run of stars is one star
        self.shortest = len(pattern) - pattern.count("*")
        self.runs = [run for run in re.split(r"[*?]", pattern) if run]  # every match holds each of them

    def matches(self, text: str) -> bool:
        if self.tail is None:
            return len(text) == self.shortest and _at(self.head, text, 0)
        if len(text) < self.shortest or not _at(self.head, text, 0):
            return False
        end = len(text) - len(self.tail)
        if not _at(self.tail, text, end):
            return False
        position = len(self.head)
        for piece in self.middle:
            found = _find(piece, text, position, end)
            if found < 0:
                return False
            position = found + len(piece)
        return True


def _at(piece: str, text: str, start: int) -> bool:
    """Whether ``piece`` (``?`` one character, no ``*``) matches ``text`` at ``start``, where it fits."""
    if "?" not in piece:
        return text.startswith(piece, start)
    return all(character == "?" or character == text[start + offset] for offset, character in enumerate(piece))


def _find(piece: str, text: str, start: int, end: int) -> int:
    """The leftmost place from ``start`` where ``piece`` matches ``text`` and ends by ``end``; -1 for none."""
    if "?" not in piece:
        return text.find(piece, start, end)
    # Candidates are where the piece's longest literal run is (str.find), else every place.
    literal = max(piece.split("?"), key=len)
    offset, last = piece.index(literal), end - len(piece)
    place = start
    while place <= last:
        if literal:
            found = text.find(literal, place + offset, last + offset + len(literal))
            if found < 0:
                return -1
            place = found - offset
        if _at(piece, text, place):
            return place
        place += 1
    return -1


@dataclass(frozen=True)
class Entry:
    pattern: str
    reason: str
    line: int
    glob: Glob = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "glob", Glob(self.pattern))

    def matches(self, check_id: str) -> bool:
        return self.glob.matches(check_id)


@dataclass(frozen=True)
class Xfails:
    """The entries of one xfails file (``path`` for messages)."""

    entries: tuple[Entry, ...] = ()
    path: str = ""
    _first: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # id -> its first entry
    _scans: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # ids -> _scan(ids)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def match(self, check_id: str) -> Entry | None:
        """The first entry that matches ``check_id``; an id is looked up once (the engine asks
        for the same ids after every call, and :meth:`unmatched` answers for a whole plan)."""
        if check_id not in self._first:
            self._first[check_id] = next((entry for entry in self.entries if entry.matches(check_id)), None)
        return self._first[check_id]

    def unmatched(self, check_ids) -> list[Entry]:
        """The entries that match none of ``check_ids``."""
        return [entry for entry, matched in zip(self.entries, self._scan(tuple(check_ids)), strict=True)
                if not matched]

    def unmatched_warning(self, check_ids) -> str | None:
        """One line naming the entries that match none of ``check_ids`` (the first few, and how
        many more), or None when every entry matches one."""
        unmatched = self.unmatched(check_ids)
        if len(unmatched) <= 1:
            return None if not unmatched else (f"{self.path}, line {unmatched[0].line}: {unmatched[0].pattern!r} "
                                               "matches no check of this run")
        shown = ", ".join(f"line {entry.line} {entry.pattern!r}" for entry in unmatched[:UNMATCHED_SHOWN])
        more = f" and {len(unmatched) - UNMATCHED_SHOWN} more" if len(unmatched) > UNMATCHED_SHOWN else ""
        return f"{self.path}: {len(unmatched)} entries match no check of this run: {shown}{more}"

    def _scan(self, ids: tuple[str, ...]) -> list[int]:
        """For each entry, the bit mask of the ``ids`` it matches, in one pass over the entries
        (a file may hold a million patterns). An entry is tried only on the ids that hold each
        literal run of its pattern, found by one look-up per run in a table of every substring
        of the ids; each id's first entry is kept for :meth:`match`."""
        if ids not in self._scans:
            holding = _holding(ids)
            masks, first = [], {}
            for entry in self.entries:
                candidates, matched = (1 << len(ids)) - 1, 0
                for run in entry.glob.runs:
                    candidates &= holding.get(run, 0)
                while candidates:
                    lowest = candidates & -candidates
                    candidates ^= lowest
                    if entry.matches(ids[lowest.bit_length() - 1]):
                        matched |= lowest
                        first.setdefault(ids[lowest.bit_length() - 1], entry)
                masks.append(matched)
            self._scans[ids] = masks
            self._first.update({check_id: first.get(check_id) for check_id in ids})
        return self._scans[ids]


def _holding(ids: tuple[str, ...]) -> dict[str, int]:
    """Every substring of the ``ids``, with the bit mask of the ids that hold it."""
    holding: dict[str, int] = {}
    for bit, check_id in enumerate(ids):
        for start in range(len(check_id)):
            for stop in range(start + 1, len(check_id) + 1):
                part = check_id[start:stop]
                holding[part] = holding.get(part, 0) | 1 << bit
    return holding


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
