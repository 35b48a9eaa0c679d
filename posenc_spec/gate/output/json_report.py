"""The ``--json`` report: one documented shape, ``schema_version`` 1.

The JSON Schema ships as ``posenc_spec/data/report-v1.schema.json``. In short::

    {"schema_version": 1, "tool": {"name", "version"}, "environment": {"posenc_spec",
     "python", "numpy", "torch", "platform"}, "config": path or null, "status": "conforms" |
     "does-not-conform" | "error", "shard": {"index", "count"}, "total_targets": N,
     "run_digest": hex, "targets": [{"position", "target", "resolved", "source", "location": {"file", "line"}
                  or null, "declaration": {...},
                  "status", "seconds", "warnings": [...], "checks": [{"id", "status",
                  "reason", "worst": {"index", "size", "actual", "expected", "error",
                  "tolerance", "ratio"} or null}], "hints": [{"slips", "text", "flags",
                  "keys", "keywords", "declare"}] (only when the tables show a slip), ...}]}

``position`` is the target's place in the whole run, so that shard reports merge back in
order (:func:`merge`); ``run_digest`` (SHA-256 of every target of the whole run with its
declaration, in order) is the same in every shard of one run. ``seconds`` is the only field
that differs between two runs of the same targets on the same machine. Non-finite numbers
(an infinite error from a NaN) are written as null: strict JSON has no NaN or Infinity. The
text is ASCII (every other character and every control character a ``\\u`` escape), and a
``[`` after ``##`` or ``##vso`` is written ``\\u005b``, so the report printed to a CI log
(``--json -``) holds no workflow command (:func:`posenc_spec.gate.output.annotations.inert`);
it reads back the same.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from importlib import resources

from posenc_spec import __version__
from posenc_spec.environment import environment
from posenc_spec.results import STATUSES

from ..errors import UsageError
from ..report import STATUS_CONFORMS, STATUS_ERROR, STATUS_FAILS
from ..user_files import read_json

SCHEMA_VERSION = 1
MAX_REPORT_BYTES = 1 << 30  # a report of tens of thousands of targets stays far below
SCHEMA_FILE = "report-v1.schema.json"
EXIT_STATUS = {STATUS_CONFORMS: 0, STATUS_FAILS: 1, STATUS_ERROR: 2}
_OLD_COMMAND = re.compile(r"(?<=##)\[|(?<=##vso)\[")


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
    """``data`` as the report's JSON text (see the module docstring)."""
    return _OLD_COMMAND.sub(r"\\u005b", json.dumps(strict(data), indent=2, allow_nan=False)) + "\n"


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
    if report.hints:
        entry["hints"] = [hint.as_dict() for hint in report.hints]
    entry.update(extra or {})
    return entry


def run_digest(targets) -> str:
    """SHA-256 (hex) of a run's ``(target, declaration dict)`` pairs, in run order: the same
    whether taken from the declarations or read back from the report."""
    canonical = [{"target": target, "declaration": strict(declaration)} for target, declaration in targets]
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def _entry_pairs(entries):
    return [(entry["target"], entry["declaration"]) for entry in entries]


def run_report(entries: list[dict], total: int, shard=(1, 1), config: str | None = None,
               digest: str | None = None) -> dict:
    """The whole report around the target entries of one run (or one shard of it);
    ``digest`` is the whole run's :func:`run_digest` (None: that of ``entries``, the whole run)."""
    return {"schema_version": SCHEMA_VERSION, "tool": {"name": "posenc-spec", "version": __version__},
            "environment": environment(), "config": config,
            "status": overall_status(entry["status"] for entry in entries),
            "shard": {"index": shard[0], "count": shard[1]}, "total_targets": total,
            "run_digest": digest if digest is not None else run_digest(_entry_pairs(entries)), "targets": entries}


def read_report(path: str) -> dict:
    """A report written by ``--json``, read as every file a user names is
    (:func:`~posenc_spec.gate.user_files.read_json`: a regular file, at most
    :data:`MAX_REPORT_BYTES`, nested at most 64 levels): UsageError for anything that is not
    one, or whose statuses disagree with its checks."""
    data = read_json(path, MAX_REPORT_BYTES, "report")
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise UsageError(f"{path}: not a posenc-spec report of schema_version {SCHEMA_VERSION}")
    if not isinstance(data.get("targets"), list) or type(data.get("total_targets")) is not int:
        raise UsageError(f"{path}: a report without targets or total_targets")
    shard = data.get("shard")
    if not isinstance(shard, dict) or not all(type(shard.get(key)) is int for key in ("index", "count")):
        raise UsageError(f"{path}: a report without its shard's index and count")
    for entry in data["targets"]:
        problem = _entry_problem(entry)
        if problem:
            raise UsageError(f"{path}: {problem}")
    status = overall_status(entry["status"] for entry in data["targets"])
    if data.get("status") != status:
        raise UsageError(f"{path}: says the run's status is {data.get('status')!r}, its targets say {status!r}")
    return data


def target_status(checks: list[dict]) -> str:
    """A target's status as its checks give it: error when its import failed (or is an
    expected failure), does-not-conform when any other check failed, else conforms."""
    if any(check["id"] == "import" and check["status"] in ("failed", "xfailed") for check in checks):
        return STATUS_ERROR
    return STATUS_FAILS if any(check["status"] == "failed" for check in checks) else STATUS_CONFORMS


def _is_check(check) -> bool:
    return (isinstance(check, dict) and isinstance(check.get("id"), str) and check.get("status") in STATUSES
            and isinstance(check.get("reason"), str))


def _entry_problem(entry) -> str | None:
    """Why a report's target entry cannot be merged (None when it can): a part the report
    writers read is missing or mistyped, or its status is not what its checks give."""
    if (not isinstance(entry, dict) or type(entry.get("position")) is not int
            or not isinstance(entry.get("target"), str)):
        return "a target entry without its position or target"
    name = entry["target"]
    checks, warnings = entry.get("checks"), entry.get("warnings")
    if not isinstance(checks, list) or not all(_is_check(check) for check in checks):
        return f"target {name}: a check without an id, a known status or a reason"
    if not isinstance(warnings, list) or not all(isinstance(warning, str) for warning in warnings):
        return f"target {name}: warnings that are not a list of texts"
    if not isinstance(entry.get("declaration"), dict):
        return f"target {name}: no declaration"
    status = target_status(checks)
    if entry.get("status") != status:
        return f"target {name} says it {entry.get('status')!r}, its checks say {status!r}"
    return None


def _shards(reports: list[dict], names: list[str]) -> tuple[int, int]:
    """``(total, count)`` of the run the shard reports come from; UsageError unless each shard
    is there once and holds only its own positions."""
    totals = {report["total_targets"] for report in reports}
    counts = {report["shard"]["count"] for report in reports}
    if len(totals) != 1 or len(counts) != 1:
        raise UsageError("the reports come from different runs (their shard counts or target totals differ)")
    total, count = totals.pop(), counts.pop()
    seen = {}
    for report, name in zip(reports, names, strict=True):
        index = report["shard"]["index"]
        if index in seen:
            raise UsageError(f"{name} and {seen[index]} are both shard {index}/{count}")
        seen[index] = name
        stray = [entry for entry in report["targets"] if entry["position"] % count != index - 1]
        if stray:
            raise UsageError(f"{name}: shard {index}/{count} holds target {stray[0]['target']} at position "
                             f"{stray[0]['position']}, which is another shard's")
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise UsageError(f"shard(s) {', '.join(f'{index}/{count}' for index in missing)} missing")
    return total, count


def merge(reports: list[dict], names: list[str]) -> dict:
    """Shard reports (each from :func:`read_report`) joined into the report of the whole run,
    targets in run order, every status recomputed from the checks.

    Every shard of the run must be there exactly once, from the same run (the same
    ``run_digest``, which the joined targets' declarations must give): UsageError names what
    is missing, repeated or inconsistent."""
    total, _ = _shards(reports, names)
    digests = {report.get("run_digest") for report in reports}
    if len(digests) != 1:
        first = reports[0].get("run_digest")
        other = next(name for report, name in zip(reports, names, strict=True) if report.get("run_digest") != first)
        raise UsageError(f"{names[0]} and {other} come from different runs (their run_digest differs)")
    entries = sorted((entry for report in reports for entry in report["targets"]), key=lambda entry: entry["position"])
    if [entry["position"] for entry in entries] != list(range(total)):
        raise UsageError(f"the reports do not hold targets 0..{total - 1} exactly once")
    digest = digests.pop()
    if digest is not None and run_digest(_entry_pairs(entries)) != digest:
        raise UsageError(f"the targets and declarations of {', '.join(names)} do not give their run_digest: they "
                         "were changed after the run, or come from different runs")
    first = reports[0]
    merged = run_report(entries, total, (1, 1), first.get("config"), digest) | {"environment": first["environment"]}
    if digest is None:  # reports of a version before run_digest
        del merged["run_digest"]
    return merged
