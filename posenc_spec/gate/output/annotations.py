"""GitHub Actions annotations of a ``--json`` report: workflow commands a job prints.

A line ``::error file=F,line=L,title=T::MESSAGE`` on a step's output becomes an annotation
on the pull request, at line ``L`` of file ``F``. Per target that does not conform:

- a target that cannot be imported: one ``::error`` with the import check's reason;
- each failed check kind: one ``::error`` titled ``posenc-spec CHECK_ID`` (the kind, when
  several of its calls failed), the message the target, how many failed and the worst one's reason;
- each of the target's warnings (a known deviation that is gone, a changed global
  state): one ``::warning``;
- each hint (the slip its tables show, :mod:`posenc_spec.gate.identify.hint`): one
  ``::notice``, first, so that the limit below never hides it.

``F`` and ``L`` are where the target's function is defined (the report's ``location``),
``F`` relative to ``root`` (the working directory). A location outside ``root`` is named in
the message instead (GitHub can only place a file of the repository); a null location gives
an annotation on the run, without ``file`` and ``line``. At most ``limit`` lines per target,
hints first, then errors, then one line saying how many more the report holds; and at most
``MAX_PER_STEP`` of each level in all (GitHub shows 10 per step), each target's first before
any target's second, the last a summary that says how many more there are: one broken target
must not hide the others.

Escaping follows the runner's parser (``@actions/core``'s ``command.ts``, the runner's
``ActionCommand``): in every field, ``%``, CR and LF become ``%25``, ``%0D`` and ``%0A``; in
a property (``file``, ``line``, ``title``), ``:`` and ``,`` also become ``%3A`` and ``%2C``,
since they separate the properties from each other and from the message. Every other
character a terminal acts on (:func:`posenc_spec.text.printable`) is then shown as its
backslash escape. Print the lines with
``posenc_spec.gate.output.destination.emit(lines, workflow_commands=True)``.

Any other line the gate prints passes through :func:`inert`: the runner runs a line as a
command when it starts with ``::`` (after white space) or holds ``##[`` anywhere (the old
form, still read; Azure Pipelines reads ``##vso[``), so a target named ``::add-mask::x``
cannot hide or forge anything in the log.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from posenc_spec.text import printable

MAX_LINES_PER_TARGET = 10
MAX_PER_STEP = 10  # GitHub shows at most 10 annotations of each level per step
_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


_LEADING_COMMAND = re.compile(r"^(\s*):")  # the runner trims leading white space, then looks for "::"
_OLD_COMMAND = re.compile(r"#(?=#(?:vso)?\[)")  # "##[" and "##vso[" anywhere in a line


def _escape(text: str, escapes) -> str:
    for character, escaped in escapes:  # "%" first, so that no escape is escaped again
        text = text.replace(character, escaped)
    return printable(text)


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped, then what a terminal acts on."""
    return _escape(str(text), _DATA_ESCAPES)


def escape_property(text: str) -> str:
    """A workflow command's property value: ``%``, CR, LF, ``:`` and ``,`` escaped, then
    what a terminal acts on."""
    return _escape(str(text), _PROPERTY_ESCAPES)


def inert(line: str) -> str:
    """``line`` (one line, no line break) as text a CI runner shows and never runs: a
    leading ``::`` has its first colon, and ``##[`` or ``##vso[`` its first ``#``, written
    as a backslash escape (``\\x3a``, ``\\x23``)."""
    if line.lstrip().startswith("::"):
        line = _LEADING_COMMAND.sub(lambda match: match.group(1) + "\\x3a", line, count=1)
    return _OLD_COMMAND.sub(r"\\x23", line)


def command(level: str, message: str, file: str | None = None, line: int | None = None,
            title: str | None = None) -> str:
    """One workflow command: ``::level file=..,line=..,title=..::message``, each part escaped."""
    if level not in ("error", "warning", "notice"):
        raise ValueError(f"level must be error, warning or notice, got {level!r}")
    properties = [f"{name}={escape_property(value)}" for name, value in
                  (("file", file), ("line", line if file is not None else None), ("title", title)) if value is not None]
    return f"::{level} {','.join(properties)}::{escape_data(message)}" if properties else \
        f"::{level}::{escape_data(message)}"


def relative_file(location: dict | None, root) -> tuple[str | None, int | None]:
    """``(file, line)`` of a location, ``file`` relative to ``root`` with ``/`` separators;
    ``(None, None)`` when the location is null or outside ``root``."""
    if not location:
        return None, None
    try:
        relative = Path(os.path.realpath(location["file"])).relative_to(os.path.realpath(root))
    except ValueError:
        return None, None
    return relative.as_posix(), location.get("line")


def _planned(target: dict) -> dict:
    counts = {}
    for check in target["checks"]:
        kind = check["id"].split("[", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _ratio(check: dict) -> float:
    worst = check.get("worst") or {}
    ratio = worst.get("ratio")
    return ratio if isinstance(ratio, (int, float)) else 0.0


def _failed_kinds(target: dict, name: str, elsewhere: str) -> list[tuple[str, str, str]]:
    """One ``::error`` per failed check kind: the worst of its calls, and how many failed."""
    groups = {}
    for check in target["checks"]:
        if check["status"] == "failed":
            groups.setdefault(check["id"].split("[", 1)[0], []).append(check)
    planned, found = _planned(target), []
    for kind, checks in groups.items():
        worst = max(checks, key=_ratio)
        if target["status"] == "error" and worst["id"] == "import":
            found.append(("error", f"posenc-spec: cannot import {name}", f"{name}: {worst['reason']}"))
        elif len(checks) == 1:
            found.append(("error", f"posenc-spec {worst['id']}", f"{name}{elsewhere}: {worst['reason']}"))
        else:
            found.append(("error", f"posenc-spec {kind}", f"{name}{elsewhere}: {len(checks)} of {planned[kind]} calls "
                                                          f"failed; worst {worst['id']}: {worst['reason']}"))
    return found


def _target_items(target: dict, root, limit: int) -> list[tuple[str, str]]:
    """``(level, line)`` of each annotation of one target (see the module docstring)."""
    file, line = relative_file(target.get("location"), root)
    name = target["target"]
    elsewhere = ""
    if file is None and target.get("location"):
        elsewhere = f" (defined at {target['location']['file']}, line {target['location']['line']})"
    found = [("notice", "posenc-spec hint", f"{name}{elsewhere}: {hint['text']}") for hint in target.get("hints", ())]
    found += [("notice", f"posenc-spec note {check['id']}", f"{name}{elsewhere}: {check['reason']}")
              for check in target["checks"] if check["status"] == "noted"]
    found += _failed_kinds(target, name, elsewhere)
    found += [("warning", "posenc-spec warning", f"{name}{elsewhere}: {warning}") for warning in target["warnings"]]
    items = [(level, command(level, message, file, line, title)) for level, title, message in found[:limit]]
    hidden = found[limit:]
    if hidden:
        level = "error" if any(level == "error" for level, _, _ in hidden) else "warning"
        failed = sum(check["status"] == "failed" for check in target["checks"])
        items.append((level, command(level, f"{name}: {len(hidden)} more annotations not shown ({failed} failed "
                                            "checks in all); the --json and --junitxml reports list every check",
                                     file, line, f"posenc-spec: {len(hidden)} more")))
    return items


def target_annotations(target: dict, root, limit: int = MAX_LINES_PER_TARGET) -> list[str]:
    """The annotations of one target of a report (see the module docstring)."""
    return [line for _, line in _target_items(target, root, limit)]


def _within_step(per_target: list, level: str) -> tuple[set, str | None]:
    """Which of the ``level`` annotations are printed, at most :data:`MAX_PER_STEP` with the
    summary: each target's first, then each target's second, and so on (so that every
    target reaches the pull request before any gets a second); and the summary line."""
    places = [[(number, index) for index, (found, _) in enumerate(items) if found == level]
              for number, items in enumerate(per_target)]
    total = sum(map(len, places))
    if total <= MAX_PER_STEP:
        return {place for target in places for place in target}, None
    chosen, depth = [], 0
    while len(chosen) < MAX_PER_STEP - 1:
        chosen += [target[depth] for target in places if depth < len(target)][:MAX_PER_STEP - 1 - len(chosen)]
        depth += 1
    hidden = total - len(chosen)
    targets = len({number for number, _ in set(place for target in places for place in target) - set(chosen)})
    summary = command(level, f"{hidden} more {level} annotations of {targets} targets not shown (GitHub shows "
                             f"{MAX_PER_STEP} per step): the --json and --junitxml reports list every check",
                      title=f"posenc-spec: {hidden} more")
    return set(chosen), summary


def github_annotations(report: dict, root=None, limit: int = MAX_LINES_PER_TARGET) -> list[str]:
    """The workflow commands for every target of a report of schema_version 1 that has a
    failed check or a warning, in the report's order; ``root`` defaults to the working
    directory. Of each level at most :data:`MAX_PER_STEP` lines in all, the last a summary."""
    if not isinstance(report, dict) or not isinstance(report.get("targets"), list):
        raise ValueError(f"report must be a posenc-spec report dict with a 'targets' list, got {type(report).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    root = os.getcwd() if root is None else root
    per_target = [_target_items(target, root, limit) for target in report["targets"]]
    kept, summaries = set(), []
    for level in ("notice", "error", "warning"):
        chosen, summary = _within_step(per_target, level)
        kept |= chosen
        summaries += [summary] if summary else []
    return [line for number, items in enumerate(per_target) for index, (_, line) in enumerate(items)
            if (number, index) in kept] + summaries
