"""What the gate writes: the versioned JSON report (validated against the shipped schema),
shard merging, the text summary, pictures of failing targets, and destinations written as
a shell redirection would, but atomically."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat

import jsonschema
import numpy as np
import pytest

from meta_tests.hostile import report_json
from meta_tests.reports import gate_report
from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import PRESETS
from posenc_spec.figures.gate_plots import MAX_FOLDER_NAME, figure_folder, figure_folders, write_figures
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.identify.hint import Hint
from posenc_spec.gate.output import destination, json_report
from posenc_spec.gate.output.text import MAX_FAILURE_LINES, MAX_HINTED_LINES, summary_lines
from posenc_spec.gate.report import KeptTable
from posenc_spec.results import CheckResult, Worst
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


def _shards(reports, count=2):
    """The shard reports of ``reports`` as ``check --shard K/COUNT --json`` writes them, parsed back."""
    digest = json_report.run_digest((report.declaration.name, report.declaration.as_dict()) for report in reports)
    shards = []
    for index in range(1, count + 1):
        entries = [json_report.target_entry(r, p) for p, r in enumerate(reports) if p % count == index - 1]
        shards.append(json.loads(json_report.to_text(json_report.run_report(entries, len(reports), (index, count),
                                                                             digest=digest))))
    return shards


def _mixed_run():
    return [gate_report([CheckResult("import", "passed", "imported"), CheckResult("call[50x8]", status, "r")],
                        target=f"pkg.mod:f{i}") for i, status in enumerate(["passed", "failed", "passed", "passed"])]


def test_shards_merge_back_into_the_whole_run():
    """Each shard holds every N-th target with its position; merged, they are the whole run
    in order, and a missing or repeated shard is a usage error."""
    reports = [gate_report([], target=f"pkg.mod:f{i}") for i in range(5)]
    shards = _shards(reports)
    merged = json_report.merge(shards[::-1], ["b.json", "a.json"])
    assert json_report.to_text(merged) == json_report.to_text(report_json(reports))
    with pytest.raises(UsageError, match="shard.s. 2/2 missing"):
        json_report.merge(shards[:1], ["a.json"])
    with pytest.raises(UsageError, match="a.json and a.json are both shard 1/2"):
        json_report.merge([shards[0], shards[0]], ["a.json", "a.json"])


def _lie(shard: dict, how: str) -> None:
    """Make ``shard`` (a parsed shard report) disagree with itself or with its run."""
    entry = shard["targets"][0]
    if how == "target-status":
        entry["status"] = "conforms"
    elif how == "run-status":
        shard["status"] = "conforms"
    elif how == "declaration":
        entry["declaration"]["base"] = 500.0
    elif how == "position":
        entry["position"] += 1
    elif how == "check-status":
        entry["checks"][1]["status"] = "fine"


LIES = {
    "target-status": r"a.json: target pkg.mod:f1 says it 'conforms', its checks say 'does-not-conform'",
    "run-status": r"a.json: says the run's status is 'conforms', its targets say 'does-not-conform'",
    "declaration": r"do not give their run_digest",
    "position": r"a.json: shard 2/2 holds target pkg.mod:f1 at position 2, which is another shard's",
    "check-status": r"a.json: target pkg.mod:f1: a check without an id, a known status or a reason",
}


@pytest.mark.parametrize("how", list(LIES))
def test_merge_refuses_a_shard_that_disagrees_with_itself(tmp_path, how):
    """A shard whose statuses are not what its checks give, whose declarations were changed
    or whose targets are another shard's: a usage error naming the file and the target."""
    shards = _shards(_mixed_run())
    _lie(shards[1], how)
    paths = [tmp_path / "b.json", tmp_path / "a.json"]
    for path, shard in zip(paths, shards, strict=True):
        path.write_text(json.dumps(shard))
    with pytest.raises(UsageError, match=LIES[how]):
        json_report.merge([json_report.read_report(str(path)) for path in paths], ["b.json", "a.json"])


def test_merge_refuses_shards_of_different_runs():
    """Two shards with the same counts from runs of different declarations: refused, naming both."""
    first = _shards(_mixed_run())
    other = _mixed_run()
    other[1] = gate_report(other[1].checks, target="pkg.mod:other")
    second = _shards(other)
    with pytest.raises(UsageError, match="a.json and b.json come from different runs"):
        json_report.merge([first[0], second[1]], ["a.json", "b.json"])


def test_merge_recomputes_the_run_status_from_the_checks():
    """The joined report's statuses are those the checks give: one failed check, does not conform."""
    merged = json_report.merge(_shards(_mixed_run()), ["a.json", "b.json"])
    assert [entry["status"] for entry in merged["targets"]] == ["conforms", "does-not-conform", "conforms",
                                                                 "conforms"]
    assert merged["status"] == "does-not-conform"


def _worst(ratio: float) -> Worst:
    return Worst(index=(0, 0), shape=(8, 8), actual=ratio, expected=0.0, error=ratio, tolerance=1.0)


def test_summary_says_the_verdict_first_then_one_line_per_failing_kind():
    """The verdict ending the header, then one line per failing check kind (how many of its
    calls failed, the worst of them), the checks that could not run as a count, the warnings;
    -v lists every check, xfailed ones tagged."""
    checks = [CheckResult(f"formula[{i}x8]", "failed", f"{i}x8 under vaswani: wrong {i}", _worst(i + 1))
              for i in range(20)]
    checks += [CheckResult("odd[7]", "xfailed", "known deviation: ceil"),
               CheckResult("range[50x8]", "skipped", "not run: the call for 50x8 did not return a table")]
    report = gate_report(checks, warnings=["draws from torch's global random number generator"])
    lines = summary_lines(report)
    assert lines[0] == "pkg.mod:fn  [table API, vaswani, odd=skip]: 22 checks, 20 failed, 1 skipped, 1 xfailed: " \
                       "does not conform", lines
    assert [line for line in lines if line.startswith("  FAIL ")] == [
        "  FAIL  formula, 20 of 20 calls; worst formula[19x8]: wrong 19"], lines
    assert "  (1 more checks could not run because of the failures above)" in lines
    assert "  warning: draws from torch's global random number generator" in lines
    verbose = summary_lines(report, verbose=True)
    assert sum(line.startswith("  FAIL  formula[") for line in verbose) == 20
    assert any(line.startswith("  xfail odd[7]") for line in verbose), verbose


def test_summary_lists_at_most_a_screenful_of_kinds():
    """More failing kinds than MAX_FAILURE_LINES (MAX_HINTED_LINES where a hint names the
    slip): the rest are one line naming them."""
    checks = [CheckResult(f"kind{i}[50x8]", "failed", f"wrong {i}") for i in range(MAX_FAILURE_LINES + 2)]
    lines = summary_lines(gate_report(checks))
    assert sum(line.startswith("  FAIL ") for line in lines) == MAX_FAILURE_LINES, lines
    assert f"  ... and 2 checks of 2 more kinds (kind{MAX_FAILURE_LINES}, kind{MAX_FAILURE_LINES + 1}; -v lists " \
           "every check)" in lines, lines
    hinted = gate_report(checks)
    hinted.hints = [Hint(("base",), "base 1000 where 10000 is declared", (("base", 1000),))]
    lines = summary_lines(hinted)
    assert lines[1].startswith("  hint: base 1000 where 10000 is declared") and lines[1].endswith("(slip: base)")
    assert sum(line.startswith("  FAIL ") for line in lines) == MAX_HINTED_LINES, lines


def test_import_side_effects_are_one_short_line_unless_verbose():
    """The side effects of the libraries a target imported: one line naming the first modules
    (the whole warning with -v)."""
    effects = ("import side effects, kept as in your program, while the target was imported: importing "
               "torch._dynamo changed environment variables (A); importing transformers changed import hooks "
               "(5 -> 6 entries); importing tqdm changed threads; importing regex changed the locale")
    report = gate_report([CheckResult("formula[50x8]", "passed", "ok")], warnings=[effects])
    assert summary_lines(report)[-1] == ("  note: importing torch._dynamo, transformers, tqdm and 1 more changed "
                                         "process state, kept as in your program (-v lists it)")
    assert summary_lines(report, verbose=True)[-1] == f"  warning: {effects}"


def test_emit_escapes_what_the_stream_cannot_print(tmp_path):
    """A reason with a lone surrogate or non-ASCII text never ends in a traceback."""
    with open(tmp_path / "out.txt", "w", encoding="ascii", errors="strict") as stream:
        destination.emit("raised ValueError: \udcff caf\u00e9", stream)
    assert (tmp_path / "out.txt").read_text() == "raised ValueError: \\udcff caf\\xe9\n"


# Each field a target or a user's file controls, as it must be shown: control characters,
# C1 controls, line breaks, bidi overrides and workflow commands made visible or inert.
SHOWN = {
    "\x1b[1A\x1b[2K  1 checks, 0 failed: conforms": "\\x1b[1A\\x1b[2K  1 checks, 0 failed: conforms",
    "a\nb\r\tc\x7f": "a\\nb\\r\\tc\\x7f",
    "\x9b2J\x9d0;title\x07": "\\x9b2J\\x9d0;title\\x07",
    "abc\u202edcba\u2066\u2028x": "abc\\u202edcba\\u2066\\u2028x",
    "::add-mask::secret": "\\x3a:add-mask::secret",
    " \u3000::error::forged": " \u3000\\x3a:error::forged",
    "fine ##[error]forged and ##vso[task.complete]": "fine \\x23#[error]forged and \\x23#vso[task.complete]",
}


@pytest.mark.parametrize("field", list(SHOWN))
def test_emit_shows_every_field_as_one_inert_line(field):
    """Each hostile field prints as exactly one line, escaped, that no terminal acts on and
    no CI runner runs (a leading ``::``, ``##[``); the same line as an annotation stays a command."""
    out = io.StringIO()
    destination.emit([f"{field}", "  1 checks, 1 failed: does not conform"], out)
    assert out.getvalue() == f"{SHOWN[field]}\n  1 checks, 1 failed: does not conform\n", out.getvalue()
    out = io.StringIO()
    destination.emit(f"::error title=t::{field}", out, workflow_commands=True)
    assert out.getvalue().startswith("::error title=t::") and out.getvalue().count("\n") == 1, out.getvalue()


def _written(tmp_path, value: str, text: str, umask: int = 0o022):
    old = os.umask(umask)
    try:
        out = destination.open_destination("--json", value)
        out.write(text)
    finally:
        os.umask(old)


def test_regular_files_are_written_atomically_with_the_umask(tmp_path):
    """A new file gets the permissions the umask gives, and no temporary file is left beside it."""
    path = tmp_path / "report.json"
    _written(tmp_path, str(path), "{}\n", umask=0o027)
    assert path.read_text() == "{}\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_symlinks_are_followed_and_fifos_and_devices_held_from_the_start(tmp_path):
    """A symlink's target is written, the link kept; a FIFO and /dev/null are opened at the
    start, and the reader that was there then gets the report even after the path changed."""
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    _written(tmp_path, str(link), "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        out = destination.open_destination("--json", str(fifo))
        fifo.unlink()
        fifo.mkdir()  # the path now names a folder: the held pipe is still written
        out.write("through the pipe")
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    _written(tmp_path, os.devnull, "nothing")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_pipe_named_by_dev_fd_is_written(tmp_path):
    """A shell's ``>(...)`` is ``/dev/fd/N``, a link to a pipe that names no path: the pipe
    gets the report."""
    reader, writer = os.pipe()
    try:
        destination.open_destination("--json", f"/dev/fd/{writer}").write("to the pipe")
        os.close(writer)
        writer = None
        assert os.read(reader, 100) == b"to the pipe"
    finally:
        os.close(reader)
        if writer is not None:
            os.close(writer)


def test_a_fifo_nobody_reads_is_refused_at_once(tmp_path):
    """``--json`` naming a FIFO without a reader: a usage error naming the flag, not a wait."""
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UsageError, match="--json .*pipe: a FIFO that nobody reads"):
        destination.open_destination("--json", str(tmp_path / "pipe"))


@pytest.mark.parametrize("became", ["a folder", "a FIFO", "a symlink"])
def test_a_name_replaced_during_the_run_is_left_alone(tmp_path, became):
    """The report's name replaced after the start: nothing is written through it or into it
    (no wait on the FIFO), the error says what it became, and no temporary file is left."""
    path = tmp_path / "report.json"
    out = destination.open_destination("--json", str(path))
    {"a folder": path.mkdir, "a FIFO": lambda: os.mkfifo(path),
     "a symlink": lambda: path.symlink_to(tmp_path / "elsewhere.json")}[became]()
    with pytest.raises(destination.Unwritten, match=f"--json {path}: report.json became {became} during the run; "
                                                    "the report was not written"):
        out.write("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_without_replace_a_file_made_during_the_run_is_left_alone(tmp_path):
    """``snapshot`` without --force: a file made at the name after the start is kept as it
    is, the error names what is not written; with nothing there, the bytes are written."""
    path = tmp_path / "s.npz"
    out = destination.open_destination("--out", str(path), "the snapshot", replace=False)
    path.write_bytes(b"theirs")
    with pytest.raises(destination.Unwritten, match=f"^--out {path}: s.npz was made during the run; the snapshot "
                                                    "was not written$"):
        out.write(b"ours")
    assert path.read_bytes() == b"theirs" and [p.name for p in tmp_path.iterdir()] == ["s.npz"]
    path.unlink()
    destination.open_destination("--out", str(path), "the snapshot", replace=False).write(b"\x00\xffours")
    assert path.read_bytes() == b"\x00\xffours"


def test_a_folder_removed_during_the_run_is_an_error_not_a_traceback(tmp_path):
    """The report's folder deleted after the start: Unwritten, one line naming the flag."""
    folder = tmp_path / "reports"
    folder.mkdir()
    out = destination.open_destination("--junitxml", str(folder / "junit.xml"))
    folder.rmdir()
    with pytest.raises(destination.Unwritten, match="^--junitxml .*junit.xml: .*; the report was not written$"):
        out.write("<testsuites/>")


@pytest.mark.parametrize("where, words", [("missing/report.json", "no folder"), (".", "is a folder")])
def test_bad_destinations_are_found_before_any_target_runs(tmp_path, where, words):
    with pytest.raises(UsageError, match=words):
        destination.open_destination("--json", str(tmp_path / where))


def test_pictures_never_go_through_a_symlink_left_in_the_folder(tmp_path):
    """``--plots``: missing folders are made at the first picture; a symlink where a target's
    folder goes is refused (Unwritten), and nothing is written where it points."""
    plots = destination.open_folder("--plots", str(tmp_path / "a" / "plots"))
    assert not (tmp_path / "a").exists(), "made before any picture"
    assert plots.write("t1", "x.png", b"png") == str(tmp_path / "a" / "plots" / "t1" / "x.png")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "a" / "plots" / "t2").symlink_to(elsewhere)
    with pytest.raises(destination.Unwritten, match="cannot write .*t2/x.png"):
        plots.write("t2", "x.png", b"png")
    plots.close()
    assert list(elsewhere.iterdir()) == [] and (tmp_path / "a" / "plots" / "t1" / "x.png").read_bytes() == b"png"


def test_pictures_go_into_the_folder_itself_never_through_a_symlink_made_for_it(tmp_path):
    """``plot --out DIR``: the pictures go into DIR itself (made at the first picture); a
    symlink put where DIR was to be made is refused (Unwritten), nothing goes where it points."""
    with contextlib.closing(destination.open_folder("--out", str(tmp_path / "pictures"))) as pictures:
        assert pictures.write(None, "x.png", b"png") == str(tmp_path / "pictures" / "x.png")
    assert (tmp_path / "pictures" / "x.png").read_bytes() == b"png"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with contextlib.closing(destination.open_folder("--out", str(tmp_path / "planted"))) as pictures:
        (tmp_path / "planted").symlink_to(elsewhere)
        with pytest.raises(destination.Unwritten, match="cannot write .*planted/x.png"):
            pictures.write(None, "x.png", b"png")
    assert list(elsewhere.iterdir()) == []


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
        assert path == str(tmp_path / "pkg.mod-swapped" / f"{name}.png")
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
