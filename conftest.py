"""Shared test set-up: offline Hugging Face, a headless matplotlib, hypothesis profiles, and
how pytest-xdist hands the test files to its workers."""

import dataclasses
import gc
import json
import math
import os
import statistics
from pathlib import Path

import pytest

# Before anything imports transformers or pyplot: no hub access, no screen.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")
# Before numpy and torch load: one BLAS/OpenMP thread per process. The cores are shared by the
# xdist workers and the gate's children; more threads per process only contend for them.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

from hypothesis import settings  # noqa: E402

# CI replays the same examples every run; locally hypothesis explores.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=40)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# pytester runs the plugin's own pytest sessions in this process (spec_tests/core/test_gate_plugin.py).
pytest_plugins = ["pytester"]
# pytester takes out of sys.modules what an inner session imported: a module first imported
# there would be left half-gone (its package still holds it) for the worker's later files.
# posenc_spec.check registers callables in this one, by its entry in sys.modules.
import posenc_spec.gate.callables  # noqa: E402, F401


# Python's full garbage collections walk every object alive: once torch, transformers and
# matplotlib are imported, over a second of each xdist worker's CPU in a run. What outlives a
# test file (modules, caches, session fixtures) is collected once and frozen, so later
# collections skip it; what a file leaves behind is collected first, so nothing is kept that
# would otherwise be freed.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    result = yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()
    return result


def pytest_unconfigure(config):
    # The session is over: Python's last collections at exit would walk what the last file
    # left (the run waits for every worker's exit). Finalizers registered with atexit still run.
    gc.freeze()



# Which tests each test file holds and which of them are in the slow tier (marked ``slow``),
# as collected before ``-m`` deselects any: meta_tests/test_suite_setup.py holds the default
# tier to a test of every file and every family.
COLLECTED = pytest.StashKey[dict[str, list[bool]]]()


# The slow tier (``-m slow``; the default run leaves it out, pyproject's addopts):
# - the corpus tests that read every entry's report (the module fixture ``reports`` of each
#   corpus's gate tests: the whole corpus through the full gate); each of those files keeps
#   a test of its own in the default tier, as every file does;
# - every test function that costs more than SLOW_SECONDS when run alone: its own seconds
#   (its cases' setup, call and teardown) plus the setup of every fixture it uses that outlives
#   one test (a module fixture gating a corpus, a session fixture importing a library), as
#   ``python benchmarks/bench_suite.py --record`` last recorded them in TEST_SECONDS, in the
#   seconds an idle machine takes (benchmarks/record_seconds.py: wall time over the slowdown
#   the machine's load caused at the time, so that a recording on shared cores places the
#   tests as an idle machine would). Real libraries' code through the gate, whole command lines
#   as an ordinary user, figures compared pixel by pixel, and every test sharing an expensive
#   fixture land there. A test function not recorded yet is estimated from what is: its
#   shared fixtures' seconds (one never recorded counts as slow: a fixture is shared because
#   it costs), plus the median of its file's recorded functions. The function of each file
#   that costs least alone stays in the default tier, so that every file, and every family,
#   is tested by default (meta_tests/test_suite_setup.py holds the default tier to that).
CORPUS_FOLDER = Path(__file__).parent / "meta_tests" / "corpus"
TEST_SECONDS = Path(__file__).parent / "benchmarks" / "test_seconds.json"
# Idle seconds: on two idle cores the default tier takes about half its tests' seconds, plus
# each worker's start and collection.
SLOW_SECONDS = 0.2


@dataclasses.dataclass(frozen=True)
class Recorded:
    """Idle seconds as ``bench_suite.py --record`` measured them: per test function
    (``path::name``, its cases together, less its shared fixtures' setup) and per fixture
    that outlives one test (``baseid::name``: where it is defined, and its name)."""

    tests: dict[str, float]
    fixtures: dict[str, float]


def recorded_test_seconds() -> Recorded:
    """The seconds last recorded in TEST_SECONDS; none when missing or malformed."""
    try:
        data = json.loads(TEST_SECONDS.read_text())
        return Recorded(*({name: float(seconds) for name, seconds in data[part].items()}
                          for part in ("tests", "fixtures")))
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return Recorded({}, {})


def alone_seconds(functions: dict[str, frozenset[str]], recorded: Recorded) -> dict[str, float]:
    """What each test function of one file (name -> the shared fixtures it uses) costs run
    alone, recorded or estimated (module comment above); ``inf`` with a fixture never recorded."""
    known = [recorded.tests[name] for name in functions if name in recorded.tests]
    unrecorded = statistics.median(known) if known else 0.0
    return {name: recorded.tests.get(name, unrecorded)
            + sum(recorded.fixtures.get(fixture, math.inf) for fixture in fixtures)
            for name, fixtures in functions.items()}


def slow_functions(functions: dict[str, frozenset[str]], recorded: Recorded) -> set[str]:
    """The test functions of one file that go to the slow tier: those costing more than
    SLOW_SECONDS alone, all but the one that costs least."""
    seconds = alone_seconds(functions, recorded)
    if not seconds:
        return set()
    kept = min(seconds, key=lambda name: (seconds[name], name))
    return {name for name, cost in seconds.items() if cost > SLOW_SECONDS and name != kept}


def _function(item) -> str:
    return f"{item.nodeid.split('::')[0]}::{getattr(item, 'originalname', item.name)}"


def shared_fixtures(item) -> frozenset[str]:
    """The fixtures ``item`` uses that outlive one test, as ``baseid::name``, but for those of
    pytest, its plugins and the root conftest.py (baseid ``""``: temporary folders, settings)."""
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return frozenset(f"{chain[-1].baseid}::{chain[-1].argname}" for name, chain in definitions.items()
                     if chain and name in item.fixturenames and chain[-1].scope != "function"
                     and chain[-1].baseid)


# What each test function left in the default tier costs run alone, by the record (``inf``
# where a shared fixture it uses was never recorded): meta_tests/test_suite_setup.py holds
# every file's default tests to DEFAULT_TEST_SECONDS.
DEFAULT_SECONDS = pytest.StashKey[dict[str, float]]()


def _mark_slow(items) -> dict[str, float]:
    """Mark the slow tier's tests; return what each test function left in the default tier costs alone."""
    recorded = recorded_test_seconds()
    by_file: dict[str, dict[str, frozenset[str]]] = {}
    for item in items:
        if item.path.parent == CORPUS_FOLDER and "reports" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("slow") is None:
            functions = by_file.setdefault(item.nodeid.split("::")[0], {})
            functions[_function(item)] = functions.get(_function(item), frozenset()) | shared_fixtures(item)
    slow = set().union(*(slow_functions(functions, recorded) for functions in by_file.values()))
    for item in items:
        if _function(item) in slow:
            item.add_marker(pytest.mark.slow)
    return {name: seconds for functions in by_file.values()
            for name, seconds in alone_seconds(functions, recorded).items() if name not in slow}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    config.stash[DEFAULT_SECONDS] = _mark_slow(items)
    collected: dict[str, list[bool]] = {}
    for item in items:
        collected.setdefault(item.nodeid.split("::")[0], []).append(item.get_closest_marker("slow") is not None)
    config.stash[COLLECTED] = collected


# These files import transformers' model code, directly or through posenc_spec.pretrained's
# loaders: 2-4 s of CPU in each process that does (the xdist worker itself, or the gate's
# template preloading it), and MiniLM is loaded once per process. One worker runs them all
# and pays that once; every other file is still a unit of its own (``--dist loadfile``).
TRANSFORMERS_FILES = frozenset((
    "spec_tests/families/sinusoidal/test_gate_real_rng.py", "spec_tests/families/sinusoidal/test_gate_transformers.py",
    "spec_tests/core/test_gate_as_written.py", "spec_tests/families/rope/test_real_code.py",
    "spec_tests/families/rope/test_transformers_frequencies.py", "spec_tests/families/t5buckets/test_tolerance.py",
    "spec_tests/families/mrope/test_real_code.py", "spec_tests/families/mrope/test_gate_real_code.py",
    *(f"spec_tests/pretrained/test_{name}.py" for name in (
        "architecture", "configs", "loading", "seed_claims", "figures", "minilm", "hub_weights")),
))


# Seconds each test file took in its worker, as ``python benchmarks/bench_suite.py --record``
# measured them. The workers take the longest files first, so that no long file starts near
# the end while the other workers run out of work. Only the order depends on these numbers:
# a file not recorded counts as the median file.
FILE_SECONDS = Path(__file__).parent / "benchmarks" / "suite_durations.json"


def recorded_seconds() -> dict[str, float]:
    try:
        return {name: float(seconds) for name, seconds in json.loads(FILE_SECONDS.read_text()).items()}
    except (OSError, ValueError, TypeError, AttributeError):  # missing or malformed: the files in collection order
        return {}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    seconds = recorded_seconds()
    unknown = statistics.median(seconds.values()) if seconds else 0.0

    class LongestFirstTransformersTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "transformers" if scope in TRANSFORMERS_FILES else scope

        def _assign_work_unit(self, node) -> None:
            longest = max(self.workqueue, key=self._seconds)  # the first of equals: deterministic
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

        @staticmethod
        def _seconds(scope: str) -> float:
            files = TRANSFORMERS_FILES if scope == "transformers" else (scope,)
            return sum(seconds.get(name, unknown) for name in files)

    return LongestFirstTransformersTogether(config, log)


@pytest.fixture(scope="session", autouse=True)
def _targets_may_write_the_tests_folders(tmp_path_factory):
    """Confined targets write only beneath their own folder and the folders
    ``POSENC_SPEC_WRITABLE`` names (posenc_spec/gate/child/confinement.py): here this session's
    temporary folders, where the tests read the marks, process ids and files their targets
    leave. The tests of the confinement itself name their own."""
    os.environ.setdefault("POSENC_SPEC_WRITABLE", str(tmp_path_factory.getbasetemp()))
