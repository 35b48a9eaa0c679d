"""Targets that kill or stop the gate's helper processes (``meta_tests/hostile/helpers.py``):
each fails its own ``call`` with a one-line reason, the gate replaces the helpers, and the
targets after it keep their verdicts; ``identify`` and ``snapshot`` end with a verdict too,
never an internal error.
"""

from __future__ import annotations

import pytest

from meta_tests.hostile import MAX_POSITIONS, assert_complete_entry, exit_status, report_json, target
from posenc_spec.cli import main
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options

TIMEOUT = 5
HOSTILE = ["kills_its_parent", "stops_its_parent", "kills_every_template", "stops_the_root_template"]
VICTIMS = [("victim_a", "isolation/victim_a"), ("victim_b", "isolation/victim_b"),
           ("victim_c", "isolation/victim_c"), ("correct", "hostile_tables")]
HELPER = "the gate's helper process above the target died or was stopped"


def _declare(module: str, function: str):
    return declare({"target": target(module, function), "max_positions": MAX_POSITIONS, "timeout": TIMEOUT})


@pytest.fixture(scope="module")
def run():
    declarations = {name: _declare("helpers", name) for name in HOSTILE}
    declarations |= {name: _declare(module, "vaswani_table" if module == "hostile_tables" else "table")
                     for name, module in VICTIMS}
    reports = check_many(declarations.values(), run_options(jobs=1))
    return declarations, dict(zip(declarations, reports, strict=True))


@pytest.mark.parametrize("name", HOSTILE)
def test_a_target_that_attacks_its_helpers_fails_its_call(run, name):
    """The target does not conform, with a complete report and a call check that says a
    helper died or was stopped during its turn."""
    declarations, reports = run
    report = reports[name]
    data = report_json([report])
    assert_complete_entry(data["targets"][0], declarations[name])
    assert (report.status, exit_status(data)) == ("does-not-conform", 1), report.failures()[:3]
    calls = [check for check in report.failures() if check.name.startswith("call[")]
    assert calls and HELPER in calls[0].message, report.failures()[:3]


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
