"""A library is imported once per run: the installed modules a target's process imported are
imported into the slot templates before the next targets are forked.

Each sealed child names the modules that appeared in its ``sys.modules`` during its import
and each call (:mod:`.child.learned`). The child runs the target's code, so the gate trusts
none of it: a name is kept only if it is a dotted name the import system, as the slot
template would run it, finds (without running anything) in a file of an installed library
(a ``site-packages`` or ``dist-packages`` folder) that, with each package above it, existed
unchanged since before the run started: nothing a target wrote, nothing of the user's own
tree. The module of every target of the run is kept out, and so are Keras and the libraries built on
it (their import fixes the backend, which each target declares), and any name whose import
would import one of these or leave a thread running (the template says so and is replaced): a
target's own module runs in the target's process, where its changes of the global state are
its own, and every child is forked from the template.

``--preload`` names modules for the first target; this learns the rest.
"""

from __future__ import annotations

import os
import pkgutil
import re
import sys
import threading
import time
from importlib.machinery import ModuleSpec

from .child.site_folders import in_site_folder
from .loader import TargetError, parse_target
from .sandbox import FILE_CLOCK

MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# Libraries whose import fixes the framework a target computes with (Keras reads its backend
# once, when first imported): each target's process imports them after its declared framework
# is set up (``child.frameworks.prepare``), never a template on another target's behalf.
FRAMEWORK_BOUND = ("keras", "keras_hub", "keras_nlp", "tf_keras")
MAX_LEARNED = 20_000  # names per run: several large libraries
# Names per request to a template: with the run's keep-out list, well within the protocol's
# 64 KiB header (a run that learned several libraries at once is sent them in parts).
REQUEST_NAME_BYTES = 32 * 1024


class LearnedModules:
    """The checked module names a run has learned, in the order learned; shared by its lanes."""

    def __init__(self, declarations):
        keep_out = set()
        for declaration in declarations:
            try:
                name = parse_target(declaration.target)
            except TargetError:
                continue
            if not name.is_path:
                keep_out.add(name.module)
        self.keep_out = sorted(keep_out | set(FRAMEWORK_BOUND))
        # On the clock the kernel stamps files with: it lags time.time_ns() by up to a tick,
        # so a file written just after that reading could carry an earlier time. A file of
        # the same tick as the start is taken for written after it (not learned).
        self.started_ns = time.clock_gettime_ns(FILE_CLOCK)
        self._checked: dict[str | None, bool] = {}  # a file -> installed and unchanged
        self.names: list[str] = []
        self._seen: set[str] = set()
        self._blocked: set = set()
        # Each child's import path begins with its target's search path: a name is learned
        # only if every child of the run finds the same files for it.
        self.paths = {tuple(declaration.search_path) for declaration in declarations} or {()}
        self._lock = threading.Lock()

    def add(self, names) -> None:
        """Keep each of ``names`` (a child's reply: anything) that passes the checks of the
        module docstring."""
        if not isinstance(names, list):
            return
        with self._lock:
            for name in names[:MAX_LEARNED]:
                if len(self.names) >= MAX_LEARNED:
                    return
                if type(name) is not str or name in self._seen or len(name) > 200:
                    continue
                self._seen.add(name)
                if (MODULE_NAME.fullmatch(name) and name not in self.keep_out
                        and name.partition(".")[0] not in FRAMEWORK_BOUND and self._installed_before(name)):
                    self.names.append(name)

    def block(self, name) -> None:
        """Learn ``name`` no more (its import imported a target's module or started a thread)."""
        with self._lock:
            self._blocked.add(name)

    def since(self, count: int) -> tuple[list[str], int]:
        """The names learned after the first ``count`` (none blocked), and how many are learned."""
        with self._lock:
            return [name for name in self.names[count:] if name not in self._blocked], len(self.names)

    def _installed_before(self, name: str) -> bool:
        """Whether ``name`` and each package above it are found, as every child of the run
        would find them on its import path, in the same installed library's files, older
        than the run."""
        found = {self._files(name, locations) for locations in self.paths}
        return len(found) == 1 and None not in found

    def _files(self, name: str, first) -> tuple | None:
        """The files of ``name`` and of each package above it on the import path
        ``first`` + the slot template's (``sandbox.Limits.init``), when each is an installed
        library's, unchanged since before the run; else None."""
        parts = name.split(".")
        locations, files = [*first, os.getcwd(), *sys.path], []
        for depth in range(1, len(parts) + 1):
            try:
                spec = _find_spec(".".join(parts[:depth]), locations)
            except (ImportError, ValueError, OSError):
                return None
            if spec is None or not self._unchanged(spec):
                return None
            files.append(spec.origin)
            locations = spec.submodule_search_locations
            if locations is None and depth < len(parts):
                return None
        return tuple(files)

    def _unchanged(self, spec) -> bool:
        if spec.origin in self._checked:
            return self._checked[spec.origin]
        self._checked[spec.origin] = unchanged = self._unchanged_file(spec)
        return unchanged

    def _unchanged_file(self, spec) -> bool:
        if not spec.has_location or not spec.origin:  # a namespace package: no code of its own
            return spec.submodule_search_locations is not None
        if not in_site_folder(spec.origin):
            return False
        try:
            info = os.stat(spec.origin)
        except OSError:
            return False
        return info.st_ctime_ns < self.started_ns and info.st_mtime_ns < self.started_ns


def _find_spec(name: str, locations) -> ModuleSpec | None:
    """The spec the path finder would find for ``name`` in ``locations``, its folders a plain
    list: PathFinder's own namespace path looks the parent package up in ``sys.modules``, and
    the gate never imports what it learns (a library's ``einx._src``)."""
    portions = []
    for folder in locations:
        finder = pkgutil.get_importer(folder) if isinstance(folder, str) else None
        spec = finder.find_spec(name) if finder is not None and hasattr(finder, "find_spec") else None
        if spec is None:
            continue
        if spec.loader is not None:
            return spec
        portions.extend(spec.submodule_search_locations or ())
    if not portions:
        return None
    spec = ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = portions
    return spec
