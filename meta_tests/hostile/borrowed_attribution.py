"""Targets that run their own code inside what looks like an installed library's import, so
that what it changes would pass as that import's side effect (a warning) instead of the
target's change: a module the target writes into a site folder, a loader of its own class
whose spec names a NumPy file, a standard loader of its own file whose spec names a NumPy
file, a finder of its own (on ``sys.meta_path``, or in ``sys.path_importer_cache`` for the
site folder) that the import system asks while an untouched library imports another module.
Each leaves torch's default dtype float64 and returns the correct table; each must
fail ``global-state``. ``imports_an_untouched_library`` imports a module that was in the
site folder before the run: its import's change is a warning. See
``meta_tests/hostile/test_attribution.py``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

import numpy
from hostile_tables import vaswani

SETS_FLOAT64 = "import torch\ntorch.set_default_dtype(torch.float64)\n"
LIBRARY = "POSENC_HOSTILE_LIBRARY"  # a site-packages folder on the import path, which the target may write


def imports_a_module_it_wrote(num_positions, dim):
    """Writes a module into the site folder and imports it."""
    planted = Path(os.environ[LIBRARY]) / "posenc_hostile_planted.py"
    if not planted.exists():
        planted.write_text(SETS_FLOAT64)
        importlib.invalidate_caches()
    import posenc_hostile_planted  # noqa: F401
    return vaswani(num_positions, dim)


def imports_an_untouched_library(num_positions, dim):
    """Imports a module the site folder held before the run began (the test wrote it)."""
    import posenc_hostile_installed  # noqa: F401
    return vaswani(num_positions, dim)


class _NumpyLooking(importlib.machinery.SourceFileLoader):
    """A SourceFileLoader subclass whose ``exec_module`` is the target's own code."""

    def exec_module(self, module):
        import torch

        torch.set_default_dtype(torch.float64)


def _import_with(name: str, spec) -> None:
    """Import ``name`` through the import system, which finds ``spec`` for it."""

    class Finder:
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            return spec if fullname == name else None

    sys.meta_path.insert(0, Finder)
    try:
        importlib.import_module(name)
    finally:
        sys.meta_path.remove(Finder)


def runs_its_code_as_a_numpy_loader(num_positions, dim):
    """Its own ``exec_module``, in a SourceFileLoader subclass whose spec and path name NumPy's ``__init__.py``."""
    if "posenc_hostile_numpy_looking" not in sys.modules:
        loader = _NumpyLooking("posenc_hostile_numpy_looking", numpy.__file__)
        _import_with("posenc_hostile_numpy_looking",
                     importlib.util.spec_from_loader("posenc_hostile_numpy_looking", loader, origin=numpy.__file__))
    return vaswani(num_positions, dim)


def names_numpy_as_its_origin(num_positions, dim):
    """A standard SourceFileLoader of a file of its own, in a spec whose origin is NumPy's ``__init__.py``."""
    if "posenc_hostile_origin" not in sys.modules:
        own = Path(__file__).with_name("sets_float64_when_run.py")
        loader = importlib.machinery.SourceFileLoader("posenc_hostile_origin", str(own))
        _import_with("posenc_hostile_origin",
                     importlib.util.spec_from_loader("posenc_hostile_origin", loader, origin=numpy.__file__))
    return vaswani(num_positions, dim)


# Untouched library modules, the first of each pair importing the second; a pair for each
# attack, as a module one target's call imported is imported before the next target starts.
IMPORTER, LEAF = "posenc_hostile_importer", "posenc_hostile_leaf"
IMPORTER_TOO, LEAF_TOO = "posenc_hostile_importer_too", "posenc_hostile_leaf_too"


def _set_float64_when_asked_about_the_leaf(fullname: str) -> None:
    if fullname in (LEAF, LEAF_TOO):
        import torch

        torch.set_default_dtype(torch.float64)


class _AskedFinder:
    """A ``sys.meta_path`` finder of the target's, asked about every module imported."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        _set_float64_when_asked_about_the_leaf(fullname)
        return None


def hooks_a_librarys_import(num_positions, dim):
    """Puts its own finder first on ``sys.meta_path`` while an untouched library imports,
    and takes it away after."""
    if IMPORTER not in sys.modules:
        sys.meta_path.insert(0, _AskedFinder)
        try:
            importlib.import_module(IMPORTER)
        finally:
            sys.meta_path.remove(_AskedFinder)
    return vaswani(num_positions, dim)


class _CachedFinder:
    """A finder of the target's in ``sys.path_importer_cache`` for the site folder: asked,
    it answers as the folder's own finder would."""

    def __init__(self, own):
        self.own = own

    def find_spec(self, fullname, target=None):
        _set_float64_when_asked_about_the_leaf(fullname)
        return self.own.find_spec(fullname, target)

    def invalidate_caches(self):
        self.own.invalidate_caches()


def caches_its_finder_for_the_site_folder(num_positions, dim):
    """Puts its own finder into ``sys.path_importer_cache`` for the site folder while an
    untouched library there imports."""
    if IMPORTER_TOO not in sys.modules:
        folder = os.environ[LIBRARY]
        own = sys.path_importer_cache.get(folder) or importlib.machinery.FileFinder(
            folder, (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES))
        sys.path_importer_cache[folder] = _CachedFinder(own)
        try:
            importlib.import_module(IMPORTER_TOO)
        finally:
            sys.path_importer_cache[folder] = own
    return vaswani(num_positions, dim)
