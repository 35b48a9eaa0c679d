"""The child's attribution of global-state changes (``posenc_spec/gate/child/attribution.py``):
a change made while an installed library was being imported is that import's side effect,
every other change the target's.

Each test imports modules it writes into a temporary folder, under names no other test
uses; a folder counts as installed when the test adds it to the library roots.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import py_compile
import sys
import textwrap
import time

import pytest

from posenc_spec.gate.child import attribution, state
from posenc_spec.gate.sandbox import FILE_CLOCK


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """Write modules into ``tmp_path/library`` (installed) or ``tmp_path/user`` (not), put
    both folders on the import path, and forget every module written at the end. The import
    system's finders and hooks the test process has are trusted, as the gate's are before a
    target runs."""
    attribution.trust_import_machinery()
    library, user = tmp_path / "library", tmp_path / "user"
    library.mkdir()
    user.mkdir()
    monkeypatch.setattr(attribution, "_ROOTS", (*attribution._ROOTS, os.path.join(os.path.realpath(library), "")))
    monkeypatch.syspath_prepend(str(library))
    monkeypatch.syspath_prepend(str(user))
    written = []

    def write(name: str, body: str, installed: bool = True):
        folder = library if installed else user
        (folder / f"{name}.py").write_text(textwrap.dedent(body))
        written.append(name)
        importlib.invalidate_caches()

    yield write
    for name in written:
        sys.modules.pop(name, None)


@pytest.fixture
def clean_environment(monkeypatch):
    """The environment variables these tests set are unset when each starts and ends."""
    for name in ("POSENC_LIBRARY", "POSENC_INNER", "POSENC_OWN", "POSENC_USER_MODULE"):
        monkeypatch.delenv(name, raising=False)
    yield
    for name in ("POSENC_LIBRARY", "POSENC_INNER", "POSENC_OWN", "POSENC_USER_MODULE"):
        os.environ.pop(name, None)


def watched(action, target_module=None):
    """The verdict of a :class:`~attribution.Watch` around ``action()``, and the baseline."""
    baseline = state.snapshot()
    with attribution.Watch(baseline, target_module) as watch:
        action()
    return watch.verdict(state.snapshot()), baseline


def test_installed_tells_libraries_from_the_users_code(tmp_path):
    """The standard library, built-in modules and site packages are installed; a module
    from an arbitrary folder, or loaded by a loader of its own, is not."""
    (tmp_path / "posenc_attribution_mine.py").write_text("")
    mine = importlib.util.spec_from_file_location("posenc_attribution_mine", tmp_path / "posenc_attribution_mine.py")

    class OwnLoader(importlib.abc.Loader):
        def exec_module(self, module):
            pass

    forged = importlib.util.spec_from_loader("forged", OwnLoader(), origin=json.__file__)
    verdicts = {"json": attribution.installed(json.__spec__), "sys": attribution.installed(sys.__spec__),
                "pytest": attribution.installed(pytest.__spec__), "mine": attribution.installed(mine),
                "forged": attribution.installed(forged)}
    assert verdicts == {"json": True, "sys": True, "pytest": True, "mine": False, "forged": False}, verdicts


def test_a_librarys_import_side_effect_is_kept_and_named(modules, clean_environment):
    """What a library's import sets is attributed to that library and kept; nothing is the target's."""
    modules("posenc_attr_lib_a", "import os\nos.environ['POSENC_LIBRARY'] = '1'\n")
    verdict, _ = watched(lambda: importlib.import_module("posenc_attr_lib_a"))
    assert (verdict.own, verdict.kept) == ({}, {"environment variables"}), verdict
    assert verdict.effects == ["importing posenc_attr_lib_a changed environment variables (POSENC_LIBRARY)"]
    assert verdict.imported == ["posenc_attr_lib_a"] and verdict.count == 1


def test_a_nested_librarys_change_is_named_after_the_import_that_began_it(modules, clean_environment):
    """A change made by a module another library imports is that import's: named after the
    module the library import began with."""
    modules("posenc_attr_lib_inner", "import os\nos.environ['POSENC_INNER'] = '1'\n")
    modules("posenc_attr_lib_outer", "import posenc_attr_lib_inner\n")
    verdict, _ = watched(lambda: importlib.import_module("posenc_attr_lib_outer"))
    assert verdict.effects == ["importing posenc_attr_lib_outer changed environment variables (POSENC_INNER)"]
    assert (verdict.imported, verdict.count) == (["posenc_attr_lib_outer"], 2)


def test_a_users_module_a_library_imports_is_the_targets(modules, clean_environment):
    """Inside a library's import, a module of the user's is the target's code, named alone:
    what the library does before and after it, and a library that module imports, are not."""
    modules("posenc_attr_lib_deep", "import os\nos.environ['POSENC_INNER'] = '1'\n")
    modules("posenc_attr_user_between", "import os\nos.environ['POSENC_USER_MODULE'] = '1'\n"
            "import posenc_attr_lib_deep\n", installed=False)
    modules("posenc_attr_lib_around", "import os\nos.environ['POSENC_LIBRARY'] = '1'\n"
            "import posenc_attr_user_between\nos.environ['POSENC_OWN'] = '1'\n")
    verdict, _ = watched(lambda: importlib.import_module("posenc_attr_lib_around"))
    assert verdict.own == {"environment variables": "environment variables (POSENC_USER_MODULE)"}, verdict


def test_a_librarys_import_is_read_where_it_begins_and_ends(modules, monkeypatch):
    """The state is read when a library's import begins and ends, not at every module it
    imports in turn (transformers imports a thousand)."""
    for index in range(20):
        modules(f"posenc_attr_lib_many_{index}", f"import posenc_attr_lib_many_{index + 1}\n" if index < 19 else "")
    readings = []
    snapshot = state.snapshot
    monkeypatch.setattr(state, "snapshot", lambda: readings.append(1) or snapshot())
    verdict, _ = watched(lambda: importlib.import_module("posenc_attr_lib_many_0"))
    assert verdict.count == 20 and len(readings) <= 4, (verdict.count, len(readings))


def test_the_targets_change_beside_an_import_is_the_targets_alone(modules, clean_environment):
    """A change the target makes in the same call as a library's import side effect fails,
    named without the library's part."""
    modules("posenc_attr_lib_b", "import os\nos.environ['POSENC_LIBRARY'] = '1'\n")

    def action():
        importlib.import_module("posenc_attr_lib_b")
        os.environ["POSENC_OWN"] = "1"

    verdict, _ = watched(action)
    assert verdict.own == {"environment variables": "environment variables (POSENC_OWN)"}, verdict
    assert "environment variables" not in verdict.kept


def test_a_change_made_after_an_import_is_the_targets(modules, clean_environment):
    """Code that runs after a library's import, in the target's call, is the target's."""
    modules("posenc_attr_lib_c", "VALUE = 1\n")

    def action():
        importlib.import_module("posenc_attr_lib_c")
        os.environ["POSENC_OWN"] = "1"

    verdict, _ = watched(action)
    assert verdict.own == {"environment variables": "environment variables (POSENC_OWN)"}, verdict
    assert verdict.effects == []


def test_a_users_module_is_the_targets_code(modules, clean_environment):
    """A module from outside the library roots (the user's tree) changes state as the target."""
    modules("posenc_attr_user_a", "import os\nos.environ['POSENC_USER_MODULE'] = '1'\n", installed=False)
    verdict, _ = watched(lambda: importlib.import_module("posenc_attr_user_a"))
    assert verdict.own == {"environment variables": "environment variables (POSENC_USER_MODULE)"}, verdict
    assert verdict.effects == []


def test_the_targets_own_module_is_the_targets_even_when_installed(modules, clean_environment):
    """The target's module is its own code wherever it is installed."""
    modules("posenc_attr_lib_target", "import os\nos.environ['POSENC_OWN'] = '1'\n")
    verdict, _ = watched(lambda: importlib.import_module("posenc_attr_lib_target"), "posenc_attr_lib_target")
    assert verdict.own == {"environment variables": "environment variables (POSENC_OWN)"}, verdict


def test_a_change_undone_before_the_end_is_no_change(modules, clean_environment):
    """Only what differs when the call ends counts, whoever changed it meanwhile."""
    modules("posenc_attr_lib_d", "import os\nos.environ['POSENC_LIBRARY'] = '1'\n")

    def action():
        importlib.import_module("posenc_attr_lib_d")
        del os.environ["POSENC_LIBRARY"]

    verdict, _ = watched(action)
    assert (verdict.own, verdict.kept, verdict.effects) == ({}, set(), []), verdict


def test_the_import_system_is_left_as_found(modules):
    """After a watch, also one ended by an exception or nested in another, Python imports
    through its own function again."""
    original = attribution._bootstrap._load_unlocked
    modules("posenc_attr_lib_raises", "raise RuntimeError('no')\n")
    with pytest.raises(RuntimeError), attribution.Watch(state.snapshot()):
        with attribution.Watch(state.snapshot()):
            importlib.import_module("posenc_attr_lib_raises")
    assert attribution._bootstrap._load_unlocked is original


def test_settle_keeps_import_side_effects_and_restores_the_rest(modules, clean_environment):
    """After a call, the child puts back what the target changed and keeps what imports changed."""
    from posenc_spec.gate.child.serve import _settle

    modules("posenc_attr_lib_e", "import os\nos.environ['POSENC_LIBRARY'] = '1'\n")

    def action():
        importlib.import_module("posenc_attr_lib_e")
        os.environ["POSENC_OWN"] = "1"
        sys.setrecursionlimit(sys.getrecursionlimit() + 1)

    limit = sys.getrecursionlimit()
    verdict, baseline = watched(action)
    lines = _settle(baseline, verdict)
    assert sys.getrecursionlimit() == limit and "POSENC_OWN" not in os.environ, lines
    assert any(line.startswith("recursion limit") for line in lines), lines
    assert state.compare_and_restore(baseline) == []


def test_a_loader_not_exactly_standard_or_a_lying_origin_is_not_installed(modules):
    """A SourceFileLoader subclass of a library's file, and a standard loader of the user's file
    in a spec whose origin names the standard library: neither is installed."""
    modules("posenc_attr_lib_loaded", "")
    modules("posenc_attr_user_loaded", "", installed=False)
    library_file = importlib.util.find_spec("posenc_attr_lib_loaded").origin
    user_file = importlib.util.find_spec("posenc_attr_user_loaded").origin

    class Subclass(importlib.machinery.SourceFileLoader):
        pass

    standard = importlib.util.spec_from_loader("a", importlib.machinery.SourceFileLoader("a", library_file))
    subclassed = importlib.util.spec_from_loader("b", Subclass("b", library_file))
    lying = importlib.util.spec_from_loader("c", importlib.machinery.SourceFileLoader("c", user_file),
                                            origin=json.__file__)
    verdicts = [attribution.installed(spec) for spec in (standard, subclassed, lying)]
    assert verdicts == [True, False, False], verdicts


def _after_the_clock_passes(path) -> int:
    """The file clock's time once it is past ``path``'s change time (a run begun then)."""
    written = path.stat().st_ctime_ns
    while (now := time.clock_gettime_ns(FILE_CLOCK)) <= written:
        time.sleep(0.001)
    return now


def test_a_file_changed_during_the_run_is_not_a_librarys(modules, monkeypatch):
    """A library file older than the run is a library's; rewritten since, or with a cached
    ``.pyc`` written since that is not its compiled source, it is the target's. A ``.pyc``
    that is its compiled source (the import system writes one on a first import) changes nothing."""
    modules("posenc_attr_lib_dated", "VALUE = 1\n")
    source = importlib.util.find_spec("posenc_attr_lib_dated").origin
    cached = importlib.util.cache_from_source(source)
    monkeypatch.setattr(attribution, "RUN_STARTED", _after_the_clock_passes(pathlib.Path(source)))
    loader = importlib.machinery.SourceFileLoader("posenc_attr_lib_dated", source)
    assert not attribution.changed_during_run(source, loader)
    py_compile.compile(source, cfile=cached, dfile=source)
    assert not attribution.changed_during_run(source, loader), "the compiled source counted as a change"
    other = pathlib.Path(source).with_name("posenc_attr_other_code.py")
    other.write_text("VALUE = 2\n")
    py_compile.compile(str(other), cfile=cached, dfile=source)
    assert attribution.changed_during_run(source, loader), "a .pyc of other code passed"
    pathlib.Path(source).write_text("VALUE = 3\n")
    assert attribution.changed_during_run(source, loader), "a rewritten source passed"


def test_a_finder_a_library_adds_while_imported_keeps_its_next_imports_the_librarys(modules, clean_environment):
    """A library that puts a finder of its own on ``sys.meta_path`` while imported (as
    transformers does) and imports another module after: that module's change is still an
    installed library's."""
    modules("posenc_attr_lib_with_finder", """
        import sys

        class Finder:
            @staticmethod
            def find_spec(fullname, path=None, target=None):
                return None

        sys.meta_path.append(Finder)
        import posenc_attr_lib_after_finder
        """)
    modules("posenc_attr_lib_after_finder", "import os\nos.environ['POSENC_INNER'] = '1'\n")
    try:
        verdict, _ = watched(lambda: importlib.import_module("posenc_attr_lib_with_finder"))
    finally:
        sys.meta_path[:] = [entry for entry in sys.meta_path
                            if getattr(entry, "__module__", None) != "posenc_attr_lib_with_finder"]
    assert verdict.own == {}, verdict
    assert "importing posenc_attr_lib_with_finder changed environment variables (POSENC_INNER)" in verdict.effects


def test_a_library_imported_while_a_finder_of_the_targets_is_there_is_the_targets(modules, clean_environment):
    """While a finder the target put on ``sys.meta_path`` is there (asked about each module
    the library imports), what a library's import changes is the target's."""
    modules("posenc_attr_lib_c", "import os\nos.environ['POSENC_LIBRARY'] = '1'\n")

    class TargetsFinder:
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            return None

    def action():
        sys.meta_path.insert(0, TargetsFinder)
        try:
            importlib.import_module("posenc_attr_lib_c")
        finally:
            sys.meta_path.remove(TargetsFinder)

    verdict, _ = watched(action)
    assert verdict.own == {"environment variables": "environment variables (POSENC_LIBRARY)"}, verdict
    assert verdict.effects == []
