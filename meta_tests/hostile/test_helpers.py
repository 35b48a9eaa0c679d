"""Targets that kill or stop the gate's helper processes (``meta_tests/hostile/helpers.py``):
each fails its own ``call`` with a one-line reason, the gate replaces the helpers, and the
targets after it keep their verdicts; ``identify`` and ``snapshot`` end with a verdict too,
never an internal error. Under root each target runs as a user of its own and cannot
signal the helpers at all: its call fails with the refusal.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from meta_tests.another_user import run_as_other_user
from meta_tests.hostile import (
    MAX_POSITIONS,
    SIGNALS_CONFINED_AS_USER,
    assert_complete_entry,
    exit_status,
    report_json,
    target,
)
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.cli import main
from posenc_spec.gate.child.confinement import SCOPE_ABI, landlock_abi
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options
from posenc_spec.gate.sandbox import confinement_wanted, signals_filtered

TIMEOUT = 5
WORKTREE = Path(__file__).resolve().parents[2]
VICTIMS = [("victim_a", "isolation/victim_a"), ("victim_b", "isolation/victim_b"),
           ("victim_c", "isolation/victim_c"), ("correct", "hostile_tables")]
HELPER = "the gate's helper process above the target died or was stopped"
# What each failed call says. Where the kernel scopes signals (Landlock ABI 6), or the seccomp
# filter keeps them in its stead (an ordinary user on an older kernel), a confined target
# signals nothing outside its own processes: every attack is refused (EPERM). Otherwise the
# module template the targets of one module share runs as their user, so they reach it as
# any user does; under root the slot and root templates refuse their signals (EPERM),
# otherwise the signal reaches them and the gate says so.
SCOPED = confinement_wanted() and (landlock_abi() >= SCOPE_ABI or signals_filtered())
REFUSED = "Operation not permitted" if os.geteuid() == 0 or SCOPED else HELPER
REASON = {"kills_its_parent": REFUSED if SCOPED else HELPER, "stops_its_parent": REFUSED if SCOPED else HELPER,
          "kills_every_template": REFUSED, "stops_the_root_template": REFUSED}


def _declare(module: str, function: str):
    return declare({"target": target(module, function), "max_positions": MAX_POSITIONS, "timeout": TIMEOUT})


@pytest.fixture(scope="module")
def run():
    declarations = {name: _declare("helpers", name) for name in REASON}
    declarations |= {name: _declare(module, "vaswani_table" if module == "hostile_tables" else "table")
                     for name, module in VICTIMS}
    reports = check_many(declarations.values(), run_options(jobs=1))
    return declarations, dict(zip(declarations, reports, strict=True))


@pytest.mark.parametrize("name", REASON)
def test_a_target_that_attacks_its_helpers_fails_its_call(run, name):
    """The target does not conform, with a complete report and a call check that says a
    helper died or was stopped during its turn."""
    declarations, reports = run
    report = reports[name]
    data = report_json([report])
    assert_complete_entry(data["targets"][0], declarations[name])
    assert (report.status, exit_status(data)) == ("does-not-conform", 1), report.failures()[:3]
    calls = [check for check in report.failures() if check.name.startswith("call[")]
    assert calls and REASON[name] in calls[0].message, report.failures()[:3]


@pytest.mark.parametrize("name", [name for name, _ in VICTIMS])
def test_the_targets_after_them_keep_their_verdicts(run, name):
    """Every correct target of the run conforms: the helpers were replaced."""
    _, reports = run
    assert reports[name].conforms, reports[name].failures()[:3]


@pytest.mark.parametrize("command", ["identify", "snapshot"])
def test_other_commands_give_a_verdict_not_an_internal_error(command, tmp_path, capsys):
    """identify and snapshot on a target that kills its parent end with their own exit
    status and no internal error."""
    extra = ["--out", str(tmp_path / "s.npz")] if command == "snapshot" else []
    status = main([command, target("helpers", "kills_its_parent"), "--max-positions", str(MAX_POSITIONS),
                   "--timeout", str(TIMEOUT), *extra])
    err = capsys.readouterr().err
    assert status in (0, 1, 2) and "internal error" not in err, (status, err)


@pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user from root; as an ordinary user the "
                                              "tests above run that way already")
def test_as_an_ordinary_user_every_attack_reaches_its_helper_and_fails_only_its_target(tmp_path):
    """Run as an ordinary user, each attack reaches its helper (the same user may signal it)
    unless the confinement refuses it: the target fails its call saying a helper died or was
    stopped, or that it was refused, and the targets after it conform."""
    tmp_path.chmod(0o777)
    names = {name: target("helpers", name) for name in REASON}
    names |= {name: target(module, "vaswani_table" if module == "hostile_tables" else "table")
              for name, module in VICTIMS}
    config = tmp_path / "gate.toml"
    config.write_text(f"max_positions = {MAX_POSITIONS}\ntimeout = {TIMEOUT}\n"
                      + "".join(f"[[targets]]\ntarget = {json.dumps(name)}\n" for name in names.values()))
    config.chmod(0o644)
    done = run_as_other_user([sys.executable, "-m", "posenc_spec", "check", "--config", str(config), "-j", "1",
                              "--json", "-"], cwd=WORKTREE, capture_output=True, text=True, timeout=RUN_LIMIT)
    entries = dict(zip(names, json.loads(done.stdout)["targets"], strict=True))
    for name in REASON:
        failed = [check for check in entries[name]["checks"] if check["status"] == "failed"]
        reason = "Operation not permitted" if SIGNALS_CONFINED_AS_USER else HELPER
        assert failed and failed[0]["id"].startswith("call[") and reason in failed[0]["reason"], (name, failed[:2])
    assert [entries[name]["status"] for name, _ in VICTIMS] == ["conforms"] * len(VICTIMS), done.stderr[-2000:]
