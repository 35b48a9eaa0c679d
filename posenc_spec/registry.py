"""The registry the gate's core asks about the encoding families.

Each family is a package, ``posenc_spec/families/<name>/``, with a ``keys.py`` (the names its
declarations are made of; imports nothing) and a ``family.py`` (``FAMILY``: what the core
asks, :class:`posenc_spec.gate.family.Family`). The core knows them only by the names in
:data:`GATED` and loads each by name on first use, so that it depends on no family: adding
one is its package and its name here.
"""


from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

# What the families' modules define (posenc_spec.gate.family.FamilyKeys and Family), named
# here without importing them: the registry sits below the core that asks it.
FamilyKeys = Family = Any

# Where the families' packages are, and the families the gate checks, in the order the docs
# and --help list them.
PACKAGE = "posenc_spec.families"
GATED = ("sinusoidal", "rope", "sincos2d", "t5buckets", "alibi", "mrope")


@cache
def names() -> tuple[FamilyKeys, ...]:
    """Each gated family's :class:`~posenc_spec.gate.family.FamilyKeys` (no NumPy imported)."""
    return tuple(import_module(f"{PACKAGE}.{name}.keys").NAMES for name in GATED)


def apis() -> tuple[str, ...]:
    """Every API of every gated family, the first the default."""
    return tuple(api for keys in names() for api in keys.apis)


# Where the README's links point (it is read on PyPI too, where relative links break).
REPOSITORY = "https://github.com/posenc-spec/posenc-spec/blob/main"


def markdown_table() -> str:
    """The README's table of the gated families: each one's APIs, the keys it declares and
    its page (the README holds this text between ``<!-- families -->`` markers, and a test
    holds it to this function)."""
    rows = ["| family | APIs | its keys | declared |", "|---|---|---|---|"]
    for keys in names():
        rows.append(f"| {keys.title} | {', '.join(f'`{api}`' for api in keys.apis)} | "
                    f"{', '.join(f'`{key}`' for key in keys.keys)} | [how]({REPOSITORY}/{keys.page}) |")
    return "\n".join(rows)


def builtin_targets() -> list[dict]:
    """The reference implementations ``check --builtin`` checks: each family's, in order."""
    return [dict(table) for keys in names() for table in keys.builtin]


def names_of_api(api: str) -> FamilyKeys:
    """The names of the family that owns ``api`` (a ``KeyError`` for no family's)."""
    for keys in names():
        if api in keys.apis:
            return keys
    raise KeyError(api)


def owners_of_key(key: str) -> tuple[FamilyKeys, ...]:
    """The names of the families that read the declaration key ``key``, or whose former name
    of a key it is (empty: the core's key, or no key)."""
    return tuple(keys for keys in names() if key in keys.keys or key in keys.aliases)


def nouns(owners) -> str:
    """What declarations of ``owners`` declare, in words: "a rotary embedding or a 2-D sincos table"."""
    return " or ".join(keys.noun for keys in owners)


def apis_of(owners) -> str:
    """The APIs of ``owners``, for "give --api ...": "rope-freqs or rope-cache or ..."."""
    return " or ".join(api for keys in owners for api in keys.apis)


def family_of_api(api: str) -> Family:
    """The family that owns ``api`` (its ``family.py`` imported on first use)."""
    return import_module(f"{PACKAGE}.{names_of_api(api).name}.family").FAMILY


def snapshot_columns(meta: dict):
    """How the tables of a regression snapshot (``meta``: its ``api`` and ``declaration``)
    are made of sines and cosines: the declared family's answer, or for a snapshot of no
    gated API the first family's that has one (None: none has)."""
    declared = meta.get("declaration") if isinstance(meta.get("declaration"), dict) else {}
    api = meta.get("api")
    owners = [family_of_api(api)] if api in apis() else [family_of_api(keys.apis[0]) for keys in names()]
    return next((found for found in (family.snapshot_columns(declared) for family in owners) if found), None)
