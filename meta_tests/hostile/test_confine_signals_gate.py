"""Targets that signal the processes around them (``meta_tests/hostile/signals.py``), run by
``posenc-spec check`` and through the Python API as an ordinary user, with the target's
signals kept by the seccomp filter (``POSENC_SPEC_SIGNAL_FILTER=on``: what a kernel whose
Landlock does not scope signals gets, GitHub's Linux 6.8 runners among them), and one that
sets the gate's CPU-time limit (the socket filter refuses it on every kernel). Every attack
fails its own target only; the targets that signal themselves conform.

The ordinary user is one no other test runs as (``SIGNALLED_UID``), emulated from root: were
the filter to let an attack through, ``kill(-1, SIGSTOP)`` would stop this test's own gate
and nothing else, and the run's time limit would end it.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from meta_tests.another_user import OTHER_UID, run_as_other_user
from meta_tests.hostile import MAX_POSITIONS
from meta_tests.hostile.attacks_as_user import WORKTREE, assert_refused_then_conforms, check_attacks
from meta_tests.hostile.test_api_caller import SIGNALLING_CALLER
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.gate.child import confine_signals
from posenc_spec.gate.sandbox import SIGNAL_FILTER_SWITCH

SIGNALLED_UID = OTHER_UID + 1
ATTACKS = ("stops_its_parent", "kills_its_parent", "stops_the_gate", "interrupts_the_gate", "kills_the_gates_group",
           "stops_every_process", "sends_sigio_to_the_gate", "limits_the_gates_cpu")
SELF_SIGNALLING = ("signals_itself",)
FILTERED = {**os.environ, SIGNAL_FILTER_SWITCH: "on", "POSENC_SPEC_CONFINEMENT": "on"}
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user of its own from root"),
    pytest.mark.skipif(not confine_signals.available(), reason="needs a seccomp filter: Linux on x86_64 or aarch64")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One ``check`` of every attacker, each followed by a correct target, then the targets
    that signal themselves, as ``SIGNALLED_UID``: the finished command and its targets' entries."""
    return check_attacks(tmp_path_factory.mktemp("signals"), "signals", ATTACKS, SELF_SIGNALLING, SIGNALLED_UID,
                         FILTERED)


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_on_the_processes_around_the_target_fails_its_own_call(run, attack):
    """The signal is refused inside the target: its first call fails with the refusal, and
    the correct target run after it conforms (no helper was stopped or killed)."""
    assert_refused_then_conforms(run[1], attack)


def test_the_run_ends_with_its_own_verdict_and_the_self_signalling_target_conforms(run):
    """The gate was neither stopped nor killed: the run ends with exit status 1 (the
    attackers fail), no warning that signals were not confined, and the target that signals
    itself by id, by raise_signal, its own group and its own thread conforms."""
    done, entries = run
    assert done.returncode == 1, done.stderr[-2000:]
    assert "signals were not confined" not in done.stdout + done.stderr
    assert [entry["status"] for name, entry in entries if name in SELF_SIGNALLING] == ["conforms"], entries[-1]


def test_a_callable_cannot_interrupt_its_caller_through_the_filter(tmp_path):
    """Through the Python API, as an ordinary user with the signal filter: the callable's
    SIGINT to its caller is refused, its call fails, and ``check`` returns a Report."""
    script = tmp_path / "caller.py"
    script.write_text(SIGNALLING_CALLER)
    script.chmod(0o644)
    tmp_path.chmod(0o777)
    done = run_as_other_user([sys.executable, str(script), str(MAX_POSITIONS)], uid=SIGNALLED_UID, cwd=WORKTREE,
                             env=FILTERED, capture_output=True, text=True, timeout=RUN_LIMIT)
    lines = done.stdout.strip().splitlines()
    assert lines and json.loads(lines[-1]) == {"returned": "Report", "conforms": False}, (done.stdout[-500:],
                                                                                          done.stderr[-2000:])
