"""``posenc-spec check`` and ``merge`` against targets and files that attack what the gate
writes: report destinations changed during the run (``meta_tests/hostile/destinations.py``),
control sequences and workflow commands in printed fields, a reply over the protocol's
limit, a 0-d result and values no picture can span (``meta_tests/hostile/printed.py``), and
shard reports that disagree with themselves; and, unit by unit, the reasons and escapes
those runs rely on.

One run of ``check`` judges the targets that cannot make the gate wait, in this process;
the run whose report path becomes a FIFO, and the one naming a FIFO nobody reads, are real
processes with a time limit (a hang guard, not a measurement).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from meta_tests.guards import CLI_RUN_SECONDS
from meta_tests.hostile import MAX_POSITIONS, alive, assert_complete_entry, strict_json, target
from meta_tests.reports import gate_report
from posenc_spec.cli import main
from posenc_spec.figures.gate_plots import figure_folder
from posenc_spec.gate.calls import shape_problem
from posenc_spec.gate.child.protocol import MAX_HEADER_BYTES, HeaderTooLarge, encode_header, in_place_of
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import plan
from posenc_spec.gate.output import json_report
from posenc_spec.results import CheckResult
from posenc_spec.text import TERMINAL_CONTROLS
from spec_tests.figure_compare import FIGURE_NAMES, assert_png

WORKTREE = Path(__file__).resolve().parents[2]
TIMEOUT = 5
COMMON = ["--max-positions", str(MAX_POSITIONS), "--timeout", str(TIMEOUT), "-j", "1"]
RUN_LIMIT = CLI_RUN_SECONDS  # a guard against a hung command (meta_tests/guards.py)
OUTPUT_STATUS = 3
# A target whose name, as the user wrote it, breaks the line and carries workflow commands.
EVIL_FOLDER = "evil\n::add-mask::posenc\n::error title=forged::x ##[error]y\x1b[31m"
PRINTED = ["forges_the_verdict_line", "exception_name_too_long", "returns_a_scalar", "near_the_largest_float"]
TAMPERING = ["report_becomes_folder", "plants_symlink_for_its_pictures"]
RAW_CONTROL = re.compile(f"[\\x00-\\x09\\x0b-\\x1f{TERMINAL_CONTROLS}]")


def _in_process(argv) -> tuple[int, str, str, list]:
    """``posenc-spec ARGV`` here: exit status, stdout, stderr and the warnings it emitted."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = main(argv)
    return status, out.getvalue(), err.getvalue(), list(caught)


def _evil_target(folder: Path) -> str:
    """A file target, inside a folder whose name is :data:`EVIL_FOLDER`, that returns zeros."""
    evil = folder / EVIL_FOLDER
    evil.mkdir()
    (evil / "zeros.py").write_text("import numpy as np\n\n\ndef zeros(n, d):\n"
                                   "    return np.zeros((n, d), np.float32)\n")
    return f"{evil / 'zeros.py'}:zeros"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One ``check`` of the printed and tampering targets and the evil name, with every
    output and annotations; its status, stdout, stderr, warnings and files."""
    folder = tmp_path_factory.mktemp("outputs")
    folder.chmod(0o777)  # the targets attack it also where the gate gives each a user of its own (as root)
    names = {name: target("printed", name) for name in PRINTED}
    names |= {name: target("destinations", name) for name in TAMPERING}
    names["evil"] = _evil_target(folder)
    config = folder / "gate.toml"
    config.write_text("".join(f"[[targets]]\ntarget = {json.dumps(name)}\n" for name in names.values()))
    files = {"json": folder / "report.json", "junit": folder / "junit.xml", "plots": folder / "plots",
             "elsewhere": folder / "elsewhere"}
    files["elsewhere"].mkdir()
    environment = {"POSENC_HOSTILE_FOLDER_REPORT": str(files["junit"]),
                   "POSENC_HOSTILE_ELSEWHERE": str(files["elsewhere"]),
                   "POSENC_HOSTILE_PICTURES": str(files["plots"] / figure_folder(names[TAMPERING[1]]))}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in environment.items():
            patch.setenv(key, value)
        status, out, err, caught = _in_process(
            ["check", "--config", str(config), *COMMON, "--json", str(files["json"]), "--junitxml",
             str(files["junit"]), "--plots", str(files["plots"]), "--annotations", "github"])
    return {"status": status, "out": out, "err": err, "warnings": caught, "files": files, "names": names,
            "report": strict_json(files["json"].read_text(encoding="utf-8"))}


def _entry(run, name) -> dict:
    (entry,) = [entry for entry in run["report"]["targets"] if entry["target"] == run["names"][name]]
    return entry


def _reason(run, name, check="call[50x8]") -> str:
    return {check["id"]: check["reason"] for check in _entry(run, name)["checks"]}[check]


def test_a_report_destination_changed_during_the_run_is_one_line_and_exit_3(run):
    """--junitxml replaced by a folder and a symlink left for the pictures: the verdicts are
    printed, the JSON report is complete, and each destination not written is one line on
    stderr naming its flag; the run exits 3."""
    assert run["status"] == OUTPUT_STATUS, run["err"]
    lines = run["err"].splitlines()
    assert len(lines) == 2, run["err"]
    assert re.fullmatch(r"posenc-spec check: error: --junitxml .*junit\.xml: junit\.xml became a folder during "
                        r"the run; the report was not written", lines[0]), lines[0]
    assert lines[1].startswith("posenc-spec check: error: --plots ") and "1 target could not" in lines[1], lines[1]
    assert run["files"]["junit"].is_dir() and list(run["files"]["junit"].iterdir()) == []
    assert list(run["files"]["elsewhere"].iterdir()) == [], "a picture went through the symlink"
    assert len(run["report"]["targets"]) == len(run["names"]) and "does not conform" in run["out"]
    for name in run["names"]:
        declaration = declare({"target": run["names"][name], "max_positions": MAX_POSITIONS, "timeout": TIMEOUT})
        assert_complete_entry(_entry(run, name), declaration)


def test_printed_fields_are_escaped_and_inert(run):
    """Stdout and stderr hold no raw control character, and no line a CI runner would run
    but the gate's own annotations: a line break in a target's name and ESC, C1 and bidi
    characters in a message are shown escaped."""
    for stream in ("out", "err"):
        assert not RAW_CONTROL.search(run[stream]), RAW_CONTROL.search(run[stream])
        for line in run[stream].splitlines():  # the runner reads a line as one command at most
            assert line.startswith(("::error ", "::warning ", "::notice ")) or ("##[" not in line
                                                                   and not line.lstrip().startswith("::")), line
    assert "evil\\n::add-mask::posenc\\n::error title=forged::x \\x23#[error]y\\x1b[31m/zeros.py:zeros" in run["out"]
    assert "\\x1b[1A\\x1b[2K 65 checks, 0 failed: conforms\\x9b2J\\u202e" in run["out"]
    commands = [line for line in run["out"].splitlines() if line.startswith("::")]
    assert commands and all(line.startswith(("::error ", "::warning ", "::notice ")) for line in commands), commands
    assert not any("add-mask" in line.split("::", 2)[1] for line in commands)


def test_the_pytest_plugin_shows_hostile_text_escaped_and_inert(pytester):
    """Through the pytest plugin, a message with ESC, C1 and bidi characters and a workflow
    command, and a target name with line breaks and workflow commands: pytest's output and
    its JUnit XML hold no raw control character, and its output no line a CI runner would run."""
    config = pytester.path / "gate.toml"
    names = [target("printed", "forges_the_verdict_line"), _evil_target(pytester.path)]
    config.write_text(f"max_positions = {MAX_POSITIONS}\n"
                      + "".join(f"[[targets]]\ntarget = {json.dumps(name)}\n" for name in names))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-n", "0", "-rsxf", "--posenc-config",
                                          str(config), "--junitxml", str(junit))
    output, xml = "\n".join(result.outlines + result.errlines), junit.read_text(encoding="utf-8")
    assert result.ret == 1, output
    assert "\\x1b[1A\\x1b[2K 65 checks, 0 failed: conforms\\x9b2J\\u202e ::add-mask::posenc \\x23#[error]forged" \
        in output, output
    name = "evil\\n::add-mask::posenc\\n::error title=forged::x \\x23#[error]y\\x1b[31m/zeros.py:zeros"
    assert name in output, output
    for text in (output, xml):
        assert not RAW_CONTROL.search(text), RAW_CONTROL.search(text)
        assert "#x1B" not in text and "#x9B" not in text, "pytest's JUnit writer met a raw control character"
    for line in output.splitlines():
        assert "##[" not in line and not line.lstrip().startswith("::"), line


def test_the_json_report_keeps_hostile_text_exactly(run):
    """The report reads back with the target's name and message exactly as they were."""
    assert _entry(run, "evil")["target"] == run["names"]["evil"]
    assert "\x1b[1A\x1b[2K 65 checks, 0 failed: conforms\x9b2J\u202e" in _reason(run, "forges_the_verdict_line")


def test_a_reply_header_over_the_limit_names_the_limit(run):
    """A reply whose header exceeds the protocol's 64 KiB: the reason says so, not "exited
    with status 70"."""
    reason = _reason(run, "exception_name_too_long")
    assert "exceeds the protocol's 64 KiB" in reason and "status 70" not in reason, reason


def test_a_zero_d_result_is_described_as_one(run):
    """A 0-d result: the reason says it returned a 0-d array (a scalar)."""
    reason = _reason(run, "returns_a_scalar")
    assert "returned a 0-d array (a scalar), expected 50x8" in reason, reason


def test_pictures_of_values_near_the_largest_float_are_drawn_quietly(run):
    """Values of +-1e308, Inf and NaN: the four pictures are drawn and the run emits no
    warning (NumPy's overflows, matplotlib's), so nothing reaches stderr."""
    pictures = _entry(run, "near_the_largest_float")["figures"]
    assert tuple(pictures) == FIGURE_NAMES, pictures
    for path in pictures.values():
        assert_png(Path(path))
    assert run["warnings"] == [], [f"{w.category.__name__}: {w.message}" for w in run["warnings"]]


def _command(*args):
    return [sys.executable, "-m", "posenc_spec", *args]


def test_a_report_path_turned_into_a_fifo_never_makes_the_gate_wait(tmp_path):
    """A target that replaces the --json path with a FIFO nobody reads: the run ends, the
    verdict printed, one line naming --json, exit 3; the JUnit report is complete; the
    FIFO is left alone and nothing the target started is still running."""
    report, junit, pids = tmp_path / "report.json", tmp_path / "junit.xml", tmp_path / "pids"
    tmp_path.chmod(0o777)  # the target attacks it also where the gate gives it a user of its own (as root)
    environment = {**os.environ, "PYTHONPATH": str(WORKTREE), "POSENC_HOSTILE_REPORT": str(report),
                   "POSENC_HOSTILE_PIDS": str(pids)}
    done = subprocess.run(_command("check", target("destinations", "report_becomes_fifo"), *COMMON, "--json",
                                   str(report), "--junitxml", str(junit)),
                          cwd=WORKTREE, env=environment, capture_output=True, text=True, timeout=RUN_LIMIT)
    assert done.returncode == OUTPUT_STATUS, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "--json" in done.stderr and "became a FIFO" in done.stderr, done.stderr
    assert "conforms" in done.stdout and report.is_fifo()
    planned = len(plan(declare({"target": target("destinations", "report_becomes_fifo"),
                                "max_positions": MAX_POSITIONS})))
    assert f'tests="{planned}" failures="0" errors="0"' in junit.read_text(encoding="utf-8")
    recorded = [int(pid) for pid in pids.read_text().split()]
    assert recorded and not [pid for pid in recorded if alive(pid)]


def test_a_fifo_nobody_reads_is_a_usage_error_before_any_target(tmp_path):
    """``--json`` naming a FIFO without a reader: exit 2 at once with one line naming the
    flag, and the target never imported."""
    os.mkfifo(tmp_path / "report.fifo")
    tmp_path.chmod(0o777)  # where an import would leave its marker, whatever user it ran as
    marker = tmp_path / "imported"
    done = subprocess.run(_command("check", target("output", "correct_table"), *COMMON, "--json",
                                   str(tmp_path / "report.fifo")),
                          cwd=WORKTREE, env={**os.environ, "PYTHONPATH": str(WORKTREE),
                                             "POSENC_HOSTILE_IMPORTED": str(marker)},
                          capture_output=True, text=True, timeout=RUN_LIMIT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--json" in done.stderr and "a FIFO that nobody reads" in done.stderr, done.stderr
    assert not marker.exists()


def _shard_files(folder: Path, lie: bool = True) -> list[str]:
    """Two shard reports of one run of four targets (the second fails a check); with
    ``lie``, the shard of target 1 rewritten to say it conforms."""
    reports = [gate_report([CheckResult("import", "passed", "imported"), CheckResult("call[50x8]", status, "r")],
                           target=f"pkg.mod:f{i}") for i, status in enumerate(["passed", "failed", "passed", "passed"])]
    digest = json_report.run_digest((report.declaration.name, report.declaration.as_dict()) for report in reports)
    paths = []
    for index in (1, 2):
        entries = [json_report.target_entry(r, p) for p, r in enumerate(reports) if p % 2 == index - 1]
        data = json_report.run_report(entries, len(reports), (index, 2), digest=digest)
        if lie and index == 2:
            data["status"] = data["targets"][0]["status"] = "conforms"
        paths.append(folder / f"shard-{index}.json")
        paths[-1].write_text(json_report.to_text(data), encoding="utf-8")
    return [str(path) for path in paths]


def test_merge_refuses_a_shard_that_says_it_conforms_while_a_check_failed(tmp_path):
    """``merge`` of a shard whose statuses say "conforms" over a failed check: exit 2, one
    line naming the file and the target, and no merged report."""
    shards = _shard_files(tmp_path)
    status, out, err, _ = _in_process(["merge", *shards, "--json", str(tmp_path / "all.json")])
    assert status == 2 and err.count("\n") == 1, err
    assert f"{shards[1]}: target pkg.mod:f1 says it 'conforms', its checks say 'does-not-conform'" in err, err
    assert not (tmp_path / "all.json").exists()


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a": ' * 65 + "1" + "}" * 65])
def test_merge_refuses_a_shard_nested_too_deep_before_parsing_it(tmp_path, text):
    """A shard report nested past 64 levels, 100000 deep (json's recursion) or 65: exit 2,
    one line naming the file and the depth, as for every file a user names."""
    shard = tmp_path / "deep.json"
    shard.write_text(text)
    status, out, err, _ = _in_process(["merge", str(shard), "--json", str(tmp_path / "all.json")])
    assert (status, out, err) == (2, "", f"posenc-spec merge: error: {shard}: nested more than 64 levels deep\n")


@pytest.mark.parametrize("shape, words", [((), "returned a 0-d array (a scalar), expected 50x8"),
                                          ((1,), "returned shape (1,), expected 50x8"),
                                          ((50,), "returned shape (50,), expected 50x8"),
                                          ((8, 50), "returned shape 8x50, expected 50x8: transposed")])
def test_shapes_are_described_as_they_are(shape, words):
    """A 0-d result is a scalar, one axis is written as a tuple: never "shape 1" for either."""
    assert shape_problem(shape, (50, 8)).startswith(words), shape_problem(shape, (50, 8))


def test_a_header_over_the_limit_is_replaced_by_one_that_names_it():
    """Encoding a header over 64 KiB raises HeaderTooLarge; the reply sent in its place keeps
    what pairs it with its request, refuses the result and names the limit, and fits."""
    reply = {"op": "result", "id": 3, "token": "t", "status": "raised", "exception": "E" * MAX_HEADER_BYTES}
    with pytest.raises(HeaderTooLarge) as raised:
        encode_header(reply)
    short = in_place_of(reply, raised.value)
    assert short == {"op": "result", "id": 3, "token": "t", "status": "bad", "ok": False,
                     "message": f"the reply header of {raised.value.size} bytes exceeds the protocol's 64 KiB"}
    assert len(encode_header(short)) < MAX_HEADER_BYTES


def test_command_line_errors_show_the_users_words_escaped(capsys):
    """An unknown option holding ESC and a line break with a workflow command: one line on
    stderr, escaped, exit 2."""
    with pytest.raises(SystemExit) as exited:
        main(["check", "--\x1b[2Jx\n::error::forged"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1, err
    assert "unrecognized arguments: --\\x1b[2Jx\\n::error::forged" in err, err


def test_merge_to_standard_output_keeps_annotations_out_of_the_report(tmp_path, capsys):
    """``merge --json -`` with annotations: stdout is the merged report alone, the
    annotations go to stderr."""
    shards = _shard_files(tmp_path, lie=False)
    assert main(["merge", *shards, "--json", "-", "--annotations", "github"]) == 1
    out, err = capsys.readouterr()
    assert strict_json(out)["status"] == "does-not-conform"
    assert err.startswith("::error ") and err.count("\n") == 1, err
