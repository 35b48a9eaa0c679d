"""The gate's output: the ``--json`` file and the lines printed for a person.

JSON shapes:

- ``check TARGET``: one entry, ``{"target", "convention": {"layout", "first", "freq_shift",
  "base", "offset", "scale", "odd"}, "conforms", "checks": [{"name", "passed", "message",
  "max_error", "tolerance"}]}``;
- ``check --config FILE`` or ``[tool.posenc-spec]``: ``{"conforms", "targets": [entry, ...]}``
  with one entry per target, in the file's order;
- ``identify``: ``{"target", "name", "convention": {...} or null, "max_error_ratio",
  "nearest": {"name", "convention", "max_error_ratio"}, "message"}``.

Non-finite numbers (an infinite error from a NaN) are written as null: strict JSON has
no NaN or Infinity. The file is written whole or not at all (a temporary file renamed
into place), and ``-`` writes to standard output.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from .engine import GateReport


def _strict(value):
    """``value`` with every non-finite float replaced by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value


def to_json(data) -> str:
    return json.dumps(_strict(data), indent=2, allow_nan=False) + "\n"


def write_json(data, path) -> None:
    """Write ``data`` as strict JSON to ``path`` atomically, or to stdout for ``-``."""
    text = to_json(data)
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def reports_json(reports: list[GateReport], single: bool) -> dict:
    """One entry when ``single`` (a TARGET on the command line), else the multi-target shape."""
    if single:
        return reports[0].as_dict()
    return {"conforms": all(report.conforms for report in reports),
            "targets": [report.as_dict() for report in reports]}


def _is_not_run(check) -> bool:
    return check.message.startswith("not run: ")


MAX_FAILURE_LINES = 12


def summary_lines(report: GateReport, verbose: bool = False) -> list[str]:
    """What ``posenc-spec check`` prints for one target: a header, the first
    ``MAX_FAILURE_LINES`` failures (every check with ``verbose``), the rest as counts, and
    the verdict."""
    convention = report.convention
    odd = "skip" if report.skip_odd else convention.odd
    lines = [f"{report.target}  [{report.api} API, {convention.name()}, odd={odd}]"]
    not_run = unlisted = 0
    for check in report.checks:
        if check.passed:
            if verbose:
                lines.append(f"  ok    {check.name}: {check.message}")
            continue
        if not verbose and _is_not_run(check):
            not_run += 1
            continue
        if not verbose and len(lines) > MAX_FAILURE_LINES:
            unlisted += 1
            continue
        tag = "xfail" if check.name in report.excused else "FAIL "
        lines.append(f"  {tag} {check.name}: {check.message}")
    if unlisted:
        lines.append(f"  ... {unlisted} more failed checks (-v lists every check, --json FILE records them)")
    if not_run:
        lines.append(f"  ({not_run} more checks could not run because of the failures above)")
    for warning in report.warnings:
        lines.append(f"  warning: {warning}")
    failed = len(report.failures())
    excused = sum(1 for check in report.checks if check.name in report.excused)
    if not report.importable:
        verdict = "cannot be imported"
    elif report.conforms:
        verdict = "conforms"
    else:
        verdict = "does not conform"
    counts = f"{len(report.checks)} checks, {failed} failed" + (f", {excused} known deviations" if excused else "")
    lines.append(f"  {counts}: {verdict}")
    return lines
