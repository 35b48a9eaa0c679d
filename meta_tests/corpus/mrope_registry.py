"""The multi-axis rotary corpus registry: every function in the corpus, with its declaration.

Each function or class is registered by :func:`mrope_correct` or :func:`mrope_wrong` with the
keys a declaration of the family gives (``posenc_spec check --api mrope-cache`` or
``mrope-positions``): the convention (``mrope_preset`` and its overrides), the signature and
the way the target is built (``init``, ``method``). :meth:`MropeEntry.config_table` gives the
whole declaration the gate checks, exactly as ``check --config`` reads it.

``MROPE_ENTRIES``, ``MROPE_WRONG`` and ``MROPE_CORRECT`` import the two corpus modules first.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .entry import CorpusEntry

MROPE_BUG_CLASSES: dict[str, str] = {
    "sections": "the frequency slots split among the axes wrongly: sections swapped, not doubled, summed wrongly",
    "axes": "the axes in the wrong order, or a grid walked in the wrong order",
    "slot-order": "contiguous and interleaved sections mixed up",
    "frequencies": "shared and per-axis frequencies mixed up, theta per axis wrong, an exponent over half the head",
    "layout": "rotate-half and interleaved pairs mixed up, sin and cos swapped",
    "positions": "positions shifted, the merge size forgotten, text after an image off by one, a temporal scale lost",
    "crop": "a cropped grid's positions made otherwise than np.linspace(start, stop, n, endpoint=False)",
    "precision": "positions or angles rounded to a half-precision dtype",
}


@dataclass(frozen=True)
class MropeEntry(CorpusEntry):
    """One corpus target and its declaration."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    keys: tuple  # the declared keys as sorted (key, value) pairs
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()

    def config_table(self) -> dict:
        keys = {key: dict(value) if isinstance(value, tuple) and value and isinstance(value[0], tuple) else value
                for key, value in self.keys}
        return {"target": self.target, "api": keys.pop("api", "mrope-cache"), **keys}

    def describe(self) -> str:
        return self.description


_REGISTERED: list[MropeEntry] = []


def _register(kind: str, keys: dict, description: str, seen_in: str, bug_classes: tuple):
    unknown = [name for name in bug_classes if name not in MROPE_BUG_CLASSES]
    if unknown:
        raise ValueError(f"unknown bug classes {unknown}")

    def add(function):
        frozen = tuple(sorted((key, tuple(sorted(value.items())) if isinstance(value, dict) else value)
                              for key, value in keys.items()))
        _REGISTERED.append(MropeEntry(function.__name__, function.__module__, kind, frozen, description, seen_in,
                                      bug_classes))
        return function

    return add


def mrope_correct(description: str, seen_in: str = "", **keys):
    """Register a correct implementation under the declaration ``keys``."""
    return _register("correct", keys, description, seen_in, ())


def mrope_wrong(description: str, seen_in: str, bug_classes: tuple[str, ...], **keys):
    """Register a wrong implementation (a slip of ``seen_in``) under the declaration it claims."""
    return _register("wrong", keys, description, seen_in, bug_classes)


def _entries(kind: str | None = None) -> tuple[MropeEntry, ...]:
    importlib.import_module(".mrope_correct", __package__)
    importlib.import_module(".mrope_wrong", __package__)
    return tuple(entry for entry in _REGISTERED if kind is None or entry.kind == kind)


_KINDS = {"MROPE_ENTRIES": None, "MROPE_WRONG": "wrong", "MROPE_CORRECT": "correct"}


def __getattr__(name: str):
    """``MROPE_ENTRIES``, ``MROPE_WRONG``, ``MROPE_CORRECT``: read after both corpus modules are
    imported, whichever imported this one first."""
    if name in _KINDS:
        return _entries(_KINDS[name])
    raise AttributeError(name)
