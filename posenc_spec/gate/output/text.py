"""What ``posenc-spec check`` prints for a person: a header, then per target the failures,
what could not run, the warnings and the verdict."""

from __future__ import annotations

from posenc_spec import __version__

MAX_FAILURE_LINES = 12
TAGS = {"passed": "ok   ", "failed": "FAIL ", "skipped": "skip ", "xfailed": "xfail", "xpassed": "XPASS"}


def run_header(count: int, config: str | None, jobs: int, shard=(1, 1)) -> str:
    where = f"config {config}" if config else "targets from the command line"
    parts = [f"posenc-spec {__version__}", where, f"{count} target{'s' * (count != 1)}", f"-j {jobs}"]
    if shard != (1, 1):
        parts.append(f"shard {shard[0]}/{shard[1]}")
    return " | ".join(parts)


def target_header(report) -> str:
    declaration = report.declaration
    return f"{declaration.name}  [{declaration.api} API, {declaration.convention_name()}, odd={declaration.odd}]"


def _is_not_run(check) -> bool:
    return check.status == "skipped" and check.message.startswith("not run: ")


def summary_lines(report, verbose: bool = False, extra_lines=()) -> list[str]:
    """One target: the header, the first ``MAX_FAILURE_LINES`` failures (every check with
    ``verbose``), the rest as counts, the warnings, ``extra_lines`` and the verdict."""
    lines = [target_header(report)]
    not_run = unlisted = 0
    for check in report.checks:
        if check.status == "passed" and not verbose:
            continue
        if not verbose and _is_not_run(check):
            not_run += 1
            continue
        if not verbose and check.status == "skipped":
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
    lines += [f"  {line}" for line in extra_lines]
    counts = report.counts()
    tally = f"{len(report.checks)} checks, {counts['failed']} failed"
    tally += "".join(f", {counts[status]} {status}" for status in ("skipped", "xfailed", "xpassed") if counts[status])
    verdict = {"conforms": "conforms", "does-not-conform": "does not conform",
               "error": "cannot be imported"}[report.status]
    lines.append(f"  {tally}: {verdict}")
    return lines
