"""The targets' source files, read at the start of a run and again at its end.

A target's code runs as the gate's user (an ordinary CI user owns the checkout): where the
confinement does not stop it (:mod:`.child.confinement`), it could rewrite the source of a
target that runs after it, which would then be judged on code nobody wrote. So before any
target runs, the gate reads the files each target's import runs first: a file target's
file; a module target's module and the ``__init__.py`` of each package above it, found as
the import system would find them on the child's path, without running any of them. A
target any of whose files differ at the end of the run fails its ``import`` check, naming
the files.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

from posenc_spec.results import CheckResult

from .loader import TargetError, parse_target

MAX_SOURCE_BYTES = 64 * 2**20  # larger files are named by size and time instead of read


def source_files(target: str, search_path=()) -> list[Path]:
    """The files importing ``target`` runs first (see the module docstring); none that
    cannot be found."""
    try:
        name = parse_target(target)
    except TargetError:
        return []
    if name.is_path:
        return [Path(name.module).resolve()]
    files, locations = [], [*search_path, os.getcwd(), *sys.path]  # the child's path (sandbox.Limits.init)
    parts = name.module.split(".")
    for depth in range(1, len(parts) + 1):
        try:
            spec = PathFinder.find_spec(".".join(parts[:depth]), locations)
        except (ImportError, ValueError, OSError):
            break
        if spec is None:
            break
        if spec.has_location and spec.origin:
            files.append(Path(spec.origin))
        locations = spec.submodule_search_locations
        if locations is None:
            break
    return files


def digest(path: Path) -> str:
    """What a file holds, as a SHA-256 digest ('missing' when it cannot be read)."""
    try:
        info = path.stat()
        if info.st_size > MAX_SOURCE_BYTES:
            return f"{info.st_size} bytes, modified {info.st_mtime_ns}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


class SourceWatch:
    """The digests of every target's source files, read when made."""

    def __init__(self, declarations):
        self.files = [source_files(declaration.target, declaration.search_path) for declaration in declarations]
        self.digests = [{path: digest(path) for path in files} for files in self.files]

    def changed(self, index: int) -> list[str]:
        """The source files of the ``index``-th target that differ from the start, in words."""
        lines = []
        for path, before in self.digests[index].items():
            now = digest(path)
            if now != before:
                lines.append(f"{path} ({'removed' if now == 'missing' else 'rewritten'})")
        return lines

    def judge(self, reports: list) -> list:
        """``reports`` with the ``import`` check failed of each target whose source changed."""
        for index, report in enumerate(reports):
            changed = self.changed(index)
            if changed and report.importable:
                reason = (f"its source changed during the run, after the gate read it at the start: "
                          f"{', '.join(changed[:3])}{' and more' if len(changed) > 3 else ''}")
                report.checks = [_failed(check, reason) if check.name == "import" else check
                                 for check in report.checks]
        return reports


def _failed(check: CheckResult, reason: str) -> CheckResult:
    return dataclasses.replace(check, status="failed", message=reason)
