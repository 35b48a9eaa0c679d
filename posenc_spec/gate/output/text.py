"""What ``posenc-spec check`` prints for a person: a header, then per target the failures,
what could not run, the warnings and the verdict."""

from __future__ import annotations

from posenc_spec import __version__

from ..advice import common_reason, reason_of
from ..against import regression_rule

MAX_FAILURE_LINES = 12
REGRESSION = "regression"
TAGS = {"passed": "ok   ", "failed": "FAIL ", "skipped": "skip ", "xfailed": "xfail", "xpassed": "XPASS",
        "noted": "note "}


def run_header(count: int, config: str | None, jobs: int, shard=(1, 1)) -> str:
    where = f"config {config}" if config else "targets from the command line"
    parts = [f"posenc-spec {__version__}", where, f"{count} target{'s' * (count != 1)}", f"-j {jobs}"]
    if shard != (1, 1):
        parts.append(f"shard {shard[0]}/{shard[1]}")
    return " | ".join(parts)


def target_header(report) -> str:
    declaration = report.declaration
    parts = [f"{declaration.api} API"]
    if declaration.formula:
        parts += declaration.spec.header_parts()
    if declaration.against is not None:
        rule = regression_rule(declaration, declaration.against)
        parts.append(f"against {declaration.against_path}, {rule.describe()}")
    return f"{declaration.name}  [{', '.join(parts)}]"


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


def summary_lines(report, verbose: bool = False, extra_lines=()) -> list[str]:
    """One target: the header, the first ``MAX_FAILURE_LINES`` failures (every check with
    ``verbose``), the rest as counts, the warnings, ``extra_lines`` and the verdict."""
    lines = [target_header(report)] + [f"  {line}" for line in report.advice]
    shared = common_reason(report)
    not_run = unlisted = 0
    for check in report.checks:
        if check.name == REGRESSION:  # always said, with what changed
            lines.append(f"  {TAGS[check.status]} {check.name}: {check.message}")
            lines += detail_lines(check)
            continue
        if check.status == "passed" and not verbose:
            continue
        if not verbose and _is_not_run(check):
            not_run += 1
            continue
        if not verbose and check.status == "skipped":
            continue
        if not verbose and shared and reason_of(check).startswith(shared):  # said once, above
            continue
        if not verbose and len(lines) > MAX_FAILURE_LINES:
            unlisted += 1
            continue
        lines.append(f"  {TAGS[check.status]} {check.name}: {check.message}")
    if unlisted:
        lines.append(f"  ... {unlisted} more failed checks (-v lists every check, --json FILE records them)")
    if not_run:
        lines.append(f"  ({not_run} more checks could not run because of the failures above)")
    lines += [f"  warning: {warning}" for warning in report.warnings]
    if report.nearest is not None:
        lines.append(f"  nearest: {report.nearest['message']}")
    lines += [f"  hint: {hint.text()}" for hint in report.hints]
    lines += [f"  {line}" for line in extra_lines]
    counts = report.counts()
    tally = f"{len(report.checks)} checks, {counts['failed']} failed"
    tally += "".join(f", {counts[status]} {status}" for status in ("noted", "skipped", "xfailed", "xpassed")
                     if counts[status])
    verdict = {"conforms": "conforms", "does-not-conform": "does not conform",
               "error": "cannot be imported"}[report.status]
    lines.append(f"  {tally}: {verdict}")
    return lines
