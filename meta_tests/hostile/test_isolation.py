"""What one target does must not reach another: helpers of the same name, modules that
pollute their process when imported, module state, and the process tree and reply
channel (``meta_tests/hostile/isolation``, ``twin_a``/``twin_b``, ``channel.py``).

One run of the gate judges the targets in the order declared (polluter, then a victim
of another module that fails if any pollution reaches it); an import that would kill its
module's shared template, and two lanes at once, run apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meta_tests.hostile import MAX_POSITIONS, assert_complete_entry, exit_status, report_json, target
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options

CONFORMS, FAILS = "conforms", "does-not-conform"
WORKTREE = Path(__file__).resolve().parents[2]
TIMEOUT = 5
HANG_TIMEOUT = 1
# The grandchild writes its file ESCAPE_DELAY (1 s, channel.py) after it starts; waiting
# this long past that moment shows it never will.
ESCAPE_MARGIN = 0.5

# (name, target, declared keys, verdict, words the report says about the import, or None)
POLLUTION = [
    ("numpy_sin", target("isolation/numpy_sin", "table"), {}, FAILS, None),
    ("victim_a", target("isolation/victim_a", "table"), {}, CONFORMS, None),
    ("torch_sin", target("isolation/torch_sin", "table"), {}, FAILS, None),
    ("victim_b", target("isolation/victim_b", "table"), {}, CONFORMS, None),
    ("warnings_error", target("isolation/warnings_error", "table"), {}, FAILS, "warnings filters"),
    ("victim_c", target("isolation/victim_c", "table"), {}, CONFORMS, None),
    ("alarm_pending", target("isolation/alarm_pending", "table"), {}, None, "interval timer (ITIMER_REAL)"),
    ("victim_d", target("isolation/victim_d", "table"), {}, CONFORMS, None),
    ("default_dtype", target("isolation/default_dtype", "table"), {}, FAILS,
     "importing the target changed torch default dtype float32 -> float64"),
    ("victim_e", target("isolation/victim_e", "table"), {}, CONFORMS, None),
    ("inference_mode_at_import", target("isolation/inference_mode_at_import", "table"), {}, FAILS,
     "importing the target changed torch inference mode False -> True"),
    ("victim_f", target("isolation/victim_f", "table"), {}, CONFORMS, None),
    ("twin_a", target("twin_a/twin", "table"), {}, CONFORMS, None),
    ("twin_b", target("twin_b/twin", "table"), {"convention": "concat"}, CONFORMS, None),
]
# The channel targets first: the grandchild's moment to escape has passed when the run ends.
SEPARATE = [
    ("double_fork", target("channel", "double_fork_grandchild"), {}, CONFORMS, None),
    ("fork_both_return", target("channel", "fork_both_return"), {}, CONFORMS, None),
    ("half_frame", target("channel", "half_frame_then_sleep"), {"timeout": HANG_TIMEOUT}, FAILS, None),
    ("flips_the_sign", target("isolation/shared_state", "flips_the_sign"), {}, CONFORMS, None),
    ("uses_the_sign", target("isolation/shared_state", "uses_the_sign"), {}, CONFORMS, None),
    *POLLUTION,
]


def _declaration(target_name, keys):
    return declare({"target": target_name, "max_positions": MAX_POSITIONS, "timeout": TIMEOUT, **keys})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Declarations and reports of SEPARATE (one lane), and the folder where the
    double-forked grandchild records itself."""
    escape_dir = tmp_path_factory.mktemp("escape")
    escape_dir.chmod(0o777)  # the grandchild records itself here, also as a user of its own (under root)
    declarations = {name: _declaration(target_name, keys) for name, target_name, keys, _, _ in SEPARATE}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POSENC_HOSTILE_ESCAPE_DIR", str(escape_dir))
        reports = check_many(declarations.values(), run_options(jobs=1))
    return {"declarations": declarations, "reports": dict(zip(declarations, reports, strict=True)),
            "escape_dir": escape_dir}


@pytest.mark.parametrize("name, verdict, import_warning",
                         [pytest.param(name, verdict, words, id=name) for name, _, _, verdict, words in SEPARATE])
def test_verdict(run, name, verdict, import_warning):
    """Each target gets its own verdict (None: depends on timing, only its JSON is
    checked), its exit status and a complete JSON entry; a polluting import is named, in a
    warning or, for state that changes what every importer computes, in ``global-state``."""
    report = run["reports"][name]
    data = report_json([report])
    assert_complete_entry(data["targets"][0], run["declarations"][name])
    if verdict is not None:
        assert (report.status, exit_status(data)) == (verdict, 0 if verdict == CONFORMS else 1), \
            f"{name}: {[(check.name, check.message) for check in report.failures()[:3]]}"
    if import_warning is not None:
        said = [*report.warnings, *(check.message for check in report.failures())]
        assert any(import_warning in line for line in said), said


def test_twins_each_import_their_own_helper(run):
    """The helpers differ: what conforms as vaswani in one twin is concat in the other, so
    neither twin could conform with the other's helper."""
    reports = run["reports"]
    assert reports["twin_a"].declaration.spec.convention.layout != reports["twin_b"].declaration.spec.convention.layout
    assert reports["twin_a"].conforms and reports["twin_b"].conforms


def test_a_hang_costs_one_timeout(run):
    """A half-written reply is a timeout on that call, not a hang: the gate kills the
    child after one timeout and reports every other call as not run (one timeout, not one
    per call: every later call says it was not run)."""
    report = run["reports"]["half_frame"]
    first = report.result("call[50x8]")
    assert first.status == "failed" and f"did not return within the {HANG_TIMEOUT:g} s timeout" in first.message
    later = [check for check in report.checks if check.name.startswith("call[") and check.name != "call[50x8]"]
    assert later and all("not run: the target hung" in check.message for check in later), later[:2]


def test_double_forked_grandchild_is_gone(run):
    """The grandchild in its own session was killed with the target's turn: it is dead when
    the gate returns, and its file never appears."""
    record = run["escape_dir"] / "grandchild.pid"
    assert record.exists(), "the grandchild never started"
    pid, start_ticks, writes_at = record.read_text().split()
    assert not _same_process_alive(int(pid), int(start_ticks)), f"grandchild {pid} survives the gate"
    escaped = run["escape_dir"] / "grandchild.escaped"
    while time.time() < float(writes_at) + ESCAPE_MARGIN and not escaped.exists():
        time.sleep(0.05)
    assert not escaped.exists(), escaped.read_text()


def _same_process_alive(pid: int, start_ticks: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    except OSError:
        return False
    return fields[0] not in (b"Z", b"X") and int(fields[19]) == start_ticks


def test_import_that_kills_the_module_template():
    """Two targets of a module whose import leaves ``alarm(1)`` pending (the gate imports
    it once for both, and the first outlives the alarm): each gets a verdict that names
    the pending timer, and the next target still conforms."""
    names = {"slow": target("isolation/alarm_shared", "slow"), "second": target("isolation/alarm_shared", "second"),
             "victim": target("isolation/victim_a", "table")}
    reports = dict(zip(names, check_many([_declaration(name, {}) for name in names.values()], run_options(jobs=1)),
                       strict=True))
    for name in ("slow", "second"):
        assert reports[name].status in (CONFORMS, FAILS), (name, reports[name].status)
        assert any("interval timer (ITIMER_REAL)" in warning for warning in reports[name].warnings), name
    assert reports["victim"].status == CONFORMS, reports["victim"].failures()[:3]


def test_parallel_lanes_keep_targets_apart(tmp_path):
    """The polluters, victims and twins under ``posenc-spec check -j 2``: the same verdicts
    as with one lane, exit status 1, every target in the JSON report."""
    lines = [f"max_positions = {MAX_POSITIONS}", f"timeout = {TIMEOUT}"]
    for _, target_name, keys, _, _ in POLLUTION:
        lines += ["[[targets]]", f"target = {json.dumps(target_name)}"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    config = tmp_path / "parallel.toml"
    config.write_text("\n".join(lines) + "\n")
    report = tmp_path / "report.json"
    completed = subprocess.run([sys.executable, "-m", "posenc_spec", "check", "--config", str(config), "-j", "2",
                                "--json", str(report)], cwd=WORKTREE, capture_output=True, text=True,
                               timeout=RUN_LIMIT, env={**os.environ, "PYTHONPATH": str(WORKTREE)})
    assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
    assert completed.returncode == 1, completed.stderr[-2000:]
    entries = json.loads(report.read_text())["targets"]
    verdicts = {name: verdict for name, _, _, verdict, _ in POLLUTION if verdict is not None}
    got = {name: entry["status"] for (name, *_), entry in zip(POLLUTION, entries, strict=True) if name in verdicts}
    assert got == verdicts
