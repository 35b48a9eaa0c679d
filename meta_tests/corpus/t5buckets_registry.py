"""The T5-bucket corpus registry: every bucket function in the corpus, with its declaration.

Each function is registered by :func:`t5_wrong` or :func:`t5_correct` with the keys a
declaration of the family gives (``posenc_spec check --api t5-buckets``): the convention
(``bucket_preset``, and any of ``bidirectional``, ``num_buckets``, ``max_distance``,
``relative_position``), the signature (``static`` by default, ``method`` or ``table``:
:mod:`posenc_spec.families.t5buckets.grid`), ``bucket_args`` (the roles renamed, as real code
names its parameters), ``bucket_query_offset`` for a table, ``init`` and ``method`` for a
module. Registration validates them with the family's own readers, so an unknown key, a bad
value or a bad relation between keys raises ``ValueError`` naming the function.
:func:`call` makes one probe's call of an entry in-process through
:mod:`posenc_spec.families.t5buckets.grid`; :meth:`T5Entry.config_table` gives the whole
declaration the gate checks, :func:`corpus` the list the benchmarks read.

``T5_ENTRIES``, ``T5_WRONG`` and ``T5_CORRECT`` import the two corpus modules first, so they
are complete whichever is imported first.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from posenc_spec.families.t5buckets import grid
from posenc_spec.families.t5buckets.conventions import KEYS, BucketConvention, from_keys

from .entry import CorpusEntry

T5_BUG_CLASSES: dict[str, str] = {
    "halving": "bidirectional's halving of num_buckets forgotten, done twice, or max_exact taken before it",
    "sign": "memory - query and query - memory mixed, or r = 0 in the wrong half",
    "direction": "bidirectional and causal mixed: the flag inverted, later keys bucketed, earlier ones clamped",
    "exact-region": "the exact region's bound taken from the wrong count",
    "log-buckets": "the logarithmic buckets counted or scaled wrongly",
    "clamp": "the clamp to the last bucket missing or to the wrong bucket",
    "rounding": "round or ceil where the formula truncates",
    "precision": "the logarithm taken in float16 or bfloat16, or an integer division before it",
    "overflow": "int32 wrap-around inside the range of relative positions",
    "settings": "a configured num_buckets or max_distance replaced by a hard-coded one",
    "table": "a (q, k) table of the wrong offsets",
}
# How a corpus module is built: with the declared settings, as UMT5 and x-transformers build theirs.
MODULE_INIT = {"bidirectional": "{bidirectional}", "num_buckets": "{num_buckets}", "max_distance": "{max_distance}"}
_CALLING_KEYS = ("signature", "bucket_args", "bucket_query_offset", "init", "method")


@dataclass(frozen=True)
class T5Entry(CorpusEntry):
    """One corpus bucket function and its declaration."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    keys: tuple  # the declared keys as sorted (key, value) pairs, keywords and init as sorted pairs
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()
    function: object = field(default=None, compare=False, repr=False)  # the callable (a class for a method)

    def key(self, name: str, default=None):
        value = dict(self.keys).get(name, default)
        return dict(value) if name in ("bucket_args", "init") and value is not None else value

    def convention(self) -> BucketConvention:
        return from_keys({key: value for key, value in self.keys if key in ("bucket_preset", *KEYS)})

    @property
    def signature(self) -> str:
        return self.key("signature", "static")

    def probes(self) -> list[grid.Probe]:
        return grid.probes_for(self.convention(), self.signature, self.key("bucket_query_offset", "start"))

    def config_table(self) -> dict:
        """The declaration as a ``[[targets]]`` table holds it: its keys, its target and the API."""
        keys = {key: dict(value) if isinstance(value, tuple) else value for key, value in self.keys}
        return {"target": self.target, "api": "t5-buckets", **keys}

    def describe(self) -> str:
        """The declared convention and, where it is not the static function, the signature."""
        said = self.convention().name()
        return said if self.signature == "static" else f"{said}, {self.signature}"


def call(entry: T5Entry, probe: grid.Probe):
    """What ``entry`` returns for ``probe`` (an array), called as its signature says."""
    convention = entry.convention()
    keywords = entry.key("bucket_args")
    if entry.signature == "table":
        return grid.call_table(entry.function, probe, convention, keywords)
    function = entry.function
    if entry.signature == "method":
        sizes = {"bidirectional": convention.bidirectional, "num_buckets": convention.num_buckets,
                 "max_distance": convention.max_distance}
        init = {name: sizes[value.strip("{}")] for name, value in entry.key("init").items()}
        function = getattr(function(**init), entry.key("method"))
    return grid.call_positions(function, probe, convention, keywords,
                                  settings_from_object=entry.signature == "method")


def _check_declaration(name: str, keys: dict) -> None:
    """The keys, read as the family reads them (``ValueError`` naming the function otherwise)."""
    unknown = sorted(set(keys) - {"bucket_preset", *KEYS, *_CALLING_KEYS})
    if unknown:
        raise ValueError(f"{name}: unknown key(s) {', '.join(unknown)}")
    try:
        convention = from_keys({key: value for key, value in keys.items() if key in ("bucket_preset", *KEYS)})
        grid.probes_for(convention, keys.get("signature", "static"), keys.get("bucket_query_offset", "start"))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    for key in ("bucket_args", "init"):
        if key in keys and not isinstance(keys[key], dict):
            raise ValueError(f"{name}: {key} must be a table, got {keys[key]!r}")
    unknown_roles = sorted(set(keys.get("bucket_args", {})) - set(grid.ROLES))
    if unknown_roles:
        raise ValueError(f"{name}: bucket_args name unknown role(s) {', '.join(unknown_roles)}")
    if keys.get("signature") == "method" and not ("init" in keys and "method" in keys):
        raise ValueError(f"{name}: a method entry needs init and method")


_ENTRIES: list[T5Entry] = []


def _frozen(value):
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


def _register(function, kind: str, description: str, seen: str, classes: tuple, keys: dict):
    name = function.__name__
    _check_declaration(name, keys)
    unknown = sorted(set(classes) - set(T5_BUG_CLASSES))
    if isinstance(classes, str) or unknown:
        raise ValueError(f"{name}: classes must be a tuple of {', '.join(T5_BUG_CLASSES)}; got {classes!r}")
    if kind == "wrong" and not (classes and seen):
        raise ValueError(f"{name}: a wrong entry needs its bug classes and where it was seen")
    if any(entry.id == name for entry in _ENTRIES):
        raise ValueError(f"{name}: registered twice")
    _ENTRIES.append(T5Entry(id=name, module=function.__module__, kind=kind,
                            keys=tuple(sorted((key, _frozen(value)) for key, value in keys.items())),
                            description=" ".join(description.split()), seen_in=" ".join(seen.split()),
                            bug_classes=tuple(classes), function=function))
    return function


def t5_wrong(*, bug: str, classes: tuple[str, ...], seen: str, **declaration_keys):
    """Register a wrong bucket function: ``bug`` says in one line what is wrong, ``seen`` the
    public code, issue or PR it is modelled on, ``classes`` which of ``T5_BUG_CLASSES`` it shows."""
    def decorate(function):
        return _register(function, "wrong", bug, seen, classes, dict(declaration_keys))
    return decorate


def t5_correct(*, idiom: str, seen: str = "", **declaration_keys):
    """Register a correct bucket function: ``idiom`` says how it computes the buckets."""
    def decorate(function):
        return _register(function, "correct", idiom, seen, (), dict(declaration_keys))
    return decorate


def __getattr__(name):
    """``T5_ENTRIES``, ``T5_WRONG`` and ``T5_CORRECT``, after both corpus modules registered."""
    if name not in ("T5_ENTRIES", "T5_WRONG", "T5_CORRECT"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in ("t5buckets_wrong", "t5buckets_correct"):
        importlib.import_module(f"{__package__}.{module}")
    kind = {"T5_WRONG": "wrong", "T5_CORRECT": "correct"}.get(name)
    return tuple(entry for entry in _ENTRIES if kind is None or entry.kind == kind)
