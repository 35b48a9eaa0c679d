"""What ``posenc-spec check`` prints for a person: a header, then per target a line ending with
its verdict, the hint, one line per failing check kind, what could not run and the warnings."""

from __future__ import annotations

import collections
import dataclasses
import re

from posenc_spec import __version__

from ..advice import common_reason, reason_of
from ..against import regression_rule

MAX_FAILURE_LINES = 6  # check kinds listed without -v
MAX_HINTED_LINES = 1  # where a hint names the slip: its worst evidence (ten failing targets fit on a screen)
# How a user asks for every check, by how the declaration was written (Declaration.spelling).
EVERY_CHECK = {"flags": "-v lists every check", "plugin": "-v lists every check", "toml": "-v lists every check",
               "python": "posenc_spec.check(...).text(verbose=True) lists every check"}
REGRESSION = "regression"
TAGS = {"passed": "ok   ", "failed": "FAIL ", "skipped": "skip ", "xfailed": "xfail", "xpassed": "XPASS",
        "noted": "note "}


def run_header(count: int, config: str | None, jobs: int, shard=(1, 1)) -> str:
    where = f"config {config}" if config else "targets from the command line"
    parts = [f"posenc-spec {__version__}", where, f"{count} target{'s' * (count != 1)}", f"-j {jobs}"]
    if shard != (1, 1):
        parts.append(f"shard {shard[0]}/{shard[1]}")
    return " | ".join(parts)


def declared(report) -> str:
    """What the target is judged against, in brackets: its API, its convention, its snapshot."""
    declaration = report.declaration
    parts = [f"{declaration.api} API"]
    if declaration.formula:
        parts += declaration.spec.header_parts()
    if declaration.against is not None:
        rule = regression_rule(declaration, declaration.against)
        parts.append(f"against {declaration.against_path}, {rule.describe()}")
    return f"[{', '.join(parts)}]"


def target_header(report) -> str:
    """The target's first line: its name, what it is judged against, its tally and verdict."""
    return f"{report.declaration.name}  {declared(report)}: {verdict(report)}"


MAX_DETAIL_LINES = 8


def detail_lines(check) -> list[str]:
    """The regression check's comparisons that failed, one line each (at most MAX_DETAIL_LINES)."""
    lines = []
    for call in check.details:
        if call["passed"]:
            continue
        if call["problem"]:
            lines.append(f"      {call['label']}: {call['problem']}")
        for output in call["outputs"]:
            if output["passed"]:
                continue
            if output["problem"]:
                lines.append(f"      {call['label']}: {output['problem']}")
                continue
            buckets = ", ".join(f"{label}: {count}" for label, count in output["histogram"].items() if count)
            lines.append(f"      {call['label']} output {output['output']}: max {output['max_ulp']} ULP at "
                         f"{output['worst_index']}: old {output['old_value']!r}, new {output['new_value']!r}; "
                         f"{output['changed']} of {output['size']} changed (ULPs {buckets})")
    if len(lines) > MAX_DETAIL_LINES:
        more = len(lines) - MAX_DETAIL_LINES
        lines = lines[:MAX_DETAIL_LINES] + [f"      ... {more} more (--json FILE records them)"]
    return lines


def _is_not_run(check) -> bool:
    return check.status == "skipped" and check.message.startswith("not run: ")


def _kind(name: str) -> str:
    """A check id without its slot: ``formula`` of ``formula[50x8]``."""
    return name.split("[", 1)[0]


def _ratio(check) -> float:
    return check.worst.ratio if check.worst is not None else 0.0


def _kind_line(checks: list, planned: int, declared: str) -> str:
    """One line for the checks of one kind and status: the worst of them, and how many there are
    (``declared``, the convention the header already names, is not repeated)."""
    worst = max(checks, key=_ratio)
    message = worst.message.replace(f" under {declared}", "") if declared else worst.message
    if len(checks) == 1:
        return f"  {TAGS[worst.status]} {worst.name}: {message}"
    reason = message if worst.status in ("xfailed", "xpassed") else reason_of(dataclasses.replace(worst,
                                                                                                  message=message))
    return f"  {TAGS[worst.status]} {_kind(worst.name)}, {len(checks)} of {planned} calls; worst {worst.name}: {reason}"


_IMPORTED = re.compile(r"importing (\S+) changed")
_SIDE_EFFECTS = "import side effects, kept as in your program"


def _warning_line(warning: str, verbose: bool) -> str:
    """A warning; the side effects of imported libraries in one short line, unless ``verbose``."""
    if verbose or not warning.startswith(_SIDE_EFFECTS):
        return f"  warning: {warning}"
    modules = list(dict.fromkeys(_IMPORTED.findall(warning)))
    named = ", ".join(modules[:3]) + (f" and {len(modules) - 3} more" if len(modules) > 3 else "")
    return f"  note: importing {named or 'its libraries'} changed process state, kept as in your program (-v lists it)"


def verdict(report) -> str:
    """How many checks ran and failed, and the verdict: ``67 checks, 25 failed: does not conform``."""
    counts = report.counts()
    tally = f"{len(report.checks)} checks, {counts['failed']} failed"
    tally += "".join(f", {counts[status]} {status}" for status in ("noted", "skipped", "xfailed", "xpassed")
                     if counts[status])
    said = {"conforms": "conforms", "does-not-conform": "does not conform",
            "error": "cannot be imported"}[report.status]
    return f"{tally}: {said}"


def _every_check(report) -> list[str]:
    """``-v``: every check, one line each (a regression check with what changed)."""
    lines = []
    for check in report.checks:
        lines.append(f"  {TAGS[check.status]} {check.name}: {check.message}")
        if check.name == REGRESSION:
            lines += detail_lines(check)
    return lines


def _by_kind(report) -> list[str]:
    """One line per check kind and status that is not a pass (the worst of each), the
    checks that could not run as a count; past ``MAX_FAILURE_LINES`` kinds
    (``MAX_HINTED_LINES`` under a hint) those whose worst call is worst (largest error over
    tolerance; the first on a tie), in the plan's order, and one line naming the rest."""
    shared = common_reason(report)
    planned = collections.Counter(_kind(check.name) for check in report.checks)
    groups, not_run = {}, 0
    for check in report.checks:
        if check.name == REGRESSION:
            continue
        if _is_not_run(check):
            not_run += 1
        elif check.status not in ("passed", "skipped") and not (shared and reason_of(check).startswith(shared)):
            groups.setdefault((check.status, _kind(check.name)), []).append(check)
    declared = report.declaration.spec.describe() if report.declaration.formula else ""
    kinds = list(groups.values())
    limit = MAX_HINTED_LINES if report.hints else MAX_FAILURE_LINES
    shown = kinds
    if len(kinds) > limit + 1:  # a line saying what is left out replaces two lines or more
        worst = sorted(range(len(kinds)), key=lambda index: -max(map(_ratio, kinds[index])))[:limit]
        shown = [checks for index, checks in enumerate(kinds) if index in worst]
    lines = [_kind_line(checks, planned[_kind(checks[0].name)], declared) for checks in shown]
    rest = [checks for checks in kinds if not any(checks is kept for kept in shown)]
    if rest:
        more = ", ".join(_kind(checks[0].name) for checks in rest)
        hidden = sum(map(len, rest))
        lines.append(f"  ... and {hidden} check{'s' * (hidden != 1)} of {len(rest)} more kind{'s' * (len(rest) != 1)}"
                     f" ({more}; {EVERY_CHECK[report.declaration.spelling]})")
    regression = [check for check in report.checks if check.name == REGRESSION]
    for check in regression:  # always said, with what changed
        lines += [f"  {TAGS[check.status]} {check.name}: {check.message}", *detail_lines(check)]
    if not_run:
        lines.append(f"  ({not_run} more checks could not run because of the failures above)")
    return lines


def summary_lines(report, verbose: bool = False, extra_lines=()) -> list[str]:
    """One target: the header ending with the verdict, the hints (the nearest member where no
    hint names the slip), a cause every call shares, then one line per failing check kind with
    its worst call (every check with ``verbose``), the warnings and ``extra_lines``."""
    lines = [target_header(report)]
    lines += [f"  hint: {hint.text(report.declaration.spelling_for(dict(hint.declare)))}" for hint in report.hints]
    if report.nearest is not None and not report.hints:
        lines.append(f"  nearest: {report.nearest['message']}")
    lines += [f"  {line}" for line in report.advice]
    lines += _every_check(report) if verbose else _by_kind(report)
    lines += [_warning_line(warning, verbose) for warning in report.warnings]
    lines += [f"  {line}" for line in extra_lines]
    return lines
