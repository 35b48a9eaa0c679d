"""Pictures of the targets a gate run found wrong (``posenc-spec check --plots DIR``).

For each report that does not conform and kept a table (the call its family draws), the
PNGs its family draws of it (:meth:`~posenc_spec.gate.family.Family.kept_figures`) go into
``DIR/<figure_folder(target)>/``, through the folder the command opened before any target
ran (:func:`posenc_spec.gate.output.destination.open_folder`: never through a symlink a
target left, each file written atomically). The figures read the gate's reports; the gate
never imports the figures.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from dataclasses import dataclass, field

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_FOLDER_NAME = 100


@dataclass(frozen=True)
class TargetFigures:
    """The pictures written for one target: ``paths`` by name, the slot of the table drawn,
    or, when none were written, ``reason`` (``unwritten`` when drawn but not written)."""

    paths: dict[str, str] = field(default_factory=dict)
    slot: str | None = None
    reason: str | None = None
    unwritten: bool = False

    def lines(self) -> list[str]:
        if not self.paths:
            return [f"figures: none ({self.reason})"]
        return [f"figures of the {self.slot} table:", *(f"  {name}: {path}" for name, path in self.paths.items())]

    def as_json(self) -> dict:
        return {"figures": {name: str(path) for name, path in self.paths.items()}}


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


def figure_folders(reports) -> list[str]:
    """:func:`figure_folder` of each report's target, numbered ``-2``, ``-3``, ... when a
    target appears more than once (a config may check it under several conventions)."""
    names, seen = [], {}
    for report in reports:
        name = figure_folder(report.target)
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return names


def write_figures(reports, out_dir) -> list[TargetFigures | None]:
    """One :class:`TargetFigures` per report that does not conform (None for one that does),
    written into ``out_dir``: a :class:`~posenc_spec.gate.output.destination.Folder`, or a
    path, opened here."""
    from posenc_spec.gate.output.destination import Folder, open_folder

    if not isinstance(out_dir, Folder):
        with contextlib.closing(open_folder("--plots", os.fspath(out_dir))) as folder:
            return write_figures(reports, folder)
    results: list[TargetFigures | None] = []
    for report, folder in zip(reports, figure_folders(reports), strict=True):
        if report.conforms:
            results.append(None)
        elif report.kept is None:
            results.append(TargetFigures(reason="no call returned a table to draw"))
        else:
            results.append(_draw(report, out_dir, folder))
    return results


def report_figures(report) -> dict:
    """The figures of the table a report kept (``report.kept``, not None), by name, as
    matplotlib figures: its family draws them."""
    return report.declaration.family.kept_figures(report)


def _draw(report, out_dir, folder: str) -> TargetFigures:
    from .style import png_bytes

    kept = report.kept
    try:
        pictures = {name: png_bytes(figure) for name, figure in report_figures(report).items()}
    except Exception as error:  # a picture must not cost the verdict or the JSON
        return TargetFigures(slot=kept.slot, reason=f"drawing failed: {type(error).__name__}: {error}")
    try:
        paths = {name: out_dir.write(folder, f"{name}.png", data) for name, data in pictures.items()}
    except OSError as error:
        return TargetFigures(slot=kept.slot, reason=error.strerror or str(error), unwritten=True)
    return TargetFigures(paths, kept.slot)
