"""``posenc-spec check``, ``merge`` and ``identify`` end to end: exit statuses, the JSON
report, config files, ``[tool.posenc-spec]``, xfails, shards and jobs, and no traceback
whatever the target does."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from posenc_spec.cli import main
from posenc_spec.gate.output.json_report import schema

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]

# A [tool.posenc-spec] table as a user writes one: shared keys, then two targets, the second
# with its own API and convention. (This repository has no such table: check --builtin runs
# posenc_spec.registry.builtin_targets(), which test_builtin_runs_the_reference_implementations
# covers; check alone refuses to run, see test_nothing_declared_is_a_usage_error.)
PYPROJECT_EXAMPLE = """\
[tool.posenc-spec]
convention = "vaswani"
max_positions = 64

[[tool.posenc-spec.targets]]
target = "reference_impls.numpy_vectorized:positional_encoding"

[[tool.posenc-spec.targets]]
target = "reference_impls.timestep:timestep_embedding"
api = "timesteps"
convention = "concat"
"""
TORCH_REFERENCE = "reference_impls.torch_impl:positional_encoding"


def random_table(n, d):
    return np.random.default_rng(0).uniform(-1, 1, size=(n, d))


def exits_hard(n, d):
    os._exit(7)


def zero_padded_vaswani(n, d):
    from reference_impls.family import sinusoidal_encoding

    return sinusoidal_encoding(n, d, "vaswani", odd="zero-pad")


def _report(path) -> dict:
    data = json.loads(Path(path).read_text())
    jsonschema.validate(data, schema())
    return data


def test_pyproject_example_conforms(tmp_path, monkeypatch, capsys):
    """With no TARGET, check reads [tool.posenc-spec] (from a subfolder too): the reference
    implementations conform (exit 0), one entry per target in order, each under the keys
    its table and the shared ones give."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_EXAMPLE)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    monkeypatch.syspath_prepend(str(REPO))
    status = main(["check", "--json", "report.json", "-j", "2"])
    output = capsys.readouterr().out
    assert status == 0, output
    report = _report(tmp_path / "sub" / "report.json")
    assert report["status"] == "conforms", output
    assert [entry["target"] for entry in report["targets"]] == [
        "reference_impls.numpy_vectorized:positional_encoding", "reference_impls.timestep:timestep_embedding"]
    assert report["config"] == str(tmp_path / "pyproject.toml") and f"config {tmp_path / 'pyproject.toml'}" in output
    declared = [entry["declaration"] for entry in report["targets"]]
    assert [(d["layout"], d["api"], d["max_positions"]) for d in declared] == [
        ("interleaved", "table", 64), ("concat", "timesteps", 64)], declared
    assert "2 of 2 targets conform" in output


def test_wrong_convention_exits_1_and_writes_the_json(tmp_path, capsys):
    """A table under the wrong preset: exit 1, the failures printed with the worst element,
    the JSON written with that element as fields."""
    out = tmp_path / "r.json"
    status = main(["check", TORCH_REFERENCE, "--convention", "concat", "--max-positions", "64", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 1, printed
    entry = _report(out)["targets"][0]
    assert entry["status"] == "does-not-conform" and entry["declaration"]["preset"] == "concat"
    formula = next(check for check in entry["checks"] if check["id"] == "formula[50x8]")
    worst = formula["worst"]
    assert formula["status"] == "failed" and worst["ratio"] == pytest.approx(worst["error"] / worst["tolerance"])
    assert f"error {worst['error']:.3g} vs tolerance {worst['tolerance']:.3g}" in formula["reason"]
    assert "worst formula[" in printed and "does not conform" in printed, printed


def test_flags_override_the_preset(capsys):
    """--layout concat on vaswani is the concat preset's structure: the concat reference passes."""
    status = main(["check", "reference_impls.timestep:timestep_embedding", "--api", "timesteps",
                   "--layout", "concat", "--max-positions", "64"])
    assert status == 0, capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["check", TORCH_REFERENCE, "--convention", "nope"], "--convention must be one of"),
    (["check", TORCH_REFERENCE, "--freq-shift", "2"], "--freq-shift must be one of 0, 1, got '2'"),
    (["check", TORCH_REFERENCE, "--max-positions", "0"], "--max-positions must be an integer from 1"),
    (["check", TORCH_REFERENCE, "--base", "ten"], "--base must be a number, got 'ten'"),
    (["check", "no_colon_here"], "TARGET must be"),
    (["check", TORCH_REFERENCE, "--scale", "0"], "--scale must be a non-zero number"),
    (["check", "--convention", "fairseq", "--odd", "ceil", TORCH_REFERENCE], "odd='ceil' is defined for freq_shift=0"),
    (["check", TORCH_REFERENCE, "--config", "x.toml"], "not both"),
    (["check", TORCH_REFERENCE, "--scale", "1e12", "--max-positions", "64"], "beyond what float32 can resolve"),
    (["check", TORCH_REFERENCE, "--max-positions", "1"], "too small to show the frequencies"),
])
def test_bad_values_are_usage_errors(argv, words, capsys):
    """Every bad value exits 2 with one line naming the flag and value, no traceback."""
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert words in error and "Traceback" not in error and error.count("\n") == 1, error


def test_a_typo_gets_one_line_and_a_close_match(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["check", TORCH_REFERENCE, "--convetion", "vaswani"])
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and error.count("\n") == 1 and "(did you mean --convention?)" in error, error


def test_an_option_of_another_command_is_not_suggested(capsys):
    """``-j`` belongs to ``check``; ``identify`` refuses it without suggesting it back."""
    with pytest.raises(SystemExit) as stopped:
        main(["identify", TORCH_REFERENCE, "-j", "2"])
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and "unrecognized arguments: -j 2" in error and "did you mean" not in error, error


def test_unimportable_target_exits_2_with_json(tmp_path, capsys):
    """A TARGET that cannot be imported: exit 2, the reason printed, the JSON still written."""
    out = tmp_path / "r.json"
    status = main(["check", "no_such_package.module:fn", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 2, printed
    report = _report(out)
    assert report["status"] == "error"
    assert report["targets"][0]["checks"][0] == {
        "id": "import", "status": "failed", "reason": "raised ModuleNotFoundError: No module named 'no_such_package'",
        "worst": None}
    assert "cannot be imported" in printed


def test_crashing_target_gets_a_verdict_without_traceback(tmp_path, capfd):
    """os._exit in every call: exit 1, one-line reasons, no traceback from the gate, JSON written."""
    out = tmp_path / "r.json"
    status = main(["check", f"{HERE}:exits_hard", "--max-positions", "64", "--json", str(out)])
    captured = capfd.readouterr()
    assert status == 1, captured.out
    assert "Traceback" not in captured.out + captured.err
    call = _report(out)["targets"][0]["checks"][1]
    assert call["reason"] == "50x8: the process exited with status 7 (os._exit or a crash)"


def test_config_with_an_unimportable_target_reports_all(tmp_path, capsys):
    """--config: every target is reported; one that cannot be imported makes the status error (2)."""
    config = tmp_path / "gate.toml"
    config.write_text(f'max_positions = 64\n\n[[targets]]\ntarget = "{HERE}:zero_padded_vaswani"\nodd = "zero-pad"\n'
                      '\n[[targets]]\ntarget = "missing_module:fn"\n')
    out = tmp_path / "r.json"
    status = main(["check", "--config", str(config), "--json", str(out)])
    capsys.readouterr()
    report = _report(out)
    assert status == 2 and report["status"] == "error"
    assert [entry["status"] for entry in report["targets"]] == ["conforms", "error"]


def test_xfails_file_accepts_known_deviations(tmp_path, capsys):
    """Known deviations listed in --xfails do not fail the run; a line that matches no check
    is warned about with its file and line."""
    xfails = tmp_path / "xfails.txt"
    xfails.write_text("# numpy_loop refuses odd widths\nodd[*]  # refuses odd widths\nformula[1x1]\n")
    status = main(["check", "reference_impls.numpy_loop:positional_encoding", "--odd", "zero-pad",
                   "--max-positions", "64", "--xfails", str(xfails)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "  xfail odd, " in printed and "known deviation (refuses odd widths)" in printed, printed
    assert f"warning: {xfails}, line 3: 'formula[1x1]' matches no check of this run" in printed


def test_json_to_stdout_keeps_stdout_clean(capsys):
    """--json - writes only the JSON to stdout; the summary goes to stderr."""
    status = main(["check", TORCH_REFERENCE, "--max-positions", "64", "--json", "-"])
    captured = capsys.readouterr()
    assert status == 0
    assert json.loads(captured.out)["status"] == "conforms"
    assert "conforms" in captured.err


def _without_timings(text: str) -> str:
    return re.sub(r'"seconds": [0-9.e+-]+', '"seconds": 0', text)


def test_shards_merged_and_jobs_equal_the_serial_run(tmp_path, capsys):
    """-j 2 gives the serial run's report byte for byte apart from timings; two shards,
    merged, give it too, and merge's exit status is the whole run's, said in words."""
    config = tmp_path / "gate.toml"
    config.write_text(f'max_positions = 64\n[[targets]]\ntarget = "{HERE}:zero_padded_vaswani"\n'
                      f'[[targets]]\ntarget = "{TORCH_REFERENCE}"\n[[targets]]\ntarget = "{HERE}:random_table"\n'
                      f'[[targets]]\ntarget = "reference_impls.numpy_loop:positional_encoding"\n')
    runs = {}
    for name, extra in (("serial", ["-j", "1"]), ("parallel", ["-j", "2"]), ("shard1", ["--shard", "1/2"]),
                        ("shard2", ["--shard", "2/2"])):
        status = main(["check", "--config", str(config), "--json", str(tmp_path / f"{name}.json"), *extra])
        runs[name] = (status, _without_timings((tmp_path / f"{name}.json").read_text()))
    capsys.readouterr()
    assert runs["serial"][0] == runs["parallel"][0] == 1
    assert runs["parallel"][1] == runs["serial"][1]
    assert [len(json.loads(runs[name][1])["targets"]) for name in ("shard1", "shard2")] == [2, 2]
    merged = tmp_path / "merged.json"
    status = main(["merge", str(tmp_path / "shard2.json"), str(tmp_path / "shard1.json"), "--json", str(merged)])
    assert status == 1 and _without_timings(merged.read_text()) == runs["serial"][1]
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("merged 2 reports: 4 targets, ") and said.endswith(
        "do not conform; exit status 1 (a target does not conform)"), said
    assert main(["merge", str(tmp_path / "shard1.json"), "--json", str(merged)]) == 2
    assert "shard(s) 2/2 missing" in capsys.readouterr().err


def test_identify_cli(tmp_path, capsys):
    """identify names the preset (exit 0) and says none, with the nearest, for a random table (exit 1)."""
    out = tmp_path / "id.json"
    assert main(["identify", TORCH_REFERENCE, "--json", str(out)]) == 0
    answer = json.loads(out.read_text())
    assert {"target", "convention", "max_error_ratio", "nearest"} <= set(answer)
    assert answer["name"] == "vaswani" and answer["convention"]["layout"] == "interleaved"
    assert main(["identify", f"{HERE}:random_table", "--json", str(out)]) == 1
    answer = json.loads(out.read_text())
    assert answer["convention"] is None and answer["name"] == "none"
    assert answer["nearest"]["max_error_ratio"] > 1
    assert "none: no member of the family fits" in capsys.readouterr().out


def test_version_in_the_header(capsys):
    from posenc_spec import __version__

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"posenc-spec {__version__}\n"
    main(["check", TORCH_REFERENCE, "--max-positions", "64"])
    assert capsys.readouterr().out.startswith(f"posenc-spec {__version__} | ")


def timesteps_only(timesteps, dim):
    """A timestep embedding: fn(timesteps tensor, dim); called as a table it fails every call alike."""
    return timesteps[:, None].float().expand(-1, dim)


def test_builtin_runs_the_reference_implementations(tmp_path, monkeypatch, capsys):
    """--builtin in a folder with nothing declared: the packaged reference implementations, flags applied."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # a repository root: the search for a pyproject.toml stops here
    assert main(["check", "--builtin", "--max-positions", "64", "--json", "r.json"]) == 0
    printed = capsys.readouterr().out
    report = _report(tmp_path / "r.json")
    assert "built-in default" in printed and report["config"].startswith("built-in default")
    assert [entry["target"].split(":")[0] for entry in report["targets"]] == [
        f"posenc_spec.families.sinusoidal.references.{name}"
        for name in ("numpy_loop", "numpy_vectorized", "torch_impl", "timestep")]
    assert {entry["declaration"]["max_positions"] for entry in report["targets"]} == {64}


@pytest.mark.parametrize("where", ["repository", "subfolder"])
def test_nothing_declared_is_a_usage_error(tmp_path, monkeypatch, capsys, where):
    """No TARGET, no --config, no [tool.posenc-spec] up to the repository root: exit 2 and one
    line saying where the search looked and how to declare targets; nothing is checked."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    start = tmp_path if where == "repository" else tmp_path / "src" / "pkg"
    start.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(start)
    assert main(["check", "--json", "r.json"]) == 2
    captured = capsys.readouterr()
    looked = f"in {tmp_path}" if where == "repository" else f"in {start} and each folder above it up to {tmp_path}"
    assert captured.err == (f"posenc-spec check: error: nothing to check: no pyproject.toml with a [tool.posenc-spec] "
                            f"table {looked} (the repository root); declare targets in one, or give --config FILE, "
                            "a TARGET, or --builtin (the reference implementations posenc-spec ships)\n")
    assert captured.out == "" and not (start / "r.json").exists()


@pytest.mark.parametrize("argv, given", [(["--builtin", TORCH_REFERENCE], "TARGET"),
                                         (["--builtin", "--config", "gate.toml"], "--config")])
def test_builtin_goes_alone(argv, given, capsys):
    """--builtin with a TARGET or --config is a one-line usage error."""
    assert main(["check", *argv]) == 2
    assert capsys.readouterr().err == ("posenc-spec check: error: --builtin checks the reference implementations "
                                       f"posenc-spec ships: give it without {given}\n")


def test_a_near_miss_table_is_a_usage_error_not_a_pass(tmp_path, monkeypatch, capsys):
    """[tool.posenc_spec] (underscore) in the repository's pyproject.toml: exit 2 naming the
    slip, the file and the right spelling; before, check fell back to another default and passed."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.posenc_spec]\ntarget = "reference_impls.torch_impl:positional_'
                                             'encoding"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    assert capsys.readouterr().err == (f"posenc-spec check: error: {tmp_path / 'pyproject.toml'}: [tool.posenc_spec] "
                                       "is not read; did you mean [tool.posenc-spec]?\n")


def test_junit_and_github_annotations(tmp_path, monkeypatch, capsys):
    """--junitxml writes one testsuite per target; under GitHub Actions every failing check
    is an ::error line, one per check kind (and none for a target that conforms)."""
    import xml.etree.ElementTree as ElementTree

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    junit = tmp_path / "j.xml"
    assert main(["check", TORCH_REFERENCE, "--convention", "concat", "--max-positions", "64",
                 "--junitxml", str(junit)]) == 1
    printed = capsys.readouterr().out
    errors = [line for line in printed.splitlines() if line.startswith("::error ")]
    assert errors and "title=posenc-spec formula::" in errors[0], printed
    assert len(errors) == len({line.split("title=", 1)[1].split("::", 1)[0] for line in errors}), errors
    suites = ElementTree.parse(junit).getroot().findall("testsuite")
    assert len(suites) == 1 and int(suites[0].get("failures")) > 0
    assert main(["check", TORCH_REFERENCE, "--max-positions", "64", "--annotations", "github"]) == 0
    assert "::error" not in capsys.readouterr().out


def test_failures_say_what_to_do(tmp_path, capsys):
    """A timestep function checked as a table: its one cause said once, with --api timesteps
    as the likely fix; a table declared under the wrong preset is told the one it computes (in
    the JSON; the text says the hint that names the slip instead)."""
    out = tmp_path / "r.json"
    assert main(["check", f"{HERE}:timesteps_only", "--max-positions", "64", "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    assert printed.count("every call failed the same way") == 1 and "try --api timesteps" in printed, printed
    assert "FAIL  call[" not in printed, printed
    assert _report(out)["targets"][0]["advice"][0].startswith("every call failed the same way")
    assert main(["check", TORCH_REFERENCE, "--convention", "concat", "--max-positions", "64", "--json", str(out)]) == 1
    nearest = _report(out)["targets"][0]["nearest"]
    assert nearest["name"] == "vaswani" and "declare --convention vaswani" in nearest["message"], nearest
    printed = capsys.readouterr().out
    assert "(slip: layout)" in printed and "nearest:" not in printed, printed


# A target that conforms only where a module was imported before it: what --preload promises.
PRELOADED_TARGET = '''
import sys

def table(n, d):
    from reference_impls.numpy_vectorized import positional_encoding
    table = positional_encoding(n, d)
    return table if "posenc_preloaded_marker" in sys.modules else table + 1.0
'''


@pytest.fixture
def preload_folder(tmp_path, monkeypatch):
    """A working folder with the marker module (importable from it) and the target file."""
    (tmp_path / "posenc_preloaded_marker.py").write_text("LOADED = True\n")
    (tmp_path / "preloaded.py").write_text(PRELOADED_TARGET)
    (tmp_path / "dies.py").write_text("import os\nos._exit(3)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_preloaded_modules_are_there_before_the_target(preload_folder, capsys):
    """``--preload`` imports a module in the process every target's child is forked from: the
    target sees it without importing it; without ``--preload`` (another root) it does not."""
    argv = ["check", f"{preload_folder / 'preloaded.py'}:table", "--max-positions", "64"]
    assert main([*argv, "--preload", "posenc_preloaded_marker"]) == 0, capsys.readouterr().out
    assert main(argv) == 1, capsys.readouterr().out


@pytest.mark.parametrize(("preload", "words"), [
    ("no_such_module_here", "--preload no_such_module_here: raised ModuleNotFoundError"),
    ("dies", "--preload dies: the gate's template process failed while starting"),
])
def test_a_preload_that_cannot_be_imported_is_a_usage_error(preload_folder, capsys, preload, words):
    """A missing module, or one that kills the process importing it: exit 2 and one line
    naming it, before any target runs."""
    assert main(["check", TORCH_REFERENCE, "--preload", preload]) == 2
    error = capsys.readouterr().err
    assert words in error and error.count("\n") == 1 and "Traceback" not in error, error


@pytest.mark.parametrize("argv", [["check"], ["identify"], ["plot", "--out", "out"]])
@pytest.mark.parametrize("preload", ["not a module", "json,,os", "2fast"])
def test_a_preload_that_is_no_module_name_is_a_usage_error(argv, preload, capsys):
    """Every command that runs targets refuses a --preload that is no module name, by name."""
    assert main([argv[0], TORCH_REFERENCE, "--preload", preload, *argv[1:]]) == 2
    error = capsys.readouterr().err
    assert f"--preload must be module names such as transformers.modeling_utils, got {preload!r}" in error, error
    assert error.count("\n") == 1, error


def _stopped(checks: dict, stopped: str) -> list[str]:
    return [name for name, check in checks.items() if check["status"] == "skipped" and stopped in check["reason"]]


def test_fail_fast_stops_a_target_at_its_first_failed_check(tmp_path, capsys):
    """An interleaved table declared 'concat' under --fail-fast: exit 1; the 50x8 call fails
    its formula, the grid's later calls are still made (the hint reads them: the same hint as
    a full run), the determinism repeats and the sequences are not, and their checks say why."""
    out = tmp_path / "r.json"
    assert main(["check", TORCH_REFERENCE, "--convention", "concat", "--fail-fast", "--json", str(out)]) == 1
    target = _report(out)["targets"][0]
    checks = {check["id"]: check for check in target["checks"]}
    assert checks["formula[50x8]"]["status"] == "failed" and checks["formula[4096x64]"]["status"] == "failed"
    skipped = _stopped(checks, "--fail-fast stopped this target at its first failed check, formula[50x8]")
    assert any(name.startswith("determinism") for name in skipped) and "grow[d=16]" in skipped, skipped
    assert [hint["slips"] for hint in target["hints"]] == [["layout"]], target["hints"]


def test_fail_fast_stops_at_the_first_call_that_changes_global_state(tmp_path, capsys):
    """A right table from a call that leaves torch's default dtype changed, under --fail-fast:
    global-state fails with the first call; the grid's later calls are made, the others not."""
    out = tmp_path / "r.json"
    assert main(["check", "meta_tests.corpus.wrong:leaves_default_dtype_float64", "--fail-fast",
                 "--json", str(out)]) == 1
    checks = {check["id"]: check for check in _report(out)["targets"][0]["checks"]}
    assert checks["call[50x8]"]["status"] == "passed" and checks["formula[50x8]"]["status"] == "passed"
    assert checks["global-state"]["status"] == "failed" and "default dtype" in checks["global-state"]["reason"]
    assert checks["call[50x4]"]["status"] == "passed", checks["call[50x4]"]
    skipped = _stopped(checks, "--fail-fast stopped this target at its first failed check, global-state")
    assert "grow[d=16]" in skipped, skipped


def test_fail_fast_changes_nothing_for_a_conforming_target(tmp_path, capsys):
    """A conforming target: the same checks, statuses and reasons with or without --fail-fast."""
    reports = []
    for extra in ([], ["--fail-fast"]):
        out = tmp_path / f"r{len(extra)}.json"
        assert main(["check", TORCH_REFERENCE, "--max-positions", "64", "--json", str(out), *extra]) == 0
        checks = _report(out)["targets"][0]["checks"]
        reports.append([(check["id"], check["status"], check["reason"]) for check in checks])
    assert reports[0] == reports[1]


def test_a_closed_standard_output_is_no_error(tmp_path):
    """check -v | head -1: once the reader of standard output has gone, the run goes on
    quietly: nothing on stderr, the JSON report written, the exit status the verdict (1)."""
    import subprocess
    import sys

    out = tmp_path / "r.json"
    command = [sys.executable, "-m", "posenc_spec", "check", f"{HERE}:random_table", "--max-positions", "64", "-v",
               "--json", str(out)]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    header = process.stdout.readline()
    process.stdout.close()  # the target's lines come after its run: they meet a closed pipe
    status, errors = process.wait(timeout=300), process.stderr.read().decode()
    process.stderr.close()
    assert header.startswith(b"posenc-spec ") and (status, errors) == (1, ""), (header, status, errors)
    assert _report(out)["status"] == "does-not-conform"
