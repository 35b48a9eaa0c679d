"""The mutation-testing corpus: realistic wrong implementations and correct ones in other idioms.

``ENTRIES`` lists them all (see :class:`meta_tests.corpus.registry.Entry`); ``WRONG`` and
``CORRECT`` split them. The gate must reject every wrong entry and accept every correct one
under the convention each declares.
"""

from . import correct, wrong  # noqa: F401 -- importing registers the entries
from .registry import BUG_CLASSES, ENTRIES, Entry

WRONG: tuple[Entry, ...] = tuple(entry for entry in ENTRIES if entry.kind == "wrong")
CORRECT: tuple[Entry, ...] = tuple(entry for entry in ENTRIES if entry.kind == "correct")


def by_id(entry_id: str) -> Entry:
    for entry in ENTRIES:
        if entry.id == entry_id:
            return entry
    raise KeyError(f"no corpus entry {entry_id!r}")


__all__ = ["BUG_CLASSES", "CORRECT", "ENTRIES", "WRONG", "Entry", "by_id"]
