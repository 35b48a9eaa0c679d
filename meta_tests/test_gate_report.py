"""The gate's report writer: the JSON shapes, strict JSON for infinite errors, atomic files,
and the printed summary."""

from __future__ import annotations

import json

import pytest

from posenc_spec.checks import CheckResult
from posenc_spec.conventions import PRESETS
from posenc_spec.gate import GateReport
from posenc_spec.gate.report import MAX_FAILURE_LINES, reports_json, summary_lines, write_json


def _report(checks, **fields):
    conforms = all(check.passed for check in checks)
    return GateReport("pkg.mod:fn", PRESETS["vaswani"], conforms, checks, **fields)


def test_entry_shape_and_non_finite_numbers():
    """An entry has exactly the issue's keys; an infinite error (from a NaN) is written as null."""
    report = _report([CheckResult("formula[50x8]", False, "NaN", float("inf"), 1e-7),
                      CheckResult("determinism", True, "same", 0.0, 0.0)], skip_odd=True)
    entry = report.as_dict()
    assert set(entry) == {"target", "convention", "conforms", "checks"}
    assert entry["convention"] == {**PRESETS["vaswani"].as_dict(), "odd": "skip"}
    assert entry["checks"][0] == {"name": "formula[50x8]", "passed": False, "message": "NaN",
                                  "max_error": None, "tolerance": 1e-7}


def test_single_and_many_target_shapes():
    """A TARGET run writes its entry; a config run writes {conforms, targets}."""
    good = _report([CheckResult("import", True, "ok")])
    bad = _report([CheckResult("import", False, "missing")])
    assert reports_json([good], single=True) == good.as_dict()
    assert reports_json([good, bad], single=False) == {"conforms": False, "targets": [good.as_dict(), bad.as_dict()]}


def test_write_json_is_strict_and_atomic(tmp_path):
    """The file holds strict JSON (NaN written as null) and no temporary file is left."""
    path = tmp_path / "report.json"
    write_json({"ratio": float("nan"), "items": [float("-inf"), 1.5]}, path)
    assert json.loads(path.read_text()) == {"ratio": None, "items": [None, 1.5]}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_write_json_failure_leaves_no_file(tmp_path):
    """Data that cannot be serialised raises and leaves neither the file nor a temporary."""
    with pytest.raises(TypeError):
        write_json({"value": object()}, tmp_path / "report.json")
    assert list(tmp_path.iterdir()) == []


def test_write_json_dash_is_stdout(capsys):
    """``-`` writes to standard output."""
    write_json({"conforms": True}, "-")
    assert json.loads(capsys.readouterr().out) == {"conforms": True}


def test_summary_lists_failures_counts_the_rest_and_marks_xfails():
    """Failures are listed up to a limit, checks that could not run are one count, known
    deviations are marked xfail, and the last line gives the verdict."""
    checks = [CheckResult(f"formula[{n}x8]", False, f"bad {n}") for n in range(MAX_FAILURE_LINES + 3)]
    checks += [CheckResult("determinism", False, "not run: the call failed"),
               CheckResult("odd[7]", False, "[xfail] returned a table")]
    report = _report(checks, excused=frozenset({"odd[7]"}), warnings=["xfails entry 'x' matches no check"])
    lines = summary_lines(report)
    assert lines[0] == "pkg.mod:fn  [table API, vaswani, odd=error]"
    assert sum(line.startswith("  FAIL  formula") for line in lines) == MAX_FAILURE_LINES
    assert "  ... 4 more failed checks (-v lists every check, --json FILE records them)" in lines
    assert "  (1 more checks could not run because of the failures above)" in lines
    assert "  warning: xfails entry 'x' matches no check" in lines
    assert lines[-1] == f"  {len(checks)} checks, {MAX_FAILURE_LINES + 4} failed, 1 known deviations: does not conform"
    verbose = summary_lines(report, verbose=True)
    assert "  xfail odd[7]: [xfail] returned a table" in verbose
