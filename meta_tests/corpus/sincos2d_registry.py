"""The 2-D sincos corpus registry: every implementation, its declaration and how it is called.

Each function is registered by :func:`sincos2d_wrong` or :func:`sincos2d_correct` with the
convention it claims (a preset of :mod:`posenc_spec.families.sincos2d.conventions` and
overridden keys, validated at import) and its signature (:data:`~posenc_spec.families.sincos2d.grid.SIGNATURES`:
``h-w-dim``, ``w-h-dim``, ``dim-pair`` or ``dim-size``; a module is built and run inside the
function, as its library's caller does). A wrong entry names its bug classes, the public
code, issue or PR it is modelled on (``seen``), and the smallest call that shows it
(``smallest``: ``HxW:d=D``, ordered by ``H*W*D``), which
``meta_tests/corpus/test_sincos2d_corpus_oracle.py`` holds it to.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from posenc_spec.families.sincos2d.conventions import Sincos2d, get_convention
from posenc_spec.families.sincos2d.keys import API, FIELDS, SIGNATURES

from .entry import CorpusEntry

# The declaration key of each overridden field (``base`` sets both axes' bases).
KEY_OF_FIELD = {**{field: key for key, field in FIELDS.items() if field != "base"}, "base": "grid_base"}

BUG_CLASSES: dict[str, str] = {
    "axis-order": "the row and column coordinates fill the wrong halves",
    "token-order": "tokens flattened column-major where row-major was meant, or scrambled on non-square grids",
    "position-transform": "positions normalised by the wrong length, scaled twice, offset or cropped wrongly",
    "frequency": "the exponent's denominator, the base, or a per-axis base wrong",
    "layout": "concat and interleaved, by-axis and by-function, or sin and cos mixed up",
    "extra-tokens": "the class token's row missing, misplaced or not zero",
    "output-layout": "the table returned in another shape than declared",
    "precision": "angle arithmetic in float16 or bfloat16",
    "width": "a width that is not a multiple of 4 accepted instead of refused",
    "non-square": "shows only on grids whose sides differ",
}


@dataclass(frozen=True)
class Sincos2dEntry(CorpusEntry):
    """One 2-D corpus implementation and its declaration."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    preset: str
    overrides: tuple
    signature: str
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()
    smallest: str = ""

    @property
    def convention(self) -> Sincos2d:
        return get_convention(self.preset, **dict(self.overrides))

    def describe(self) -> str:
        return ", ".join([self.preset, *(f"{key}={value}" for key, value in self.overrides), self.signature])

    def config_table(self) -> dict:
        """This entry as one ``[[targets]]`` table: ``target``, ``api``, the preset, the keys
        of its overridden fields and its signature (absent for the canonical ``h-w-dim``)."""
        keys = {KEY_OF_FIELD[field]: value for field, value in self.overrides}
        signature = {} if self.signature == SIGNATURES[0] else {"signature": self.signature}
        return {"target": self.target, "api": API, "grid_convention": self.preset, **keys, **signature}

    def call(self, height: int, width: int, dim: int):
        """The entry called in its signature for a ``height x width`` grid of width ``dim``."""
        fn = self.function()
        if self.signature == "h-w-dim":
            return fn(height, width, dim)
        if self.signature == "w-h-dim":
            return fn(width, height, dim)
        if self.signature == "dim-pair":
            return fn(dim, (height, width))
        if self.signature == "dim-size":
            if height != width:
                raise ValueError(f"{self.id} takes square grids only, got {height}x{width}")
            return fn(dim, height)
        raise ValueError(f"{self.id}: the corpus calls no {self.signature} signature")


_ENTRIES: list[Sincos2dEntry] = []
CALLED = ("h-w-dim", "w-h-dim", "dim-pair", "dim-size")


def _register(function, kind, *, convention, signature, description, seen, classes, smallest, overrides):
    name = function.__name__
    if signature not in CALLED:
        raise ValueError(f"{name}: signature must be one of {', '.join(CALLED)} (of {', '.join(SIGNATURES)}), "
                         f"got {signature!r}")
    if isinstance(classes, str):
        raise ValueError(f"{name}: classes must be a tuple of class names, got the string {classes!r}")
    unknown = sorted(set(classes) - set(BUG_CLASSES))
    if unknown:
        raise ValueError(f"{name}: unknown bug classes {unknown}; known: {', '.join(BUG_CLASSES)}")
    if kind == "wrong" and not (classes and smallest):
        raise ValueError(f"{name}: a wrong entry needs its bug classes and its smallest showing call")
    if any(entry.id == name for entry in _ENTRIES):
        raise ValueError(f"{name}: registered twice")
    try:
        get_convention(convention, **overrides)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name}: {error}") from None
    _ENTRIES.append(Sincos2dEntry(name, function.__module__, kind, convention, tuple(sorted(overrides.items())),
                                  signature, " ".join(description.split()), " ".join(seen.split()), tuple(classes),
                                  smallest))
    return function


def sincos2d_wrong(*, bug: str, classes: tuple[str, ...], smallest: str, convention: str = "mae",
                   signature: str = "h-w-dim", seen: str = "", **overrides):
    """Register a wrong implementation: ``bug`` in one line, ``smallest`` the first call (in
    ``H*W*D`` order) that shows it."""
    def decorate(function):
        return _register(function, "wrong", convention=convention, signature=signature, description=bug, seen=seen,
                         classes=classes, smallest=smallest, overrides=overrides)
    return decorate


def sincos2d_correct(*, idiom: str, convention: str, signature: str = "h-w-dim", seen: str = "", **overrides):
    """Register a correct implementation: ``idiom`` says how it computes the table."""
    def decorate(function):
        return _register(function, "correct", convention=convention, signature=signature, description=idiom,
                         seen=seen, classes=(), smallest="", overrides=overrides)
    return decorate


def __getattr__(name):
    """``ENTRIES``, ``WRONG`` and ``CORRECT``, after both corpus modules registered."""
    if name not in ("ENTRIES", "WRONG", "CORRECT"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in ("sincos2d_wrong", "sincos2d_correct"):
        importlib.import_module(f"{__package__}.{module}")
    kind = {"WRONG": "wrong", "CORRECT": "correct"}.get(name)
    return tuple(entry for entry in _ENTRIES if kind is None or entry.kind == kind)
