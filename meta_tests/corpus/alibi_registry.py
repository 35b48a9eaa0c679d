"""The ALiBi corpus registry: every ALiBi implementation in the corpus, with its declaration.

Each function (or module class) is registered by :func:`alibi_wrong` or :func:`alibi_correct`
with its ``signature`` (:mod:`posenc_spec.families.alibi.grid`), the ``init`` a module
signature builds it with, the head counts it is judged on when not every count of the grid
fits it (``heads``) and the convention keys it declares (a ``convention`` preset and fields
of :class:`~posenc_spec.families.alibi.conventions.AlibiConvention`). Registration reads the
keys as a declaration would, so an unknown key, a value outside its choices or an unknown
signature raises ``ValueError`` naming the function.

``ALIBI_ENTRIES``, ``ALIBI_WRONG`` and ``ALIBI_CORRECT`` import both corpus modules first, so
they are complete whichever module is imported first.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from posenc_spec.families.alibi.conventions import AlibiConvention, from_keys
from posenc_spec.families.alibi.grid import HEAD_COUNTS, MODULE_SIGNATURES, SIGNATURES

from .entry import CorpusEntry

ALIBI_BUG_CLASSES: dict[str, str] = {
    "slope-rule": "the slopes follow another rule: a geometric sequence for every head count, the interleave "
                  "taken wrong, an exponent off by one",
    "head-order": "the right slopes on the wrong heads: reversed, or a tensor-parallel shard's from the wrong heads",
    "precision": "the bias or its positions formed in bfloat16 or float16 where float32 was meant",
    "decode": "a decoding step (one query after a prefill) gets no bias, or another query's",
    "cache": "a bias kept between calls and sliced or reused wrongly",
    "form": "another bias form: the sign flipped, the wrong distance, a causal row where a symmetric one belongs",
    "padding": "the attention mask's padding not taken out of the positions",
    "partial": "partial ALiBi: the slopes of the wrong head count, or the unbiased heads in the wrong place",
    "crash": "raises where the convention has a value",
}


@dataclass(frozen=True)
class AlibiEntry(CorpusEntry):
    """One ALiBi corpus implementation and its declaration."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    signature: str
    keys: tuple  # the declared convention keys, sorted (key, value) pairs
    init: tuple  # a module's keyword arguments, sorted pairs
    heads: tuple[int, ...]
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()
    attention_heads: int | None = None  # the model's head count a user declares, where the code takes only some

    @property
    def api(self) -> str:
        return "alibi-slopes" if self.signature == "heads" else "alibi-bias"

    def config_table(self) -> dict:
        """This entry as one ``[[targets]]`` table, as a user declares it: ``target``, ``api``,
        ``signature``, ``init``, the convention keys and the model's ``attention_heads``."""
        table = {"target": self.target, "api": self.api, "signature": self.signature, **dict(self.keys)}
        if self.init:
            table["init"] = dict(self.init)
        if self.attention_heads is not None:
            table["attention_heads"] = self.attention_heads
        return table

    def describe(self) -> str:
        """The declared convention in words, as a report's header says it."""
        return self.declaration().spec.describe()

    def convention(self) -> AlibiConvention:
        return from_keys(dict(self.keys))

    def init_kwargs(self) -> dict:
        return dict(self.init)


_ENTRIES: list[AlibiEntry] = []


def _register(function, kind: str, description: str, seen: str, classes: tuple, signature: str, init, heads,
              keys: dict):
    name = function.__name__
    attention_heads = keys.pop("attention_heads", None)
    if signature not in SIGNATURES:
        raise ValueError(f"{name}: signature must be one of {', '.join(SIGNATURES)}, got {signature!r}")
    if (init is not None) != (signature in MODULE_SIGNATURES):
        raise ValueError(f"{name}: init goes with a module signature ({', '.join(MODULE_SIGNATURES)}) and only there")
    try:
        from_keys(keys)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: {error}") from None
    unknown = sorted(set(classes) - set(ALIBI_BUG_CLASSES))
    if isinstance(classes, str) or unknown:
        raise ValueError(f"{name}: classes must be a tuple of {', '.join(ALIBI_BUG_CLASSES)}, got {classes!r}")
    if kind == "wrong" and not (classes and seen):
        raise ValueError(f"{name}: a wrong entry needs a bug class and the public code it is modelled on (seen)")
    if any(entry.id == name for entry in _ENTRIES):
        raise ValueError(f"{name}: registered twice")
    _ENTRIES.append(AlibiEntry(id=name, module=function.__module__, kind=kind, signature=signature,
                               keys=tuple(sorted(keys.items())), init=tuple(sorted((init or {}).items())),
                               heads=tuple(heads or HEAD_COUNTS), description=" ".join(description.split()),
                               seen_in=" ".join(seen.split()), bug_classes=tuple(classes),
                               attention_heads=attention_heads))
    return function


def alibi_wrong(*, bug: str, classes: tuple[str, ...], seen: str, signature: str, init: dict | None = None,
                heads=None, **keys):
    """Register a wrong implementation: ``bug`` in one line, ``seen`` where the same slip was
    reported or written, ``classes`` from :data:`ALIBI_BUG_CLASSES`."""
    def decorate(function):
        return _register(function, "wrong", bug, seen, classes, signature, init, heads, dict(keys))
    return decorate


def alibi_correct(*, idiom: str, signature: str, seen: str = "", init: dict | None = None, heads=None, **keys):
    """Register a correct implementation: ``idiom`` says how it computes ALiBi."""
    def decorate(function):
        return _register(function, "correct", idiom, seen, (), signature, init, heads, dict(keys))
    return decorate


def __getattr__(name):
    """``ALIBI_ENTRIES``, ``ALIBI_WRONG`` and ``ALIBI_CORRECT``, after both corpus modules registered."""
    if name not in ("ALIBI_ENTRIES", "ALIBI_WRONG", "ALIBI_CORRECT"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in ("alibi_wrong", "alibi_correct"):
        importlib.import_module(f"{__package__}.{module}")
    kind = {"ALIBI_WRONG": "wrong", "ALIBI_CORRECT": "correct"}.get(name)
    return tuple(entry for entry in _ENTRIES if kind is None or entry.kind == kind)
