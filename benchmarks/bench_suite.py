"""The default test suite's cost: wall time, CPU time, and where it goes.

    python benchmarks/bench_suite.py [--repeats 3] [--files 15] [--record]

Runs the README's test command (``pytest`` with the repository's own options: pytest-xdist
``-n auto``, in the environment tox gives it, :func:`_environment`) ``--repeats`` times and
reports the median wall time and two CPU times: the machine's busy time over the run (Linux
``/proc/stat``; everything the run started, the gate's forked children too, and anything
else the machine ran meanwhile) and the rusage of the processes the run waited for (the
gate's template reaps its own children without passing their times up, so this one leaves
them out). On a machine with N cores the wall time cannot fall below busy / N, so the busy
time says what parallelism can still buy. Then one run's test times (setup, call and
teardown, from its JUnit XML) summed per test file, and the time one process takes to
collect the suite (every xdist worker pays it).
The runs are framed by ``timing.IMPORT_FLOOR`` (a fresh ``python -c "import numpy, torch"``,
the floor bench_gate.py reports too) timed before and after: the machine's speed drifts
with the hour, and a wall time is read beside the speed it was measured at.
``--record`` runs both tiers (``-m ""``) for those seconds and writes them per file to
``benchmarks/suite_durations.json``, where the suite's scheduler (``conftest.py``) reads them
to start the longest files first, and per test function to ``benchmarks/test_seconds.json``,
from which ``conftest.py`` puts the long test functions into the slow tier.
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


def _run(arguments: list[str]) -> tuple[float, float, float, str]:
    """``(wall seconds, machine busy seconds, CPU seconds of the processes waited for, output)``."""
    before, busy = resource.getrusage(resource.RUSAGE_CHILDREN), _busy_seconds()
    start = time.perf_counter()
    done = subprocess.run([*PYTEST, *arguments], cwd=ROOT, capture_output=True, text=True, env=_environment())
    wall = time.perf_counter() - start
    busy = _busy_seconds() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
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


def record(per_test: collections.Counter) -> None:
    """Write the seconds per file (the scheduler's order) and per test function (the slow tier,
    conftest.py) of a run of both tiers."""
    for path, seconds in ((FILE_SECONDS, per_file(per_test)), (TEST_SECONDS, per_test)):
        path.write_text(json.dumps({name: round(value, 3) for name, value in sorted(seconds.items())},
                                   indent=1) + "\n")
        print(f"  recorded the seconds of {len(seconds)} entries in {path.relative_to(ROOT)}")


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
    parser.add_argument("--record", action="store_true",
                        help=f"run both tiers and write the seconds per file and per test function to "
                             f"{FILE_SECONDS.name} and {TEST_SECONDS.name}")
    args = parser.parse_args(argv)
    imports_before = _import_seconds()
    runs = [_run([]) for _ in range(args.repeats)]
    imports_after = _import_seconds()
    summary = runs[-1][3].strip().splitlines()[-1]
    print(f"default suite ({summary}), {os.cpu_count()} cores, median of {args.repeats}:")
    print(f"  wall {statistics.median(run[0] for run in runs):6.1f} s   (runs: "
          f"{', '.join(f'{run[0]:.1f}' for run in runs)})")
    print(f"  busy {statistics.median(run[1] for run in runs):6.1f} s   (the machine's CPU time over the run)")
    print(f"  CPU  {statistics.median(run[2] for run in runs):6.1f} s   (user + system of the processes waited for)")
    print(f"  import numpy, torch: {imports_before:.2f} s before the runs, {imports_after:.2f} s after "
          "(the machine's speed at the time)")
    collect_wall, _, _, _ = _run(["-n", "0", "--collect-only"])
    print(f"  one process collecting the suite: {collect_wall:.1f} s wall")
    per_test = _seconds_per_test(['-m', ''] if args.record else [])
    files = per_file(per_test)
    tiers = "both tiers" if args.record else "the default tier"
    print(f"  seconds per test file in its worker (setup + call + teardown; {tiers}), the {args.files} largest:")
    for name, seconds in files.most_common(args.files):
        print(f"    {seconds:6.1f}  {name}")
    if args.record:
        record(per_test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
