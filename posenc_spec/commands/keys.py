"""``posenc-spec keys [FAMILY]``: the keys a declaration is made of.

Without FAMILY: the families, and the keys several families share or that were renamed
(one name per concept; docs/keys.md is the whole table). With FAMILY (a family's name or one
of its APIs): its APIs and signatures, the sizes ``--init`` and ``--kwarg`` may name, each of
its keys with its flag and values (those ``identify`` reads to call a target marked), the
former names it still reads, and its check ids. Nothing here imports NumPy.
"""

from __future__ import annotations

import difflib
import sys
import textwrap

from posenc_spec import registry
from posenc_spec.gate.keys import FAMILY_KEYS, flag, former_names, readers

from .arguments import error, families_text

WIDTH = 100
KEY_COLUMN = 30


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "keys", help="list the keys a declaration is made of, a family's with their values",
        description="List the families and the keys they share (no FAMILY), or one family's APIs, signatures, "
                    "keys with their values, former key names and check ids. A key is a flag (--base) and a "
                    "TOML or Python keyword (base).")
    parser.add_argument("family", nargs="?", metavar="FAMILY", help="a family's name or one of its APIs")
    parser.set_defaults(run=run)


def run(args) -> int:
    from posenc_spec.gate.output.destination import emit

    if args.family is None:
        emit(overview().splitlines(), sys.stdout)
        return 0
    names = family_named(args.family)
    if names is None:
        known = [*(names.name for names in registry.names()), *registry.apis()]
        close = difflib.get_close_matches(args.family, known, n=1)
        return error("keys", f"no family or API {args.family!r}" + (f" (did you mean {close[0]}?)" if close else
                                                                    f"; known: {', '.join(known)}"))
    emit(family_text(names).splitlines(), sys.stdout)
    return 0


def family_named(name: str):
    """The names of the family called ``name`` or owning the API ``name`` (None: none)."""
    return next((names for names in registry.names() if name == names.name or name in names.apis), None)


def overview() -> str:
    """The families, then each key several families read or that has former names."""
    lines = [families_text(), "", "shared keys (one name per concept; former names still read, with a note):"]
    for key in FAMILY_KEYS:
        families, former = readers(key), former_names(key)
        if len(families) > 1 or former:
            said = f"  {flag(key):<{KEY_COLUMN - 2}}{', '.join(families)}"
            lines.append(said + (f" (formerly {', '.join(former)})" if former else ""))
    lines.append("")
    lines.append("each family's keys and their values: posenc-spec keys FAMILY; every key: docs/keys.md")
    return "\n".join(lines)


def _wrapped(head: str, text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"{head:<{KEY_COLUMN}}", subsequent_indent=" " * KEY_COLUMN,
                         break_on_hyphens=False) if len(head) < KEY_COLUMN else \
        [head, *textwrap.wrap(text, WIDTH, initial_indent=" " * KEY_COLUMN, subsequent_indent=" " * KEY_COLUMN,
                              break_on_hyphens=False)]


def family_text(names) -> str:
    """One family's keys with their values (see the module docstring)."""
    lines = [f"{names.name}: {names.title} ({names.page})", "", "APIs and the signatures they take (--signature; "
             "the first is the API's own form):"]
    for api, signatures in names.signatures.items():
        lines += _wrapped(f"  {api}", ", ".join(signatures))
    lines += ["", "sizes --init and --kwarg may name as {name}:"]
    for api, sizes in names.sizes.items():
        lines += _wrapped(f"  {api}", ", ".join(sizes))
    if names.x_layouts:
        lines += ["", f"--x-layout: {names.x_layouts}"]
    lines += ["", "keys (flag and VALUE; the TOML and Python key is the flag's name with _, or the one in "
                  "[brackets]; * read by identify to call the target):"]
    for key in names.keys:
        metavar, text = names.help[key]
        mark = "*" if key in names.identify_keys else " "
        others = [name for name in readers(key) if name != names.name]
        also = f" (also read by {', '.join(others)})" if others else ""
        spelled = "" if flag(key) == "--" + key.replace("_", "-") else f" [{key}]"
        lines += _wrapped(f" {mark}{flag(key)}{spelled} {metavar}", text + also)
        if key in names.identify_help:
            lines += _wrapped("", "identify: " + names.identify_help[key][1])
    if names.aliases:
        lines += ["", *textwrap.wrap("former names, still read (with a note): " + ", ".join(
            f"{old} -> {key}" for old, key in names.aliases.items()), WIDTH)]
    if names.check_ids:
        lines += ["", *textwrap.wrap("check ids: " + names.check_ids, WIDTH, break_on_hyphens=False)]
    return "\n".join(lines)
