"""The gate's report writer: the JSON shapes, strict JSON for infinite errors, atomic files,
and the printed summary."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from PIL import Image

from posenc_spec import oracle
from posenc_spec.checks import CheckResult
from posenc_spec.conventions import PRESETS
from posenc_spec.gate import GateReport
from posenc_spec.gate.engine import KeptTable
from posenc_spec.gate.report import (
    MAX_FAILURE_LINES,
    MAX_FOLDER_NAME,
    figure_folder,
    figure_folders,
    reports_json,
    summary_lines,
    write_figures,
    write_json,
)

FIGURE_NAMES = ("heatmap", "row_profiles", "similarity", "difference")


def _report(checks, target="pkg.mod:fn", **fields):
    conforms = all(check.passed for check in checks)
    return GateReport(target, PRESETS["vaswani"], conforms, checks, **fields)


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


def test_figure_folders_are_safe_readable_and_unique():
    """A module target keeps its dotted name; a file target is relative to the working directory with
    unsafe characters replaced; a repeated target is numbered; a very long path is cut and stays unique."""
    long_a = os.path.join(os.getcwd(), *["deep folder"] * 30, "a.py") + ":fn"
    long_b = os.path.join(os.getcwd(), *["deep folder"] * 30, "b.py") + ":fn"
    targets = ["pkg.mod:Class.fn", "pkg.mod:Class.fn", os.path.join(os.getcwd(), "my dir", "pe.py") + ":table",
               long_a, long_b]
    names = figure_folders([_report([], target=target) for target in targets])
    assert names[:3] == ["pkg.mod-Class.fn", "pkg.mod-Class.fn-2", "my_dir_pe.py-table"], names
    assert all(len(name) <= MAX_FOLDER_NAME for name in names) and names[3] != names[4], names
    assert all(os.sep not in name and not name.startswith(".") for name in names), names
    assert figure_folder("../elsewhere/pe.py:table") == "elsewhere_pe.py-table"


def _kept_swapped(positions=20, width=8):
    """Seed 000's formula with sine and cosine swapped, as a target's float64 table."""
    table = oracle.table(positions, width, PRESETS["vaswani"])
    return KeptTable(f"{positions}x{width}", positions, table[:, [1, 0, 3, 2, 5, 4, 7, 6]].copy(), "float64")


def test_write_figures_draws_only_what_does_not_conform(tmp_path):
    """The four PNGs for a failing report with a kept table; none for a conforming one; a reason for a
    failing one without a table. The summary names every file and the JSON holds them under "figures"."""
    failing = _report([CheckResult("formula[20x8]", False, "wrong")], target="pkg.mod:swapped",
                      kept_table=_kept_swapped())
    good = _report([CheckResult("formula[20x8]", True, "ok")], target="pkg.mod:good")
    empty = _report([CheckResult("call[20x8]", False, "raised RuntimeError")], target="pkg.mod:raises")
    figures = write_figures([failing, good, empty], tmp_path)

    assert figures[1] is None and figures[2].paths == {} and "no call returned a table" in figures[2].reason
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg.mod-swapped"], "pictures of a conforming target"
    assert tuple(figures[0].paths) == FIGURE_NAMES and figures[0].label == "20x8"
    for name, path in figures[0].paths.items():
        assert path == tmp_path / "pkg.mod-swapped" / f"{name}.png"
        with Image.open(path) as image:
            assert image.format == "PNG" and min(image.size) > 100, f"{path}: {image.format} {image.size}"

    lines = summary_lines(failing, figures=figures[0])
    assert "  figures of the 20x8 table:" in lines
    assert all(f"    {name}: {path}" in lines for name, path in figures[0].paths.items()), lines
    assert summary_lines(good, figures=figures[1]) == summary_lines(good)
    assert summary_lines(empty, figures=figures[2])[-1] == "  figures: none (no call returned a table to draw)"

    many = reports_json([failing, good, empty], single=False, figures=figures)["targets"]
    assert many[0] == {**failing.as_dict(), "figures": {name: str(path) for name, path in figures[0].paths.items()}}
    assert many[1] == {**good.as_dict(), "figures": {}} and many[2] == {**empty.as_dict(), "figures": {}}
    assert reports_json([failing], single=True, figures=figures[:1]) == many[0]
    assert "figures" not in reports_json([failing], single=True)


def test_write_figures_reports_a_folder_it_cannot_write(tmp_path):
    """A file where the target's folder should be: a one-line reason instead of pictures, no exception."""
    (tmp_path / "pkg.mod-swapped").write_text("in the way")
    report = _report([CheckResult("formula[20x8]", False, "wrong")], target="pkg.mod:swapped",
                     kept_table=_kept_swapped())
    (figures,) = write_figures([report], tmp_path)
    assert figures.paths == {} and figures.reason.startswith(f"cannot write {tmp_path / 'pkg.mod-swapped'}"), figures
    assert np.all([line.count("\n") == 0 for line in summary_lines(report, figures=figures)])
