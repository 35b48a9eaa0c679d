"""The ``--json`` report: one documented shape, ``schema_version`` 1.

The JSON Schema ships as ``posenc_spec/data/report-v1.schema.json``. In short::

    {"schema_version": 1, "tool": {"name", "version"}, "environment": {"posenc_spec",
     "python", "numpy", "torch", "platform"}, "config": path or null, "status": "conforms" |
     "does-not-conform" | "error", "shard": {"index", "count"}, "total_targets": N,
     "targets": [{"position", "target", "resolved", "source", "location": {"file", "line"}
                  or null, "declaration": {...},
                  "status", "seconds", "warnings": [...], "checks": [{"id", "status",
                  "reason", "worst": {"index", "size", "actual", "expected", "error",
                  "tolerance", "ratio"} or null}], ...}]}

``position`` is the target's place in the whole run, so that shard reports merge back in
order (:func:`merge`). ``seconds`` is the only field that differs between two runs of the
same targets on the same machine. Non-finite numbers (an infinite error from a NaN) are
written as null: strict JSON has no NaN or Infinity.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

from posenc_spec import __version__
from posenc_spec.environment import environment

from ..errors import UsageError
from ..report import STATUS_CONFORMS, STATUS_ERROR, STATUS_FAILS
from ..user_files import read_text

SCHEMA_VERSION = 1
MAX_REPORT_BYTES = 1 << 30  # a report of tens of thousands of targets stays far below
SCHEMA_FILE = "report-v1.schema.json"
EXIT_STATUS = {STATUS_CONFORMS: 0, STATUS_FAILS: 1, STATUS_ERROR: 2}


def schema() -> dict:
    return json.loads(resources.files("posenc_spec").joinpath("data", SCHEMA_FILE).read_text(encoding="utf-8"))


def strict(value):
    """``value`` with every non-finite float replaced by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(item) for item in value]
    return value


def to_text(data) -> str:
    return json.dumps(strict(data), indent=2, allow_nan=False) + "\n"


def overall_status(statuses) -> str:
    statuses = list(statuses)
    if STATUS_ERROR in statuses:
        return STATUS_ERROR
    return STATUS_FAILS if STATUS_FAILS in statuses else STATUS_CONFORMS


def check_entry(check) -> dict:
    entry = {"id": check.name, "status": check.status, "reason": check.message,
             "worst": check.worst.as_dict() if check.worst is not None else None}
    if check.details:
        entry["details"] = list(check.details)
    return entry


def target_entry(report, position: int, extra: dict | None = None) -> dict:
    declaration = report.declaration
    location = {"file": report.where[0], "line": report.where[1]} if report.where else None
    entry = {"position": position, "target": declaration.name, "resolved": declaration.target,
             "source": declaration.source or None, "location": location,
             "declaration": declaration.as_dict(), "status": report.status,
             "seconds": round(report.seconds, 3), "warnings": list(report.warnings),
             "advice": list(report.advice), "nearest": report.nearest,
             "checks": [check_entry(check) for check in report.checks]}
    entry.update(extra or {})
    return entry


def run_report(entries: list[dict], total: int, shard=(1, 1), config: str | None = None) -> dict:
    """The whole report around the target entries of one run (or one shard of it)."""
    return {"schema_version": SCHEMA_VERSION, "tool": {"name": "posenc-spec", "version": __version__},
            "environment": environment(), "config": config,
            "status": overall_status(entry["status"] for entry in entries),
            "shard": {"index": shard[0], "count": shard[1]}, "total_targets": total, "targets": entries}


def read_report(path: str) -> dict:
    """A report written by ``--json``: UsageError for anything that is not one."""
    text = read_text(Path(path), MAX_REPORT_BYTES, "report")
    try:
        data = json.loads(text)
    except ValueError as error:
        raise UsageError(f"{path}: not a JSON report ({error})") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise UsageError(f"{path}: not a posenc-spec report of schema_version {SCHEMA_VERSION}")
    if not isinstance(data.get("targets"), list) or not isinstance(data.get("total_targets"), int):
        raise UsageError(f"{path}: a report without targets or total_targets")
    return data


def merge(reports: list[dict], names: list[str]) -> dict:
    """Shard reports joined into the report of the whole run, targets in run order.

    Every shard of the run must be there exactly once: UsageError names what is missing,
    repeated or inconsistent."""
    totals = {report["total_targets"] for report in reports}
    counts = {report.get("shard", {}).get("count") for report in reports}
    if len(totals) != 1 or len(counts) != 1:
        raise UsageError("the reports come from different runs (their shard counts or target totals differ)")
    total, count = totals.pop(), counts.pop()
    seen = {}
    for report, name in zip(reports, names, strict=True):
        index = report.get("shard", {}).get("index")
        if index in seen:
            raise UsageError(f"{name} and {seen[index]} are both shard {index}/{count}")
        seen[index] = name
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise UsageError(f"shard(s) {', '.join(f'{index}/{count}' for index in missing)} missing")
    entries = sorted((entry for report in reports for entry in report["targets"]), key=lambda entry: entry["position"])
    if [entry["position"] for entry in entries] != list(range(total)):
        raise UsageError(f"the reports do not hold targets 0..{total - 1} exactly once")
    first = reports[0]
    return run_report(entries, total, (1, 1), first.get("config")) | {"environment": first["environment"]}
