"""A pytest plugin for ``bench_suite.py --record``: what each test function and each shared
fixture costs, in the seconds an idle machine would take, for ``conftest.py`` to place the
tests in their tier.

    POSENC_SPEC_RECORD=FOLDER pytest -p record_seconds ...   (benchmarks/ on sys.path)
    POSENC_SPEC_PLAN=FILE pytest --collect-only -p record_seconds ...

Recording, every pytest process (each xdist worker) writes ``FOLDER/<its pid>.json``::

    {"tests": {"path::function": seconds, ...}, "fixtures": {"baseid::name": seconds, ...},
     "slowdowns": [...]}

A test function's seconds are its cases' setup, call and teardown together, less the setup of
the fixtures that outlive one test (module, class, package or session scope): those are
recorded once per fixture, keyed by where the fixture is defined (its ``baseid``: the test
file, or the folder of its conftest.py) and its name. Whichever test comes first pays such a
fixture in a run; recorded apart, what a test costs run alone (its own seconds and its shared
fixtures') is known whatever the order.

The machine may be shared: each wall time is divided by the slowdown measured around it. At
least every PROBE_EVERY wall seconds, between two tests, the process times PROBE (a fixed
piece of pure Python): its wall time over its own CPU time is the share of a core a runnable
process got at that moment, and the tests in between are divided by the mean of the probes
before and after them. (The gate's processes cannot be counted by CPU time instead: its
root template lets the kernel reap its children, whose CPU time is then counted nowhere.)

Planning (``POSENC_SPEC_PLAN``), it writes to FILE, per test function, the shared fixtures it
uses and whether conftest.py put it in the slow tier: ``{"path::function": [fixtures, slow]}``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

FOLDER = os.environ.get("POSENC_SPEC_RECORD")
PLAN = os.environ.get("POSENC_SPEC_PLAN")
PROBE_EVERY = 0.5  # wall seconds of tests between two probes, at most: the probes cost 3-4% of the run
PROBE_LOOPS = 600_000  # about 20 ms of one core


def probe_slowdown() -> float:
    """Wall time over CPU time of a fixed piece of pure Python, now (1 on an idle core)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    sum(number * number for number in range(PROBE_LOOPS))
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    return max(1.0, wall / cpu) if cpu > 0 else 1.0


def _function(item) -> str:
    return f"{item.nodeid.split('::')[0]}::{getattr(item, 'originalname', item.name)}"


class Recorder:
    def __init__(self, folder: Path):
        self.folder = folder
        self.tests: dict[str, float] = {}
        self.fixtures: dict[str, float] = {}
        self.slowdowns: list[float] = [probe_slowdown()]
        # Wall seconds since the last probe: (tests or fixtures, name, seconds), and their sum.
        self.pending: list[tuple[dict[str, float], str, float]] = []
        self.pending_seconds = 0.0
        self.shared_seconds = 0.0

    def _probe(self) -> None:
        self.slowdowns.append(probe_slowdown())
        slowdown = (self.slowdowns[-2] + self.slowdowns[-1]) / 2
        for table, name, seconds in self.pending:
            table[name] = table.get(name, 0.0) + seconds / slowdown
        self.pending, self.pending_seconds = [], 0.0

    def _add(self, table: dict[str, float], name: str, seconds: float) -> None:
        self.pending.append((table, name, seconds))
        self.pending_seconds += seconds

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.pending_seconds >= PROBE_EVERY:
            self._probe()
        start, self.shared_seconds = time.perf_counter(), 0.0
        try:
            return (yield)
        finally:
            self._add(self.tests, _function(item), time.perf_counter() - start - self.shared_seconds)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        if fixturedef.scope == "function":
            return (yield)
        # pytest sets up what a fixture requests before this hook: no fixture is counted twice.
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            seconds = time.perf_counter() - start
            self._add(self.fixtures, f"{fixturedef.baseid}::{fixturedef.argname}", seconds)
            self.shared_seconds += seconds

    def pytest_sessionfinish(self, session):
        self._probe()
        self.folder.mkdir(parents=True, exist_ok=True)
        figures = {"tests": self.tests, "fixtures": self.fixtures, "slowdowns": self.slowdowns}
        (self.folder / f"{os.getpid()}.json").write_text(json.dumps(figures))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if not PLAN:
        return
    from conftest import shared_fixtures

    plan: dict[str, list] = {}
    for item in items:
        fixtures, slow = plan.setdefault(_function(item), [set(), False])
        fixtures |= shared_fixtures(item)
        plan[_function(item)][1] = slow or item.get_closest_marker("slow") is not None
    Path(PLAN).write_text(json.dumps({name: [sorted(fixtures), slow] for name, (fixtures, slow) in plan.items()}))


def pytest_configure(config):
    if FOLDER:
        config.pluginmanager.register(Recorder(Path(FOLDER)), "posenc_spec_record_seconds")
