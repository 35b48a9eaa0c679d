"""A target's timeout counts its own time (:class:`~posenc_spec.gate.sandbox.OwnTime`):
wall-clock time less the time its process, or the gate's thread reading it, waited for a
CPU. A correct call on a crowded CPU is not a hang; a hang on the same CPU still is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from posenc_spec.gate import sandbox
from posenc_spec.gate.calls import CallRequest
from posenc_spec.gate.child import limits
from posenc_spec.gate.runner import Slot
from posenc_spec.gate.sandbox import Limits, OwnTime, Template

HERE = Path(__file__).resolve()
TIMEOUT = 1.0
# The call spends 0.4 s of CPU: alone, within the 1 s timeout with room for the gate's own
# work in the child; sharing one CPU with CROWD busy processes it gets a fifth of it and
# takes about 2 s of wall-clock time, twice the timeout.
BURN_SECONDS = 0.4
CROWD = 4


def burns_cpu(n, d):
    start = time.process_time()
    while time.process_time() - start < BURN_SECONDS:
        pass
    return np.zeros((n, d))


def spins_forever(n, d):
    while True:
        pass


class _Clock:
    """A fake monotonic clock and fake waits for a CPU (process 7's and the gate thread's)."""

    def __init__(self):
        self.now, self.waits = 100.0, {7: 5.0, None: 1.0}

    def monotonic(self):
        return self.now

    def waited_for_cpu(self, pid=None):
        return self.waits[pid]


@pytest.fixture
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(sandbox, "time", types.SimpleNamespace(monotonic=fake.monotonic))
    monkeypatch.setattr(sandbox.os_limits, "waited_for_cpu", fake.waited_for_cpu)
    return fake


def test_own_time_leaves_out_the_wait_for_a_cpu(clock):
    """The limit moves on by the longer of the two waits for a CPU since it was set, and by
    nothing else: time asleep or running is charged."""
    budget = OwnTime(2.0, 7)
    clock.now = 101.5
    assert budget.remaining() == pytest.approx(0.5)
    clock.now, clock.waits[7] = 103.0, 7.5  # the process waited 2.5 s of these 3
    assert budget.remaining() == pytest.approx(1.5)
    clock.now, clock.waits[None] = 104.6, 4.5  # past 104.5; the gate's thread waited 3.5 s
    assert budget.remaining() == pytest.approx(0.9)
    clock.now = 105.5  # neither waited since: the limit has passed
    assert budget.remaining() == pytest.approx(0.0)


def test_a_process_that_is_gone_waited_for_no_cpu():
    """No statistics to read (no such process, no /proc) read as no wait."""
    assert limits.waited_for_cpu(2**31 - 1) == 0.0


def test_without_a_wait_for_a_cpu_own_time_is_wall_clock_time(clock):
    """Where neither waited for a CPU, the limit passes with the wall clock."""
    clock.waits[7] = clock.waits[None] = 0.0
    budget = OwnTime(2.0, 7)
    clock.now = 102.0
    assert budget.remaining() <= 0


@pytest.fixture
def crowded_root():
    """A root template on one CPU, shared with ``CROWD`` busy processes; every process the
    template forks runs there too."""
    if not limits.IS_LINUX or not Path(f"/proc/{os.getpid()}/schedstat").exists():
        pytest.skip("needs Linux scheduler statistics (/proc/<pid>/schedstat)")
    cpu = min(os.sched_getaffinity(0))
    root = Template.start()
    crowd = []
    try:
        root.ready()
        os.sched_setaffinity(root.popen.pid, {cpu})
        busy = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
        crowd = [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(CROWD)]
        yield root
    finally:
        for process in crowd:
            process.kill()
            process.wait()
        root.close()


def _run(root, function):
    slot = Slot(root, Limits(2**30, 16, TIMEOUT))
    try:
        return slot.run(f"{HERE}:{function}", [CallRequest("8x8", (8, 8), (8, 8))])
    finally:
        slot.close()


def test_a_correct_call_on_a_crowded_cpu_is_not_a_hang(crowded_root):
    """A call within its timeout alone returns, although waiting for the CPU makes it take
    longer than the timeout."""
    run = _run(crowded_root, "burns_cpu")
    assert run.imported, run.import_message
    assert [outcome.status for outcome in run.outcomes] == ["ok"], [outcome.message for outcome in run.outcomes]


def test_a_spinning_hang_on_a_crowded_cpu_still_times_out(crowded_root):
    """A call that never returns is killed at the timeout of its own time, CPU or no CPU."""
    run = _run(crowded_root, "spins_forever")
    assert run.imported, run.import_message
    assert [outcome.status for outcome in run.outcomes] == ["hung"]
    assert f"did not return within the {TIMEOUT:g} s timeout" in run.outcomes[0].message
