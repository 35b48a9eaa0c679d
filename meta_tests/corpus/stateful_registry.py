"""The stateful corpus registry: code whose bug, or whose correctness, lives in the order of calls.

Each entry is a function or a class written in a real library's idiom (transformers' legacy
and current rotary classes, flash-attn, rotary-embedding-torch, x-transformers, torchtune,
Meta's reference, vLLM, fairseq, ESPnet, the PyTorch tutorial, Wan, F5-TTS, DDPM code),
registered with the ``[[targets]]`` table the gate reads for it (``api``, the convention's
keys, ``signature``, ``init``, ``method``: :func:`~posenc_spec.gate.declaration.declare`
reads it at import, so a bad one raises ``ValueError`` naming the entry). A wrong entry
names the call sequence that exposes it (``sequence``: the check id ``decode[...]``,
``grow[...]`` ..., or ``aliasing``) and, where one exists, the public issue or pull request
it is modelled on; a correct one, in the same idioms, keeps its caches keyed on the dtype
and the length, slices at its offsets and grows by recomputing.

``STATEFUL_ENTRIES``, ``STATEFUL_WRONG`` and ``STATEFUL_CORRECT`` import both corpus
modules first.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass

from posenc_spec.gate.declaration import declare

from .entry import CorpusEntry

STATEFUL_BUG_CLASSES: dict[str, str] = {
    "dtype-cache": "a cache built or grown in one dtype and read by a call in another (keyed on the length alone)",
    "growth": "a cache built for one length and reused for another, or grown with its positions counted from 0 again",
    "offset": "a cache keyed on the length but not the offset",
    "decode": "a path only one-position decode steps take",
    "batch": "a batch of two broadcast or flattened wrong",
    "rows": "the first row's positions used for every row of a batch",
    "view": "a kernel that assumes x is contiguous",
    "aliasing": "a result that changes under the caller (a view of a cache, a reused output buffer)",
    "memo": "a memo of timestep embeddings keyed on the batch's shape, not its values",
    "input-dtype": "half-precision timesteps computed in their own dtype",
}
# The sequences of the gate (posenc_spec.families.sinusoidal.sequences and
# posenc_spec.families.rope.sequences), and aliasing.
SEQUENCES = ("dtype-order", "decode", "offsets", "grow", "batch", "rows", "view", "memo", "aliasing")


@dataclass(frozen=True)
class StatefulEntry(CorpusEntry):
    """One stateful implementation, its ``[[targets]]`` table (JSON) and, for a wrong one, the
    sequence that exposes it."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    table: str
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()
    sequence: str = ""

    def config_table(self) -> dict:
        return {"target": self.target, **json.loads(self.table)}

    @property
    def api(self) -> str:
        return json.loads(self.table)["api"]

    def describe(self) -> str:
        keys = json.loads(self.table)
        return ", ".join(f"{key}={value}" for key, value in keys.items())

    def exposed_by(self, check_id: str) -> bool:
        """Whether ``check_id`` is the check of the sequence that exposes this entry."""
        return check_id == self.sequence if self.sequence == "aliasing" else check_id.startswith(f"{self.sequence}[")


_ENTRIES: list[StatefulEntry] = []


def _register(function, kind: str, description: str, seen: str, classes: tuple, sequence: str, keys: dict):
    name = function.__name__
    if "api" not in keys:
        raise ValueError(f"{name}: the table needs an api")
    declare({"target": f"{function.__module__}:{name}", **keys}, where=f"{name}: ")
    unknown = sorted(set(classes) - set(STATEFUL_BUG_CLASSES))
    if unknown:
        raise ValueError(f"{name}: unknown bug classes {unknown}; known: {', '.join(STATEFUL_BUG_CLASSES)}")
    if kind == "wrong" and (not classes or sequence not in SEQUENCES):
        raise ValueError(f"{name}: a wrong entry needs bug classes and one of the sequences {', '.join(SEQUENCES)}")
    if any(entry.id == name for entry in _ENTRIES):
        raise ValueError(f"{name}: registered twice")
    _ENTRIES.append(StatefulEntry(name, function.__module__, kind, json.dumps(keys), " ".join(description.split()),
                                  " ".join(seen.split()), tuple(classes), sequence))
    return function


def stateful_wrong(*, bug: str, classes: tuple[str, ...], sequence: str, seen: str = "", **table):
    """Register a wrong implementation: ``bug`` in one line, ``sequence`` the one that exposes it."""
    def decorate(function):
        return _register(function, "wrong", bug, seen, classes, sequence, dict(table))
    return decorate


def stateful_correct(*, idiom: str, seen: str = "", **table):
    """Register a correct implementation: ``idiom`` says how it keeps its state."""
    def decorate(function):
        return _register(function, "correct", idiom, seen, (), "", dict(table))
    return decorate


def __getattr__(name):
    """``STATEFUL_ENTRIES``, ``STATEFUL_WRONG`` and ``STATEFUL_CORRECT``, both modules registered."""
    if name not in ("STATEFUL_ENTRIES", "STATEFUL_WRONG", "STATEFUL_CORRECT"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in ("stateful_wrong", "stateful_correct"):
        importlib.import_module(f"{__package__}.{module}")
    kind = {"STATEFUL_WRONG": "wrong", "STATEFUL_CORRECT": "correct"}.get(name)
    return tuple(entry for entry in _ENTRIES if kind is None or entry.kind == kind)
