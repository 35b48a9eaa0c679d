"""Words of this process's memory read at C speed: a dictionary's version tag, and the
8-byte words at fixed addresses gathered at once (:class:`Words`).

CPython 3.11 to 3.13 keep in each dictionary a version tag that changes at every change of
it (``ma_version_tag``, after the object header and the item count; each new value is drawn
from one counter of the interpreter, so no two dictionaries share one after a change). The
state's readings compare tags to learn, without copying a dictionary, that it is unchanged.
Where the probe made when this module is imported finds no such tag (another interpreter,
a later CPython), :data:`VERSION_OFFSET` is None and each reading copies instead.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

WORD = ctypes.sizeof(ctypes.c_uint64)


def word(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


def _version_offset() -> int | None:
    """Where a dictionary keeps its version tag, or None where this interpreter keeps none
    that changes at every change: a probe dictionary is changed each way and must show a new
    tag each time, and the same tag while untouched."""
    if sys.implementation.name != "cpython":
        return None
    offset = object.__basicsize__ + ctypes.sizeof(ctypes.c_ssize_t)
    probe = {"a": 1}
    tags = [word(id(probe) + offset)]
    for change in (lambda: probe.__setitem__("a", 2), lambda: probe.__setitem__("b", 3),
                   lambda: probe.__delitem__("a"), lambda: probe.update(c=4), probe.clear):
        change()
        tags.append(word(id(probe) + offset))
    return offset if len(set(tags)) == len(tags) and word(id(probe) + offset) == tags[-1] else None


VERSION_OFFSET = _version_offset()


def version_tag(dictionary: dict) -> int | None:
    """``dictionary``'s version tag (None where the interpreter keeps none); the caller holds
    the dictionary (never a freed object's memory is read)."""
    return None if VERSION_OFFSET is None else word(id(dictionary) + VERSION_OFFSET)


class Words:
    """The 8-byte words at fixed addresses, read together as bytes: one NumPy gather over a
    view of this process's memory from the lowest address to the highest. Nothing but those
    words is read, and each lies inside an object its owner holds (never freed). Objects are
    aligned to 16 bytes and the offsets are whole words, so each address is a whole number
    of words from the lowest."""

    def __init__(self, places: list[int]):
        self.memory = None
        if places:
            low = min(places)
            span = ctypes.c_uint64 * ((max(places) - low) // WORD + 1)
            self.memory = np.frombuffer(span.from_address(low), np.uint64)
            self.indices = np.array([(place - low) // WORD for place in places], np.intp)

    def read(self) -> bytes:
        return b"" if self.memory is None else self.memory.take(self.indices).tobytes()
