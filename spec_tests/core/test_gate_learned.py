"""A library is imported once per run (posenc_spec/gate/learned.py): the installed modules a
target's process imported are imported into the slot template before the next target is
forked, and only those: never a target's own module, a module of the user's tree, or a name
that is not an installed library's file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import types

import pytest

from posenc_spec.gate.child.learned import NewModules
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.learned import FRAMEWORK_BOUND, REQUEST_NAME_BYTES, LearnedModules
from posenc_spec.gate.runner import _parts
from posenc_spec.gate.sandbox import FILE_CLOCK
from spec_tests.assertions import check_named, failure_summary

# An installed library the gate's templates do not import (its own code imports it only to
# derive constants, in the gate's process): a target's call imports it.
LIBRARY = "xmlschema"

TABLE = """
import sys

import numpy as np


def table(n, d):
    {body}
    positions = np.arange(n, dtype=np.float64)[:, None]
    frequencies = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    out = np.zeros((n, d))
    out[:, 0::2], out[:, 1::2] = np.sin(positions * frequencies), np.cos(positions * frequencies)
    return out.astype(np.float32)
"""


def _write(folder, name: str, body: str) -> None:
    body = textwrap.indent(textwrap.dedent(body).strip(), "    ").strip()
    (folder / f"{name}.py").write_text(TABLE.replace("{body}", body), encoding="utf-8")


def _write_looks_for_it(folder) -> None:
    """The module ``looks_for_it``, whose table raises unless LIBRARY was imported before it."""
    _write(folder, "looks_for_it", f"""
        if {LIBRARY!r} not in FOUND_AT_IMPORT:
            raise RuntimeError("{LIBRARY} was not imported before this module")""")
    looks = folder / "looks_for_it.py"
    looks.write_text(f"import sys\nFOUND_AT_IMPORT = set(sys.modules)\n{looks.read_text()}", encoding="utf-8")


def test_a_later_target_finds_the_library_an_earlier_call_imported(tmp_path, monkeypatch):
    """The first target's call imports an installed library; the second target, of another
    module, finds it imported before its own module ran (its calls raise otherwise): both conform."""
    pytest.importorskip(LIBRARY)
    _write(tmp_path, "imports_it", f"import {LIBRARY}  # noqa: F401")
    _write_looks_for_it(tmp_path)
    monkeypatch.chdir(tmp_path)
    reports = check_named({name: declare({"target": f"{name}:table", "api": "table", "max_positions": 64})
                           for name in ("imports_it", "looks_for_it")})
    for name, report in reports.items():
        assert report.conforms, f"{name}: {failure_summary(report)}"


def _two_tables(folder, name: str, first_body: str, second_body: str, header: str = "") -> None:
    """A module of two table functions, ``first`` and ``second``, their bodies before the table."""
    _write(folder, name, first_body)
    one = (folder / f"{name}.py").read_text(encoding="utf-8")
    _write(folder, name, second_body)
    two = (folder / f"{name}.py").read_text(encoding="utf-8").replace("def table(", "def second(")
    (folder / f"{name}.py").write_text(header + one.replace("def table(", "def first(") + two, encoding="utf-8")


def test_the_libraries_a_shared_modules_import_brought_are_learned(tmp_path, monkeypatch):
    """A module two targets share is imported once, in a template of its own; the library its
    import brought is learned from there: a target of another module finds it imported."""
    pytest.importorskip(LIBRARY)
    _two_tables(tmp_path, "imports_it", "pass", "pass", header=f"import {LIBRARY}  # noqa: F401\n")
    _write_looks_for_it(tmp_path)
    monkeypatch.chdir(tmp_path)
    reports = check_named({target: declare({"target": target, "api": "table", "max_positions": 64})
                           for target in ("imports_it:first", "imports_it:second", "looks_for_it:table")})
    for name, report in reports.items():
        assert report.conforms, f"{name}: {failure_summary(report)}"


def test_a_shared_modules_next_target_finds_what_an_earlier_call_imported(tmp_path, monkeypatch):
    """The first target's call imports a library; the second target of the same module, forked
    from the module's template, finds it imported when first called (it raises otherwise)."""
    pytest.importorskip(LIBRARY)
    _two_tables(tmp_path, "lazily", f"import {LIBRARY}  # noqa: F401", f"""
        if {LIBRARY!r} not in sys.modules:
            raise RuntimeError("{LIBRARY} was not imported before this call")""")
    monkeypatch.chdir(tmp_path)
    reports = check_named({target: declare({"target": target, "api": "table", "max_positions": 64})
                           for target in ("lazily:first", "lazily:second")})
    for name, report in reports.items():
        assert report.conforms, f"{name}: {failure_summary(report)}"


def test_only_installed_unchanged_modules_outside_the_runs_targets_are_learned(tmp_path, monkeypatch):
    """Kept: an installed library's module. Left out: a target's own module, the standard
    library, a module of the user's tree, a name no file has, text that is no module name, and
    Keras (its import fixes the backend each target declares)."""
    (tmp_path / "users_own.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    declarations = [declare({"target": "numpy.linalg:norm", "api": "table"}),
                    declare({"target": "users_own:table", "api": "table"})]
    learned = LearnedModules(declarations)
    learned.add(["numpy.fft", "numpy.linalg", "json", "users_own", "numpy.no_such_module", "numpy..fft",
                 "os; import antigravity", 7, None, "keras", "keras.src.backend"])
    learned.add("numpy.polynomial")  # not a list: nothing
    assert learned.names == ["numpy.fft"]
    assert learned.keep_out == sorted({"numpy.linalg", "users_own", *FRAMEWORK_BOUND})


def test_a_file_written_after_the_run_started_is_not_learned(tmp_path, monkeypatch):
    """A module file newer than the run (one a target could have written into a library's
    folder) is not learned, even where it lies in a site-packages folder."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    learned = LearnedModules([declare({"target": "numpy:sin", "api": "table"})])
    (site / "written_late.py").write_text("VALUE = 1\n", encoding="utf-8")
    learned.add(["written_late"])
    assert learned.names == []
    assert "written_late" not in sys.modules


def test_a_module_inside_namespace_packages_the_gate_never_imported_is_learned(tmp_path, monkeypatch):
    """A library's module under namespace packages (einx's ``einx._src``), none of them
    imported in the gate's process, is found in the library's folders and learned."""
    module = tmp_path / "site-packages" / "nsx_library" / "inner" / "mod.py"
    module.parent.mkdir(parents=True)
    module.write_text("VALUE = 1\n", encoding="utf-8")
    while time.clock_gettime_ns(FILE_CLOCK) <= module.stat().st_ctime_ns:  # the run begins after the file
        time.sleep(0.001)
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    learned = LearnedModules([declare({"target": "numpy:sin", "api": "table"})])
    learned.add(["nsx_library.inner.mod"])
    assert learned.names == ["nsx_library.inner.mod"]
    assert "nsx_library" not in sys.modules


def test_the_child_names_only_installed_libraries_imported_since_its_last_reply(tmp_path, monkeypatch):
    """A child's list: the installed modules imported since it last answered, a library's
    submodules included, not the standard library's or the user's."""
    pytest.importorskip(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "a_users_module.py").write_text("VALUE = 1\n", encoding="utf-8")
    for name in [name for name in sys.modules if name == LIBRARY or name.startswith(f"{LIBRARY}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "a_users_module", raising=False)
    new = NewModules()
    __import__(LIBRARY)
    __import__("a_users_module")
    taken = new.take()
    assert LIBRARY in taken and any(name.startswith(f"{LIBRARY}.") for name in taken)
    assert "a_users_module" not in taken
    assert new.take() == []
    monkeypatch.setitem(sys.modules, "posenc_probe_after", types.ModuleType("posenc_probe_after"))
    assert new.take() == [] and "posenc_probe_after" in new.known  # looked at, and not a library's


IMPORTS_IN_A_TEMPLATE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from posenc_spec.gate.child.learned import import_learned
first = import_learned(["plain", "imports_the_target", "plain_too"], ["the_target"])
second = import_learned(["starts_a_thread", "plain_too"], [])
print(json.dumps([first, second, sorted(set(sys.modules) & {"plain", "plain_too"})]))
"""


def test_an_import_that_brings_a_targets_module_or_a_thread_taints_the_template(tmp_path):
    """The template stops at the first learned import that imports a target's module or leaves
    a thread running, and says which: it forks no child after that."""
    for name, code in {"plain": "", "plain_too": "", "the_target": "", "imports_the_target": "import the_target",
                       "starts_a_thread": "import threading, time\nthreading.Thread(target=time.sleep, args=(60,),"
                                          " daemon=True).start()"}.items():
        (tmp_path / f"{name}.py").write_text(code + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", IMPORTS_IN_A_TEMPLATE, str(tmp_path)], capture_output=True,
                          text=True, check=True)
    keep_out, thread, imported = json.loads(done.stdout)
    assert keep_out == {"ok": False, "tainted": "imports_the_target"}
    assert thread == {"ok": False, "tainted": "starts_a_thread"}
    assert imported == ["plain"]


OPENBLAS_IN_A_TEMPLATE = """
import json
import numpy
from posenc_spec.gate.child.learned import _threads, import_learned
before = _threads()
answer = import_learned(["scipy.linalg"], [])
print(json.dumps([answer, _threads() - before]))
"""


def test_openblas_threads_do_not_taint_the_template():
    """SciPy's own OpenBLAS starts a pool of threads when loaded, which it shuts down before
    every fork: importing it leaves the template usable."""
    pytest.importorskip("scipy.linalg")
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", OPENBLAS_IN_A_TEMPLATE], capture_output=True, text=True,
                          check=True, env=environment)
    answer, started = json.loads(done.stdout)
    if not started:
        pytest.skip("SciPy's OpenBLAS started no thread here (a single core, or a build without threads)")
    assert answer == {"ok": True}


def test_learned_names_go_to_a_template_in_parts_that_fit_a_request():
    """More names than one request header holds are sent in parts, in order, each within the
    bound (a run that learned several libraries at once)."""
    names = [f"library_{index:05d}.module_{index:05d}" for index in range(4000)]
    parts = _parts(names, REQUEST_NAME_BYTES)
    assert len(parts) > 1 and [name for part in parts for name in part] == names
    assert all(len(json.dumps(part)) <= REQUEST_NAME_BYTES for part in parts)
