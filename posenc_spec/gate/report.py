"""The gate's output: the ``--json`` file and the lines printed for a person.

JSON shapes:

- ``check TARGET``: one entry, ``{"target", "convention": {"layout", "first", "freq_shift",
  "base", "offset", "scale", "odd"}, "conforms", "checks": [{"name", "passed", "message",
  "max_error", "tolerance"}]}``;
- ``check --config FILE`` or ``[tool.posenc-spec]``: ``{"conforms", "targets": [entry, ...]}``
  with one entry per target, in the file's order;
- ``identify``: ``{"target", "name", "convention": {...} or null, "max_error_ratio",
  "nearest": {"name", "convention", "max_error_ratio"}, "message"}``.

With ``check --plots DIR`` every entry also holds ``"figures"``: ``{"heatmap",
"row_profiles", "similarity", "difference"}``, the paths of the PNGs written under
``DIR/<target>/`` for a target that does not conform (:func:`write_figures`), or ``{}``
(a conforming target, or one that returned no table to draw).

Non-finite numbers (an infinite error from a NaN) are written as null: strict JSON has
no NaN or Infinity. The file is written whole or not at all (a temporary file renamed
into place), and ``-`` writes to standard output.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
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


# -- pictures of the targets that do not conform ---------------------------------------------


@dataclass(frozen=True)
class TargetFigures:
    """The pictures written for one target: ``paths`` by name (``heatmap``,
    ``row_profiles``, ``similarity``, ``difference``), the size of the table drawn
    (``label``), or, when none were written, ``reason``."""

    paths: dict[str, Path] = field(default_factory=dict)
    label: str | None = None
    reason: str | None = None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_FOLDER_NAME = 100


def figure_folder(target: str) -> str:
    """A folder name for ``target``'s pictures: ``pkg.mod:fn`` becomes ``pkg.mod-fn``, a
    file target's path is taken relative to the working directory, and every character
    outside ``[A-Za-z0-9._-]`` becomes ``_``."""
    module, _, attr = target.rpartition(":")
    if module.endswith(".py") or "/" in module or os.sep in module:
        try:
            module = os.path.relpath(module)
        except ValueError:  # another drive on Windows
            pass
    name = _UNSAFE.sub("_", f"{module}-{attr}").strip("._-") or "target"
    if len(name) > MAX_FOLDER_NAME:  # keep the end (the module and function), and tell long paths apart
        digest = hashlib.sha256(target.encode()).hexdigest()[:8]
        name = f"{name[-(MAX_FOLDER_NAME - 9):].lstrip('._-')}-{digest}"
    return name


def figure_folders(reports: list[GateReport]) -> list[str]:
    """:func:`figure_folder` of each report's target, numbered ``-2``, ``-3``, ... when a
    target appears more than once (a config may check it under several conventions)."""
    names, seen = [], {}
    for report in reports:
        name = figure_folder(report.target)
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return names


def write_figures(reports: list[GateReport], out_dir) -> list[TargetFigures | None]:
    """For each report that does not conform and kept a table (``check_many(...,
    keep_table=True)``), write the four PNGs of
    :func:`posenc_spec.figures.diagnostics.write_table_figures` into
    ``out_dir/<figure_folder(target)>/``. None for a conforming report; a
    :class:`TargetFigures` with a ``reason`` when nothing could be drawn or written."""
    out_dir = Path(out_dir)
    results: list[TargetFigures | None] = []
    for report, folder in zip(reports, figure_folders(reports), strict=True):
        if report.conforms:
            results.append(None)
        elif report.kept_table is None:
            results.append(TargetFigures(reason="no call returned a table to draw"))
        else:
            results.append(_draw(report, out_dir / folder))
    return results


def _draw(report: GateReport, folder: Path) -> TargetFigures:
    # Imported here: matplotlib costs a noticeable part of a run, and only --plots needs it.
    from posenc_spec.checks import expectation
    from posenc_spec.figures.diagnostics import write_table_figures

    kept = report.kept_table
    title = f"{report.target} at {kept.label} under {report.convention.name()}, {kept.dtype}"
    try:
        exp = expectation(kept.positions, kept.table.shape[1], report.convention, kept.dtype)
        paths = write_table_figures(kept.table, exp, folder, title=title)
    except OSError as error:
        return TargetFigures(label=kept.label, reason=f"cannot write {folder}: {error.strerror or error}")
    except Exception as error:  # a picture must not cost the verdict or the JSON
        return TargetFigures(label=kept.label, reason=f"drawing failed: {type(error).__name__}: {error}")
    return TargetFigures(paths, kept.label)


def reports_json(reports: list[GateReport], single: bool, figures: list[TargetFigures | None] | None = None) -> dict:
    """One entry when ``single`` (a TARGET on the command line), else the multi-target
    shape. With ``figures`` (one per report, from :func:`write_figures`) each entry gains
    ``"figures"``: the PNG paths by name, ``{}`` when none were written."""
    entries = [report.as_dict() for report in reports]
    if figures is not None:
        for entry, written in zip(entries, figures, strict=True):
            entry["figures"] = {name: str(path) for name, path in written.paths.items()} if written else {}
    if single:
        return entries[0]
    return {"conforms": all(report.conforms for report in reports), "targets": entries}


def _is_not_run(check) -> bool:
    return check.message.startswith("not run: ")


MAX_FAILURE_LINES = 12


def summary_lines(report: GateReport, verbose: bool = False, figures: TargetFigures | None = None) -> list[str]:
    """What ``posenc-spec check`` prints for one target: a header, the first
    ``MAX_FAILURE_LINES`` failures (every check with ``verbose``), the rest as counts, the
    verdict, and the pictures of ``figures`` (one line per file) or why there are none."""
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
    if figures is not None:
        lines += _figure_lines(figures)
    return lines


def _figure_lines(figures: TargetFigures) -> list[str]:
    if not figures.paths:
        return [f"  figures: none ({figures.reason})"]
    return [f"  figures of the {figures.label} table:",
            *(f"    {name}: {path}" for name, path in figures.paths.items())]
