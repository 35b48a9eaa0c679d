"""The RoPE corpus registry: every rotary implementation in the corpus, with its declaration.

Each function is registered by :func:`rope_wrong` or :func:`rope_correct` with the keys a
``[[targets]]`` table gives the gate: its ``api`` (``rope-freqs``, ``rope-cache`` or
``rope-apply``), the RoPE convention it claims (``rope_theta``, ``rope_type``,
``rope_parameters``, ...) and how it is called and what it returns (``cache_layout``,
``cache_form``, ``cache_call``, ``rope_layout``, ``x_layout``). Registration has the gate
read them (:func:`~posenc_spec.gate.declaration.declare`, as ``check --config`` does), so an
unknown key, a value outside its choices, or a convention the gate refuses on one of the
head sizes it will use raises ``ValueError`` naming the function. The registry adds one
rule of its own, ``READ_BY``: a key that only one api reads may not be given to another.

``ROPE_ENTRIES``, ``ROPE_WRONG`` and ``ROPE_CORRECT`` import the two corpus modules first,
so they are complete whichever module is imported first.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass

from posenc_spec.families.rope import oracle
from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.keys import NAMES as ROPE_NAMES
from posenc_spec.gate.calls import Outcome
from posenc_spec.gate.declaration import declare

from .entry import CorpusEntry

ROPE_APIS = ROPE_NAMES.apis

# The keys only some apis read (the gate takes every rotary key with every rotary api):
# how the call is shaped, and which features rotate (a cache holds no features).
READ_BY: dict[str, tuple[str, ...]] = {
    "rotary_features": ("rope-apply",),
    "rope_layout": ("rope-apply",),
    "x_layout": ("rope-apply",),
    "cache_layout": ("rope-cache",),
    "cache_form": ("rope-cache",),
    "cache_call": ("rope-cache",),
}
# Keys the gate holds on the convention, under these names (the others of READ_BY on the RopeSpec).
_ON_CONVENTION = {"rotary_features": "rotary_features", "attention_factor": "attention_factor_placement"}

ROPE_BUG_CLASSES: dict[str, str] = {
    "precision": "positions, frequencies or angles in a low-precision dtype (bfloat16/float16, autocast)",
    "layout": "half and interleaved pairings mixed, a wrong permutation, or the rotation on the wrong axis",
    "partial-rotary": "the rotary size wrong: head_dim where rotary_dim belongs, or the partial factor dropped",
    "apply": "the cache is right but the rotation applied with it is not",
    "dynamic-cache": "dynamic NTK's base, or a cos/sin cache, that does not follow the call's length",
    "yarn": "YaRN's frequencies or attention factor",
    "longrope": "LongRoPE's choice of short or long factors",
    "llama3": "llama3's wavelength-dependent scaling",
    "attention-factor": "the attention factor A collapsed, squared, ignored or applied to cos only",
    "swapped-functions": "sin and cos swapped",
    "sign": "the rotation turns the other way",
    "off-by-one": "positions shifted by one",
    "history": "the result depends on earlier calls (state kept in a module-level object)",
    "global-state": "the call changes process-wide state and leaves it changed",
}


@dataclass(frozen=True)
class RopeEntry(CorpusEntry):
    """One RoPE corpus implementation and its declaration to the gate."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    api: str
    keys: tuple  # the declared keys as sorted (key, value) pairs; rope_parameters as sorted pairs, lists as tuples
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()

    def config_table(self) -> dict:
        """This entry as one ``[[targets]]`` table: ``target``, ``api`` and the declared keys."""
        return {"target": self.target, "api": self.api, **{key: _thawed(key, value) for key, value in self.keys}}

    def setting(self, key: str):
        """How the gate reads a key of ``READ_BY`` or ``attention_factor``: declared, or its default."""
        rope = self.declaration().spec
        if key in _ON_CONVENTION:
            return getattr(rope.convention, _ON_CONVENTION[key])
        if key not in READ_BY:
            raise ValueError(f"key must be one of {', '.join([*READ_BY, *_ON_CONVENTION])}; got {key!r}")
        return getattr(rope, key)

    def convention(self) -> RopeConvention:
        """The RoPE convention the entry claims, as the gate reads it."""
        return self.declaration().spec.convention

    def head_dims(self) -> tuple[int, ...]:
        return self.declaration().spec.head_dims

    def describe(self) -> str:
        return f"{self.api}: {self.declaration().spec.describe()}" + "".join(
            f", {key}={value}" for key, value in self.keys if key in READ_BY)


def _thawed(key: str, value):
    """A declared value back as TOML gives it: ``rope_parameters`` a table, its lists lists."""
    if key == "rope_parameters":
        return {name: list(item) if isinstance(item, tuple) else item for name, item in value}
    return value


def _frozen(value):
    if isinstance(value, Mapping):
        return tuple(sorted((name, _frozen(item)) for name, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def _check_declaration(name: str, module: str, keys: dict) -> str:
    """The api of a registration's keys, after the gate has read them (``ValueError`` naming
    the function otherwise)."""
    if "api" not in keys:
        raise ValueError(f"{name}: the declaration needs an api, one of {', '.join(ROPE_APIS)}")
    api = keys["api"]
    if api not in ROPE_APIS:
        raise ValueError(f"{name}: api must be one of {', '.join(ROPE_APIS)}; got {api!r}")
    for key in keys:
        if key in READ_BY and api not in READ_BY[key]:
            raise ValueError(f"{name}: {key} is read only by {', '.join(READ_BY[key])}, not by {api}")
    if "rope_parameters" in keys and not isinstance(keys["rope_parameters"], Mapping):
        raise ValueError(f"{name}: rope_parameters must be a table, got {keys['rope_parameters']!r}")
    declare({"target": f"{module}:{name}", **keys}, where=f"{name}: ")
    return api


_ENTRIES: list[RopeEntry] = []


def _register(function, kind: str, description: str, seen: str, classes: tuple, keys: dict):
    name = function.__name__
    api = _check_declaration(name, function.__module__, keys)
    keys.pop("api")
    if isinstance(classes, str):
        raise ValueError(f"{name}: classes must be a tuple of class names, got the string {classes!r}")
    unknown = sorted(set(classes) - set(ROPE_BUG_CLASSES))
    if unknown:
        raise ValueError(f"{name}: unknown bug classes {unknown}; known: {', '.join(ROPE_BUG_CLASSES)}")
    if kind == "wrong" and not classes:
        raise ValueError(f"{name}: a wrong entry needs at least one bug class")
    if any(entry.id == name for entry in _ENTRIES):
        raise ValueError(f"{name}: registered twice")
    _ENTRIES.append(RopeEntry(id=name, module=function.__module__, kind=kind, api=api,
                              keys=tuple(sorted((key, _frozen(value)) for key, value in keys.items())),
                              description=" ".join(description.split()), seen_in=" ".join(seen.split()),
                              bug_classes=tuple(classes)))
    return function


def rope_wrong(*, bug: str, classes: tuple[str, ...], seen: str = "", **declaration_keys):
    """Register a wrong implementation: ``bug`` says in one line what is wrong, ``seen`` where
    the same slip was reported, ``classes`` which of ``ROPE_BUG_CLASSES`` it shows."""
    def decorate(function):
        return _register(function, "wrong", bug, seen, classes, dict(declaration_keys))
    return decorate


def rope_correct(*, idiom: str, seen: str = "", **declaration_keys):
    """Register a correct implementation: ``idiom`` says how it computes RoPE."""
    def decorate(function):
        return _register(function, "correct", idiom, seen, (), dict(declaration_keys))
    return decorate


def rope_entry(entry_id: str) -> RopeEntry:
    """The entry registered under ``entry_id`` (``KeyError`` when none is)."""
    for entry in __getattr__("ROPE_ENTRIES"):
        if entry.id == entry_id:
            return entry
    raise KeyError(f"no RoPE corpus entry {entry_id!r}")


def cache_outcome(cos, sin, layout: str = "half", dtype: str = "float64") -> Outcome:
    """What a rope-cache target returning the compact ``(cos, sin)`` in ``layout`` and
    ``dtype`` hands the gate (the RoPE tests build it from the oracle or from torch)."""
    if layout != "compact":
        cos, sin = oracle.expand(cos, layout), oracle.expand(sin, layout)
    return Outcome("ok", f"{dtype} cos, sin", arrays=[cos.astype(dtype), sin.astype(dtype)], dtypes=[dtype, dtype])


def __getattr__(name):
    """``ROPE_ENTRIES``, ``ROPE_WRONG`` and ``ROPE_CORRECT``, after both corpus modules registered."""
    if name not in ("ROPE_ENTRIES", "ROPE_WRONG", "ROPE_CORRECT"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in ("rope_wrong", "rope_correct"):
        importlib.import_module(f"{__package__}.{module}")
    kind = {"ROPE_WRONG": "wrong", "ROPE_CORRECT": "correct"}.get(name)
    return tuple(entry for entry in _ENTRIES if kind is None or entry.kind == kind)
