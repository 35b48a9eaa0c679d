"""The suite's own set-up in conftest.py stays true of the test files."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[1]
# What makes a file pay for transformers' model code: importing it, preloading it in the
# gate, or loading a model through posenc_spec.pretrained.
USES_TRANSFORMERS = re.compile(r"^\s*(import transformers|from transformers)|TRANSFORMERS_PRELOAD"
                               r"|pretrained\.(minilm_model|minilm_position_table|load_pretrained)\(", re.MULTILINE)


def test_the_files_kept_on_one_worker_are_those_that_import_transformers():
    """conftest.TRANSFORMERS_FILES names every test file that imports transformers, preloads
    it in the gate or loads a model with it, and no other: a file missed pays the import on
    a second worker."""
    this_file = Path(__file__).resolve()  # it holds the pattern, not an import
    files = {path.relative_to(ROOT).as_posix() for folder in ("spec_tests", "meta_tests")
             for path in (ROOT / folder).rglob("test_*.py")
             if path != this_file and USES_TRANSFORMERS.search(path.read_text())}
    assert files == conftest.TRANSFORMERS_FILES, (
        f"missing from conftest.TRANSFORMERS_FILES: {sorted(files - conftest.TRANSFORMERS_FILES)}; "
        f"listed but not importing transformers: {sorted(conftest.TRANSFORMERS_FILES - files)}")


def test_recorded_durations_name_test_files_that_exist():
    """benchmarks/suite_durations.json, which orders the files for pytest-xdist, parses into
    seconds and names only test files that exist: a renamed file is re-recorded, not ignored."""
    seconds = conftest.recorded_seconds()
    assert seconds, f"{conftest.FILE_SECONDS} is missing or not a JSON object of seconds per file"
    stale = sorted(name for name in seconds if not (ROOT / name).is_file())
    assert not stale, f"recorded but not there (python benchmarks/bench_suite.py --record): {stale}"
    assert all(value >= 0 for value in seconds.values()), seconds


def _test_files() -> set[str]:
    return {path.relative_to(ROOT).as_posix() for folder in ("spec_tests", "meta_tests")
            for path in (ROOT / folder).rglob("test_*.py")}


def _default_tier(pytestconfig) -> tuple[set[str], set[str]]:
    """The test files that hold a test of the default tier (one not marked ``slow``), and those
    skipped whole as they were collected (a framework this machine lacks: pytest names it and
    how to install it): read from this session's collection when it collected every test
    file, else from a collection of the suite with the project's own options in a process of
    its own."""
    collected = pytestconfig.stash.get(conftest.COLLECTED, {})
    if set(collected) >= _test_files():
        return {path for path, slow in collected.items() if not all(slow)}, set()
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-n", "0", "-p", "no:cacheprovider"]
    listing = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    skipped = {line.split()[2].split(":")[0] for line in listing if line.startswith("SKIPPED [")}
    return {line.split("::")[0] for line in listing if "::" in line}, skipped


def test_the_default_tier_runs_a_test_of_every_file_and_every_family(pytestconfig):
    """`pytest` without options leaves out the slow tier (pyproject's addopts), yet runs at
    least one test of every test file and of every family's own tests folder: marking a whole
    file or family slow leaves it untested by default."""
    addopts = pytestconfig.getini("addopts")
    assert "-m" in addopts and addopts[addopts.index("-m") + 1] == "not slow", f"addopts = {addopts}"
    default, skipped = _default_tier(pytestconfig)
    untested = sorted(_test_files() - default - skipped)
    assert not untested, f"test files whose every test is marked slow: {untested}"
    families = {path.parent.name for path in (ROOT / "posenc_spec" / "families").glob("*/__init__.py")}
    assert families, "no family packages found"
    tested = {path.split("/")[2] for path in default if path.startswith("spec_tests/families/")}
    assert families <= tested, f"families with no default test: {sorted(families - tested)}"


# What one test function left in the default tier may cost run alone, by the record: a module
# fixture gating a table of real libraries' code or a corpus costs tens of seconds; a file
# whose every test shares one needs a cheap test of its own (its targets' declarations, say).
DEFAULT_TEST_SECONDS = 10.0


def test_no_default_test_pays_for_a_whole_table_or_corpus(pytestconfig):
    """By the recorded seconds, every test function this session left in the default tier
    costs at most DEFAULT_TEST_SECONDS run alone, its shared fixtures included (one whose
    fixture was never recorded is judged once recorded)."""
    costs = pytestconfig.stash.get(conftest.DEFAULT_SECONDS, {})
    assert costs, "conftest.py recorded no default test's cost in this session"
    expensive = {name: round(seconds, 1) for name, seconds in costs.items()
                 if DEFAULT_TEST_SECONDS < seconds < math.inf}
    assert not expensive, f"default tests costing more than {DEFAULT_TEST_SECONDS} s alone: {expensive}"


# One test file's functions as conftest.slow_functions sees them (name -> the shared fixtures
# it uses), and what was recorded of them: a corpus fixture of 89 s that two tests share.
CORPUS = "tests/test_x.py::reports"
FILE = {"tests/test_x.py::test_first_entry": frozenset({CORPUS}),
        "tests/test_x.py::test_every_entry": frozenset({CORPUS}),
        "tests/test_x.py::test_declarations": frozenset()}
RECORDED = conftest.Recorded(tests={"tests/test_x.py::test_first_entry": 0.01,
                                    "tests/test_x.py::test_every_entry": 0.05,
                                    "tests/test_x.py::test_declarations": 0.15},
                             fixtures={CORPUS: 89.0})


def test_a_test_sharing_an_expensive_fixture_is_slow_however_quick_its_own_part():
    """Two tests share a corpus fixture of 89 s, which the record counts apart from their own
    0.01 and 0.05 s: both cost 89 s run alone, and the file's default test is the one using no
    such fixture, though its own part is the longest."""
    assert conftest.slow_functions(FILE, RECORDED) == {"tests/test_x.py::test_first_entry",
                                                       "tests/test_x.py::test_every_entry"}


def test_a_file_whose_every_test_shares_the_fixture_keeps_the_one_costing_least_alone():
    """With no test free of the corpus fixture, one test of the file stays in the default tier:
    the one costing least alone (the meta test above needs a test of every file)."""
    sharing = {name: fixtures for name, fixtures in FILE.items() if fixtures}
    assert conftest.slow_functions(sharing, RECORDED) == {"tests/test_x.py::test_every_entry"}


def test_a_test_not_recorded_yet_is_estimated_from_its_fixtures_and_its_file():
    """A new test sharing a fixture never recorded is slow (a fixture is shared because it
    costs); one sharing the recorded corpus fixture is slow; one sharing nothing takes its file's
    median: default among quick tests, slow among slow ones."""
    new = {"tests/test_x.py::test_new_fixture": frozenset({"tests/test_x.py::models"}),
           "tests/test_x.py::test_new_corpus": frozenset({CORPUS}),
           "tests/test_x.py::test_new_plain": frozenset()}
    assert conftest.slow_functions({**FILE, **new}, RECORDED) == {
        "tests/test_x.py::test_first_entry", "tests/test_x.py::test_every_entry",
        "tests/test_x.py::test_new_fixture", "tests/test_x.py::test_new_corpus"}
    slow_file = conftest.Recorded(tests={name: 3.0 for name in FILE}, fixtures={CORPUS: 89.0})
    assert "tests/test_x.py::test_new_plain" in conftest.slow_functions({**FILE, **new}, slow_file)


def test_without_a_record_every_test_is_in_the_default_tier():
    """No recorded seconds (a fresh clone without benchmarks/test_seconds.json) moves nothing
    into the slow tier but tests of never-recorded shared fixtures, one of each file kept."""
    nothing = conftest.Recorded({}, {})
    plain = {name: frozenset() for name in FILE}
    assert conftest.slow_functions(plain, nothing) == set()
    assert conftest.slow_functions(FILE, nothing) == {"tests/test_x.py::test_first_entry",
                                                      "tests/test_x.py::test_every_entry"}
