"""The RoPE corpus registry: every rotary implementation in the corpus, with its declaration.

Each function is registered by :func:`rope_wrong` or :func:`rope_correct` with the keys a
``[[targets]]`` table gives the gate (Hugging Face names, see ``DECLARATION_KEYS``): its
``api`` (``rope-freqs``, ``rope-cache`` or ``rope-apply``), the RoPE convention it claims
(``rope_theta``, ``rope_type``, ``rope_parameters``, ...) and how it is called and what it
returns (``cache_layout``, ``cache_form``, ``cache_call``, ``rope_layout``, ``x_layout``).
Registration validates all of it at import: an unknown key, a key the api does not read,
a value outside its choices, or a convention that :class:`RopeConvention` rejects on one
of the head sizes the gate will use raises ``ValueError`` naming the function.

``ROPE_ENTRIES``, ``ROPE_WRONG`` and ``ROPE_CORRECT`` import the two corpus modules first,
so they are complete whichever module is imported first.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass

from posenc_spec.rope.conventions import ROPE_TYPES, RopeConvention

ROPE_APIS = ("rope-freqs", "rope-cache", "rope-apply")
GRID_HEAD_DIMS = (8, 64, 128)  # the gate's head sizes unless ``head_dim`` is declared

# Key: (the apis that read it, its allowed values or None for "checked elsewhere", default).
_ALL = ROPE_APIS
DECLARATION_KEYS: dict[str, tuple[tuple[str, ...], tuple | None, object]] = {
    "rope_theta": (_ALL, None, 10000.0),
    "rope_type": (_ALL, ROPE_TYPES, "default"),
    "rope_parameters": (_ALL, None, {}),
    "partial_rotary_factor": (_ALL, None, 1.0),
    "rotary_dim": (_ALL, None, None),
    "attention_factor": (_ALL, ("in-cache", "separate"), "in-cache"),
    "head_dim": (_ALL, None, None),
    "max_positions": (_ALL, None, None),
    "rotary_features": (("rope-apply",), ("first", "last"), "first"),
    "rope_layout": (("rope-apply",), ("half", "interleaved"), "half"),
    "x_layout": (("rope-apply",), ("bshd", "bhsd", "sbhd", "thd"), "bshd"),
    "cache_layout": (("rope-cache",), ("half", "interleaved", "compact"), "half"),
    "cache_form": (("rope-cache",), ("cos-sin", "complex", "angles", "sin-cos-cat", "cos-sin-cat", "stacked"),
                   "cos-sin"),
    "cache_call": (("rope-cache",), ("positions", "batched", "length", "x-positions"), "positions"),
}

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
class RopeEntry:
    """One RoPE corpus implementation and its declaration to the gate."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    api: str
    declaration: tuple  # sorted (key, value) pairs; rope_parameters as sorted pairs, lists as tuples
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return f"{self.module}:{self.id}"

    def setting(self, key: str):
        """A declaration key's value, or the gate's default when the entry leaves it out."""
        if key not in DECLARATION_KEYS:
            raise ValueError(f"key must be one of {', '.join(DECLARATION_KEYS)}; got {key!r}")
        declared = dict(self.declaration)
        if key == "rope_parameters":
            return {name: list(value) if isinstance(value, tuple) else value
                    for name, value in declared.get(key, ())}
        return declared.get(key, DECLARATION_KEYS[key][2])

    def config_table(self) -> dict:
        """This entry as one ``[[targets]]`` table: ``target``, ``api`` and the declared keys."""
        table = {"target": self.target, "api": self.api}
        for key, _ in self.declaration:
            table[key] = self.setting(key)
        return table

    def convention(self) -> RopeConvention:
        """The RoPE convention the entry claims."""
        return _convention(dict(self.declaration) | {"rope_parameters": self.setting("rope_parameters")})

    def head_dims(self) -> tuple[int, ...]:
        head_dim = self.setting("head_dim")
        return GRID_HEAD_DIMS if head_dim is None else (head_dim,)

    def describe(self) -> str:
        return f"{self.api}: {self.convention().describe()}; " + ", ".join(
            f"{key}={value}" for key, value in self.declaration if key not in _CONVENTION_KEYS)


_CONVENTION_KEYS = ("rope_theta", "rope_type", "rope_parameters", "partial_rotary_factor", "rotary_dim",
                    "max_positions", "rotary_features", "attention_factor")


def _convention(declared: Mapping) -> RopeConvention:
    defaults = {key: spec[2] for key, spec in DECLARATION_KEYS.items()}
    value = {**defaults, **declared}.get
    return RopeConvention(rope_type=value("rope_type"), theta=value("rope_theta"), params=value("rope_parameters"),
                          partial_rotary_factor=value("partial_rotary_factor"), rotary_dim=value("rotary_dim"),
                          max_position_embeddings=value("max_positions"), rotary_features=value("rotary_features"),
                          attention_factor_placement=value("attention_factor"))


def _frozen(value):
    if isinstance(value, Mapping):
        return tuple(sorted((name, _frozen(item)) for name, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def _check_declaration(name: str, api: str, keys: dict) -> None:
    if api not in ROPE_APIS:
        raise ValueError(f"{name}: api must be one of {', '.join(ROPE_APIS)}; got {api!r}")
    for key, value in keys.items():
        if key not in DECLARATION_KEYS:
            raise ValueError(f"{name}: unknown declaration key {key!r}; known: {', '.join(DECLARATION_KEYS)}")
        apis, choices, _ = DECLARATION_KEYS[key]
        if api not in apis:
            raise ValueError(f"{name}: {key} is read only by {', '.join(apis)}, not by {api}")
        if choices is not None and value not in choices:
            raise ValueError(f"{name}: {key} must be one of {', '.join(choices)}; got {value!r}")
    if "rope_parameters" in keys and not isinstance(keys["rope_parameters"], Mapping):
        raise ValueError(f"{name}: rope_parameters must be a table, got {keys['rope_parameters']!r}")
    head_dim = keys.get("head_dim")
    if head_dim is not None and (isinstance(head_dim, bool) or not isinstance(head_dim, int)
                                 or head_dim < 2 or head_dim % 2):
        raise ValueError(f"{name}: head_dim must be an even int >= 2, got {head_dim!r}")
    try:
        conv = _convention(keys)
        for size in (GRID_HEAD_DIMS if head_dim is None else (head_dim,)):
            conv.frequencies(size)
    except ValueError as error:
        raise ValueError(f"{name}: the declared convention is not usable: {error}") from None


def convention_from_table(table: Mapping) -> tuple[str, RopeConvention]:
    """``(api, convention)`` of a ``[[targets]]`` table, validated as a registration is;
    ``target`` is ignored, any other unknown key raises ``ValueError``."""
    keys = {key: value for key, value in table.items() if key != "target"}
    name = str(table.get("target", "<table>"))
    if "api" not in keys:
        raise ValueError(f"{name}: the declaration needs an api, one of {', '.join(ROPE_APIS)}")
    api = keys.pop("api")
    _check_declaration(name, api, keys)
    return api, _convention(keys)


_ENTRIES: list[RopeEntry] = []


def _register(function, kind: str, description: str, seen: str, classes: tuple, keys: dict):
    name = function.__name__
    api, _ = convention_from_table({"target": name, **keys})
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
                              declaration=tuple(sorted((key, _frozen(value)) for key, value in keys.items())),
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


def __getattr__(name):
    """``ROPE_ENTRIES``, ``ROPE_WRONG`` and ``ROPE_CORRECT``, after both corpus modules registered."""
    if name not in ("ROPE_ENTRIES", "ROPE_WRONG", "ROPE_CORRECT"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in ("rope_wrong", "rope_correct"):
        importlib.import_module(f"{__package__}.{module}")
    kind = {"ROPE_WRONG": "wrong", "ROPE_CORRECT": "correct"}.get(name)
    return tuple(entry for entry in _ENTRIES if kind is None or entry.kind == kind)
