"""The default test suite's cost: wall time, CPU time, and where it goes.

    python benchmarks/bench_suite.py [--repeats 3] [--files 15] [--tier slow] [--record [PATH ...]]

Runs the README's test command (``pytest`` with the repository's own options: pytest-xdist
``-n auto``, in the environment tox gives it, :func:`_environment`) ``--repeats`` times and
reports the median wall time and two CPU times: the machine's busy time over the run (Linux
``/proc/stat``; everything the run started, the gate's forked children too, and anything
else the machine ran meanwhile) and the rusage of the processes the run waited for (the
gate's template reaps its own children without passing their times up, so this one leaves
them out). On a machine with N cores the wall time cannot fall below busy / N, so the busy
time says what parallelism can still buy. Then one run's test times (setup, call and
teardown, from its JUnit XML) summed per test file, and the time one process takes to
collect the suite (every xdist worker pays it). ``--tier slow`` does the same for the slow
tier (``pytest -m slow``, what CI runs after the default tier).
The runs are framed by ``timing.IMPORT_FLOOR`` (a fresh ``python -c "import numpy, torch"``,
the floor bench_gate.py reports too) timed before and after: the machine's speed drifts
with the hour, and a wall time is read beside the speed it was measured at.
``--record`` runs both tiers (``-m ""``) once, alone, with the plugin ``record_seconds.py``,
and writes what it measured, in the seconds an idle machine would take (each wall time
divided by the slowdown the load caused at that moment, as the plugin measures it): per test
function and per shared fixture to ``benchmarks/test_seconds.json``, from which
``conftest.py`` puts the test functions that cost more than ``conftest.SLOW_SECONDS`` run
alone into the slow tier; per test file to ``benchmarks/suite_durations.json``, where the
suite's scheduler (``conftest.py``) reads them to start the longest files first. Both files
are written sorted, rounded to milliseconds. ``--record PATH ...`` runs and replaces only the
test files beneath those paths (the tests one changed), keeping the rest of the record. Then
it reports what each tier costs by those figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from timing import IMPORT_FLOOR, median_seconds

ROOT = Path(__file__).resolve().parents[1]
FILE_SECONDS = ROOT / "benchmarks" / "suite_durations.json"
TEST_SECONDS = ROOT / "benchmarks" / "test_seconds.json"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def _busy_seconds() -> float:
    """The machine's CPU seconds spent busy since boot (all cores; NaN off Linux)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(field) for field in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _import_seconds() -> float:
    """Median wall seconds of :data:`timing.IMPORT_FLOOR` (of 3 runs), in the suite's environment."""
    return median_seconds(lambda: subprocess.run(IMPORT_FLOOR, check=True, env=_environment()), repeats=3)


def _environment() -> dict[str, str]:
    """This environment as tox hands it to the README's test command, in the respects that
    change the timing: CI set, and no PYTHONDONTWRITEBYTECODE (tox does not pass it on;
    without compiled files every process compiles and pytest rewrites every test module)."""
    return {**{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}, "CI": "true"}


def _run(arguments: list[str], environment: dict[str, str] | None = None,
         failures_ok: bool = False) -> tuple[float, float, float, str]:
    """``(wall seconds, machine busy seconds, CPU seconds of the processes waited for, output)``.
    With ``failures_ok``, failing tests (exit 1) are listed on stderr and the run's times kept:
    a record's seconds hold whatever the tests concluded."""
    before, busy = resource.getrusage(resource.RUSAGE_CHILDREN), _busy_seconds()
    start = time.perf_counter()
    done = subprocess.run([*PYTEST, *arguments], cwd=ROOT, capture_output=True, text=True,
                          env={**_environment(), **(environment or {})})
    wall = time.perf_counter() - start
    busy = _busy_seconds() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if failures_ok and done.returncode == 1:
        failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
        print("  failing tests, recorded all the same:", *failed, sep="\n    ", file=sys.stderr)
    elif done.returncode != 0:
        sys.exit(f"pytest {' '.join(arguments)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, busy, cpu, done.stdout


def _seconds_per_test(arguments=()) -> collections.Counter:
    """One run's seconds per test function (``path::name``, its parametrized cases together):
    the JUnit XML's test times (setup + call + teardown)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        _run([*arguments, f"--junitxml={report}"])
        return seconds_per_test(report)


def seconds_per_test(report: Path) -> collections.Counter:
    """The seconds per test function a JUnit XML file records."""
    per_test: collections.Counter = collections.Counter()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        function = case.get("name", "").split("[")[0]
        per_test[f"{_test_file(case.get('classname', ''))}::{function}"] += float(case.get("time", 0))
    return per_test


def per_file(per_test: collections.Counter) -> collections.Counter:
    files: collections.Counter = collections.Counter()
    for name, seconds in per_test.items():
        files[name.split("::")[0]] += seconds
    return files


def _with_plugin(**environment: str) -> dict[str, str]:
    """The environment that loads ``record_seconds.py`` (``-p record_seconds``) from here."""
    path = os.pathsep.join(filter(None, (str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH"))))
    return {"PYTHONPATH": path, **environment}


def _recorded_run(paths: list[str]) -> tuple[dict[str, float], dict[str, float], list[float], str]:
    """One run of both tiers of ``paths`` (all of the suite if none) with ``record_seconds.py``:
    ``(tests, fixtures, slowdowns, summary)``, seconds per name as an idle machine would take
    them; a fixture set up by several workers counts once (its largest)."""
    tests: dict[str, float] = collections.Counter()
    fixtures: dict[str, float] = {}
    slowdowns: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        _, _, _, output = _run(["-m", "", "-rfE", "-p", "record_seconds", *paths],
                               _with_plugin(POSENC_SPEC_RECORD=folder), failures_ok=True)
        for worker in sorted(Path(folder).glob("*.json")):
            figures = json.loads(worker.read_text())
            tests.update(figures["tests"])
            for name, seconds in figures["fixtures"].items():
                fixtures[name] = max(fixtures.get(name, 0.0), seconds)
            slowdowns += figures["slowdowns"]
    return dict(tests), fixtures, slowdowns, output.strip().splitlines()[-1]


def _within(name: str, paths: list[str]) -> bool:
    where = name.split("::")[0]
    return any(where == path or where.startswith(path.rstrip("/") + "/") for path in paths)


def record(tests: dict[str, float], fixtures: dict[str, float], paths: list[str]) -> None:
    """Write the seconds per test function and shared fixture (conftest.py's tiers) and per test
    file (the scheduler's order: its functions and the fixtures it defines). With ``paths``,
    only what lies beneath them is replaced; the rest of the record is kept."""
    if paths:
        kept = json.loads(TEST_SECONDS.read_text())
        tests = {**{name: value for name, value in kept["tests"].items() if not _within(name, paths)}, **tests}
        fixtures = {**{name: value for name, value in kept["fixtures"].items() if not _within(name, paths)},
                    **fixtures}
    per_test, per_fixture = ({name: round(seconds, 3) for name, seconds in sorted(figures.items())}
                             for figures in (tests, fixtures))
    files: collections.Counter = collections.Counter()
    for name, value in (*per_test.items(), *per_fixture.items()):
        if name.split("::")[0].endswith(".py") and (not paths or _within(name, paths)):
            files[name.split("::")[0]] += value
    if paths:
        files.update({name: value for name, value in json.loads(FILE_SECONDS.read_text()).items()
                      if not _within(name, paths)})
    TEST_SECONDS.write_text(json.dumps({"tests": per_test, "fixtures": per_fixture}, indent=1) + "\n")
    FILE_SECONDS.write_text(json.dumps({name: round(value, 3) for name, value in sorted(files.items())},
                                       indent=1) + "\n")
    print(f"  recorded {len(per_test)} test functions and {len(per_fixture)} shared fixtures in "
          f"{TEST_SECONDS.relative_to(ROOT)}, {len(files)} files in {FILE_SECONDS.relative_to(ROOT)}")


def tier_costs(listed: int) -> None:
    """What each tier costs by the recorded figures (as conftest.py reads them now): idle seconds
    of its test functions and of the shared fixtures they use (each once), and the costliest
    default test functions, each run alone."""
    sys.path.insert(0, str(ROOT))
    import conftest

    recorded = conftest.recorded_test_seconds()
    with tempfile.TemporaryDirectory() as folder:
        plan = Path(folder) / "plan.json"
        _run(["-m", "", "-n", "0", "--collect-only", "-p", "record_seconds"], _with_plugin(POSENC_SPEC_PLAN=str(plan)))
        functions = json.loads(plan.read_text())
    for tier, slow in (("default", False), ("slow", True)):
        chosen = {name: fixtures for name, (fixtures, is_slow) in functions.items() if is_slow == slow}
        used = set().union(*chosen.values()) if chosen else set()
        own = sum(recorded.tests.get(name, 0.0) for name in chosen)
        shared = sum(recorded.fixtures.get(fixture, 0.0) for fixture in used)
        unrecorded = sum(name not in recorded.tests for name in chosen)
        print(f"  {tier} tier by the record: {len(chosen)} test functions ({unrecorded} not recorded), "
              f"{own + shared:.0f} idle s ({shared:.0f} of it {len(used)} shared fixtures)")
    by_file: dict[str, dict[str, frozenset[str]]] = {}
    for name, (fixtures, slow) in functions.items():
        if not slow:
            by_file.setdefault(name.split("::")[0], {})[name] = frozenset(fixtures)
    alone = {name: cost for default in by_file.values()
             for name, cost in conftest.alone_seconds(default, recorded).items()}
    print(f"  the {listed} default test functions costing most alone (idle s, shared fixtures included):")
    for name, cost in sorted(alone.items(), key=lambda pair: -pair[1])[:listed]:
        print(f"    {cost:6.2f}  {name}")


def _test_file(classname: str) -> str:
    """``spec_tests/test_x.py`` for the JUnit classname ``spec_tests.test_x`` (or ``spec_tests.test_x.Class``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (ROOT / path).is_file():
            return path
    return classname


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=15, help="test files listed by their summed durations")
    parser.add_argument("--tier", choices=("default", "slow"), default="default",
                        help="the tier timed: the default (pytest) or the slow one (pytest -m slow)")
    parser.add_argument("--record", nargs="*", metavar="PATH", default=None,
                        help=f"only run both tiers once (of the test files or folders PATH alone, if given), "
                             f"recording the seconds per test function, shared fixture and file into "
                             f"{TEST_SECONDS.name} and {FILE_SECONDS.name}")
    args = parser.parse_args(argv)
    if args.record is not None:
        start = time.perf_counter()
        tests, fixtures, slowdowns, summary = _recorded_run(args.record)
        print(f"both tiers ({summary}) in {time.perf_counter() - start:.0f} s wall; the load slowed a "
              f"process {statistics.median(slowdowns):.2f}x (median of {len(slowdowns)} probes, "
              f"{min(slowdowns):.2f}-{max(slowdowns):.2f})")
        record(tests, fixtures, args.record)
        tier_costs(args.files)
        return 0
    tier = ["-m", "slow"] if args.tier == "slow" else []
    imports_before = _import_seconds()
    runs = [_run(tier) for _ in range(args.repeats)]
    imports_after = _import_seconds()
    summary = runs[-1][3].strip().splitlines()[-1]
    print(f"{args.tier} tier ({summary}), {os.cpu_count()} cores, median of {args.repeats}:")
    print(f"  wall {statistics.median(run[0] for run in runs):6.1f} s   (runs: "
          f"{', '.join(f'{run[0]:.1f}' for run in runs)})")
    print(f"  busy {statistics.median(run[1] for run in runs):6.1f} s   (the machine's CPU time over the run)")
    print(f"  CPU  {statistics.median(run[2] for run in runs):6.1f} s   (user + system of the processes waited for)")
    print(f"  import numpy, torch: {imports_before:.2f} s before the runs, {imports_after:.2f} s after "
          "(the machine's speed at the time)")
    collect_wall, _, _, _ = _run([*tier, "-n", "0", "--collect-only"])
    print(f"  one process collecting the suite: {collect_wall:.1f} s wall")
    files = per_file(_seconds_per_test(tier))
    print(f"  seconds per test file in its worker (setup + call + teardown), the {args.files} largest:")
    for name, seconds in files.most_common(args.files):
        print(f"    {seconds:6.1f}  {name}")
    tier_costs(args.files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
