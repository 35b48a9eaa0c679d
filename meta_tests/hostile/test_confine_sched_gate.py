"""Targets that change the scheduling of the processes around them
(``meta_tests/hostile/scheduling.py``), run by ``posenc-spec check`` as an ordinary user,
with the target's signals scoped by Landlock (where the kernel does) and kept by the seccomp
filter (``POSENC_SPEC_SIGNAL_FILTER=on``): on every kernel the supervisor
(``posenc_spec/gate/child/supervisor.py``) judges them. Every attack fails its own call
only, the correct target after it conforms, and a target that renices, pins, signals and
times out its own processes and threads conforms.

The ordinary user is one no other test runs as (``SCHEDULED_UID``), emulated from root.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from meta_tests.another_user import OTHER_UID
from meta_tests.hostile.attacks_as_user import assert_refused_then_conforms, check_attacks
from posenc_spec.gate.child import supervisor
from posenc_spec.gate.sandbox import SIGNAL_FILTER_SWITCH

SCHEDULED_UID = OTHER_UID + 2
ATTACKS = ("renices_the_gate", "renices_its_templates", "renices_the_gates_group", "renices_its_user", "pins_the_gate",
           "idles_the_gate", "idles_the_gates_disk")
OWN = ("schedules_its_own",)
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user of its own from root"),
    pytest.mark.skipif(not supervisor.available(),
                       reason="needs seccomp user notification: Linux 5.5 on x86_64 or aarch64")]


@pytest.fixture(scope="module", params=["off", "on"], ids=["landlock-signals", "signal-filter"])
def run(request, tmp_path_factory):
    """One ``check`` of every attacker, each followed by a correct target, then the target
    that schedules its own processes, as ``SCHEDULED_UID``: the finished command and its
    targets' entries."""
    env = {**os.environ, SIGNAL_FILTER_SWITCH: request.param, "POSENC_SPEC_CONFINEMENT": "on"}
    return check_attacks(tmp_path_factory.mktemp("scheduling"), "scheduling", ATTACKS, OWN, SCHEDULED_UID, env)


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_change_to_the_scheduling_around_the_target_fails_its_own_call(run, attack):
    """The change is refused inside the target: its first call fails with the refusal, and
    the correct target run after it conforms."""
    assert_refused_then_conforms(run[1], attack)


def test_the_target_that_schedules_its_own_processes_conforms_and_nothing_is_left_open(run):
    """The run ends with exit status 1 (the attackers fail) and no warning that scheduling
    or signals were not confined; the target that renices, pins, signals and times out its
    own processes and threads conforms."""
    done, entries = run
    assert done.returncode == 1, done.stderr[-2000:]
    assert "scheduler of this user's processes" not in done.stdout + done.stderr
    assert "signals were not confined" not in done.stdout + done.stderr
    assert [entry["status"] for name, entry in entries if name in OWN] == ["conforms"], entries[-1]["checks"][:3]


def test_every_attack_is_a_function_of_the_scheduling_module():
    """Each attacker and the target that schedules its own processes is a function defined
    in ``scheduling.py`` (the run above declares each by name)."""
    source = (Path(__file__).parent / "scheduling.py").read_text()
    defined = {node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    assert set(ATTACKS + OWN) <= defined, sorted(set(ATTACKS + OWN) - defined)
