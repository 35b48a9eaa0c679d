"""What the gate writes: the versioned JSON report (validated against the shipped schema),
shard merging, the text summary, pictures of failing targets, and destinations written as
a shell redirection would, but atomically."""

from __future__ import annotations

import json
import os
import stat
import threading

import jsonschema
import numpy as np
import pytest

from meta_tests.hostile import report_json
from meta_tests.reports import gate_report
from posenc_spec import oracle
from posenc_spec.checks import CheckResult, Worst
from posenc_spec.conventions import PRESETS
from posenc_spec.figures.gate_plots import MAX_FOLDER_NAME, figure_folder, figure_folders, write_figures
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.output import destination, json_report
from posenc_spec.gate.output.text import MAX_FAILURE_LINES, summary_lines
from posenc_spec.gate.report import KeptTable
from spec_tests.figure_compare import FIGURE_NAMES, assert_png

WORST = Worst((3, 4), (50, 8), 0.5, 0.25, float("inf"), 1e-7)


def _failing():
    return gate_report([CheckResult("formula[50x8]", "failed", "NaN", WORST),
                        CheckResult("determinism", "passed", "same"),
                        CheckResult("position-zero[4096x1024]", "skipped", "no row stands for position 0")])


def test_report_validates_against_the_shipped_schema():
    """One shape for one target and for many: versions, an overall status, and per check the
    stable id, the status, the reason and the worst element as fields (null for non-finite)."""
    data = report_json([_failing(), gate_report([])])
    jsonschema.validate(data, json_report.schema())
    assert data["schema_version"] == 1 and data["status"] == "does-not-conform"
    assert set(data["environment"]) == {"posenc_spec", "python", "numpy", "torch", "platform"}
    check = data["targets"][0]["checks"][0]
    assert check == {"id": "formula[50x8]", "status": "failed", "reason": "NaN",
                     "worst": {"index": [3, 4], "size": [50, 8], "actual": 0.5, "expected": 0.25, "error": None,
                               "tolerance": 1e-7, "ratio": None}}
    assert data["targets"][0]["declaration"]["odd"] == "skip" and data["targets"][1]["status"] == "conforms"


def test_the_schema_refuses_what_is_not_a_report():
    data = report_json([_failing()])
    for broken in ({**data, "status": "passed"}, {**data, "schema_version": 2},
                   {**data, "targets": [{**data["targets"][0], "checks": [{"id": "x", "status": "ok"}]}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(json_report.to_text(broken)), json_report.schema())


def test_overall_status_and_exit_status():
    """error (a target that did not import) beats does-not-conform, which beats conforms."""
    assert json_report.overall_status(["conforms", "does-not-conform", "error"]) == "error"
    assert json_report.overall_status(["conforms", "does-not-conform"]) == "does-not-conform"
    assert json_report.overall_status([]) == "conforms"
    assert json_report.EXIT_STATUS == {"conforms": 0, "does-not-conform": 1, "error": 2}


def test_shards_merge_back_into_the_whole_run():
    """Each shard holds every N-th target with its position; merged, they are the whole run
    in order, and a missing or repeated shard is a usage error."""
    reports = [gate_report([], target=f"pkg.mod:f{i}") for i in range(5)]
    whole = report_json(reports)
    shards = []
    for index in (1, 2):
        entries = [json_report.target_entry(r, p) for p, r in enumerate(reports) if p % 2 == index - 1]
        shards.append(json_report.run_report(entries, 5, (index, 2)))
    merged = json_report.merge(shards[::-1], ["b.json", "a.json"])
    assert json_report.to_text(merged) == json_report.to_text(whole)
    with pytest.raises(UsageError, match="shard.s. 2/2 missing"):
        json_report.merge(shards[:1], ["a.json"])
    with pytest.raises(UsageError, match="a.json and a.json are both shard 1/2"):
        json_report.merge([shards[0], shards[0]], ["a.json", "a.json"])


def test_summary_lists_failures_counts_the_rest_and_marks_statuses():
    """Failures first (at most MAX_FAILURE_LINES), the checks that could not run as a count,
    xfailed checks tagged, warnings and the verdict last."""
    checks = [CheckResult(f"formula[{i}x8]", "failed", f"wrong {i}") for i in range(20)]
    checks += [CheckResult("odd[7]", "xfailed", "known deviation: ceil"),
               CheckResult("range[50x8]", "skipped", "not run: the call for 50x8 did not return a table")]
    report = gate_report(checks, warnings=["draws from torch's global random number generator"])
    lines = summary_lines(report)
    assert lines[0] == "pkg.mod:fn  [table API, vaswani, odd=skip]"
    assert sum(line.startswith("  FAIL ") for line in lines) == MAX_FAILURE_LINES
    assert "  (1 more checks could not run because of the failures above)" in lines
    assert "  warning: draws from torch's global random number generator" in lines
    assert lines[-1] == "  22 checks, 20 failed, 1 skipped, 1 xfailed: does not conform"
    assert any(line.startswith("  xfail odd[7]") for line in summary_lines(report, verbose=True))


def test_emit_escapes_what_the_stream_cannot_print(tmp_path):
    """A reason with a lone surrogate or non-ASCII text never ends in a traceback."""
    with open(tmp_path / "out.txt", "w", encoding="ascii", errors="strict") as stream:
        destination.emit("raised ValueError: \udcff caf\u00e9\n", stream)
    assert (tmp_path / "out.txt").read_text() == "raised ValueError: \\udcff caf\\xe9\n"


def test_regular_files_are_written_atomically_with_the_umask(tmp_path):
    path = tmp_path / "report.json"
    old = os.umask(0o027)
    try:
        destination.check("--json", str(path))
        destination.write(str(path), "{}\n")
    finally:
        os.umask(old)
    assert path.read_text() == "{}\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_symlinks_are_written_through_and_fifos_in_place(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    destination.write(str(link), "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo).read()))
    reader.start()
    destination.check("--json", str(fifo))
    destination.write(str(fifo), "through the pipe")
    reader.join(timeout=10)
    assert received == ["through the pipe"] and stat.S_ISFIFO(fifo.stat().st_mode)
    destination.write(os.devnull, "nothing")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.parametrize("where, words", [("missing/report.json", "no folder"), (".", "is a folder")])
def test_bad_destinations_are_found_before_any_target_runs(tmp_path, where, words):
    with pytest.raises(UsageError, match=words):
        destination.check("--json", str(tmp_path / where))


def test_figure_folders_are_safe_readable_and_unique():
    """A module target keeps its dotted name; a file target is relative to the working directory with
    unsafe characters replaced; a repeated target is numbered; a very long path is cut and stays unique."""
    long_a = os.path.join(os.getcwd(), *["deep folder"] * 30, "a.py") + ":fn"
    long_b = os.path.join(os.getcwd(), *["deep folder"] * 30, "b.py") + ":fn"
    targets = ["pkg.mod:Class.fn", "pkg.mod:Class.fn", os.path.join(os.getcwd(), "my dir", "pe.py") + ":table",
               long_a, long_b]
    names = figure_folders([gate_report([], target=target) for target in targets])
    assert names[:3] == ["pkg.mod-Class.fn", "pkg.mod-Class.fn-2", "my_dir_pe.py-table"], names
    assert all(len(name) <= MAX_FOLDER_NAME for name in names) and names[3] != names[4], names
    assert all(os.sep not in name and not name.startswith(".") for name in names), names
    assert figure_folder("../elsewhere/pe.py:table") == "elsewhere_pe.py-table"


def _kept_swapped(positions=20, width=8):
    """Seed 000's formula with sine and cosine swapped, as a target's float64 table."""
    table = oracle.table(positions, width, PRESETS["vaswani"])
    return KeptTable(f"{positions}x{width}", positions, table[:, [1, 0, 3, 2, 5, 4, 7, 6]].copy(), "float64")


def test_write_figures_draws_only_what_does_not_conform(tmp_path):
    """The four PNGs for a failing report with a kept table; none for a conforming one; a reason
    for a failing one without a table. The lines name every file; the JSON holds them."""
    failing = gate_report([CheckResult("formula[20x8]", "failed", "wrong")], target="pkg.mod:swapped",
                          kept=_kept_swapped())
    good = gate_report([CheckResult("formula[20x8]", "passed", "ok")], target="pkg.mod:good")
    empty = gate_report([CheckResult("call[20x8]", "failed", "raised RuntimeError")], target="pkg.mod:raises")
    figures = write_figures([failing, good, empty], tmp_path)
    assert figures[1] is None and figures[2].paths == {} and "no call returned a table" in figures[2].reason
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg.mod-swapped"], "pictures of a conforming target"
    assert tuple(figures[0].paths) == FIGURE_NAMES and figures[0].slot == "20x8"
    for name, path in figures[0].paths.items():
        assert path == tmp_path / "pkg.mod-swapped" / f"{name}.png"
        assert_png(path)
    assert figures[0].lines()[0] == "figures of the 20x8 table:"
    assert figures[2].lines() == ["figures: none (no call returned a table to draw)"]
    assert figures[0].as_json() == {"figures": {name: str(path) for name, path in figures[0].paths.items()}}


def test_write_figures_reports_a_folder_it_cannot_write(tmp_path):
    """A file where the target's folder should be: a one-line reason instead of pictures, no exception."""
    (tmp_path / "pkg.mod-swapped").write_text("in the way")
    report = gate_report([CheckResult("formula[20x8]", "failed", "wrong")], target="pkg.mod:swapped",
                         kept=_kept_swapped())
    (figures,) = write_figures([report], tmp_path)
    assert figures.paths == {} and figures.reason.startswith(f"cannot write {tmp_path / 'pkg.mod-swapped'}"), figures
    assert np.all([line.count("\n") == 0 for line in figures.lines()])
