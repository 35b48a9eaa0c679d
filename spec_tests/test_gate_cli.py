"""``posenc-spec check`` and ``identify`` end to end: exit statuses, the JSON, config files,
``[tool.posenc-spec]``, xfails, and no traceback whatever the target does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from posenc_spec.cli import main
from posenc_spec.gate import session

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
CHECK_KEYS = {"name", "passed", "message", "max_error", "tolerance"}
CONVENTION_KEYS = {"layout", "first", "freq_shift", "base", "offset", "scale", "odd"}

# The [tool.posenc-spec] of this repository: the reference implementations gated in CI.
PYPROJECT_EXAMPLE = """\
[tool.posenc-spec]
convention = "vaswani"

[[tool.posenc-spec.targets]]
target = "reference_impls.numpy_loop:positional_encoding"

[[tool.posenc-spec.targets]]
target = "reference_impls.numpy_vectorized:positional_encoding"

[[tool.posenc-spec.targets]]
target = "reference_impls.torch_impl:positional_encoding"

[[tool.posenc-spec.targets]]
target = "reference_impls.timestep:timestep_embedding"
api = "timesteps"
convention = "concat"
"""


def random_table(n, d):
    return np.random.default_rng(0).uniform(-1, 1, size=(n, d))


def exits_hard(n, d):
    os._exit(7)


def zero_padded_vaswani(n, d):
    from reference_impls.family import sinusoidal_encoding

    return sinusoidal_encoding(n, d, "vaswani", odd="zero-pad")


@pytest.fixture(scope="module", autouse=True)
def gate_worker():
    with session() as worker:
        yield worker


def _entry_shape(entry):
    assert set(entry) == {"target", "convention", "conforms", "checks"}, sorted(entry)
    assert set(entry["convention"]) == CONVENTION_KEYS, sorted(entry["convention"])
    for check in entry["checks"]:
        assert set(check) == CHECK_KEYS, check


def test_pyproject_example_conforms(tmp_path, monkeypatch, capsys):
    """With no TARGET, check reads [tool.posenc-spec]: the reference implementations conform
    (exit 0) and the JSON holds one entry per target, in order."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_EXAMPLE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    status = main(["check", "--json", "report.json"])
    output = capsys.readouterr().out
    assert status == 0, output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["conforms"] is True and len(report["targets"]) == 4, output
    for entry in report["targets"]:
        _entry_shape(entry)
    assert report["targets"][3]["convention"]["layout"] == "concat"
    assert "4 of 4 targets conform" in output


def test_wrong_convention_exits_1_and_writes_the_json(tmp_path, capsys):
    """A table under the wrong preset: exit 1, the failures printed, the JSON written."""
    out = tmp_path / "r.json"
    status = main(["check", "reference_impls.torch_impl:positional_encoding", "--convention", "concat",
                   "--max-positions", "64", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 1, printed
    entry = json.loads(out.read_text())
    _entry_shape(entry)
    assert entry["conforms"] is False and entry["convention"]["layout"] == "concat"
    assert "FAIL  formula[50x8]" in printed and "does not conform" in printed, printed


def test_flags_override_the_preset(tmp_path, capsys):
    """--layout concat on vaswani is the concat preset's structure: the concat reference passes."""
    status = main(["check", "reference_impls.timestep:timestep_embedding", "--api", "timesteps",
                   "--layout", "concat", "--max-positions", "64"])
    assert status == 0, capsys.readouterr().out


@pytest.mark.parametrize("flag, value", [("--convention", "nope"), ("--freq-shift", "2"), ("--max-positions", "0"),
                                         ("--odd", "round"), ("--api", "batch"), ("--base", "ten")])
def test_bad_flags_are_usage_errors(flag, value, capsys):
    """A bad convention name or flag value exits 2 with a message naming the flag and value."""
    with pytest.raises(SystemExit) as stopped:
        main(["check", "reference_impls.torch_impl:positional_encoding", flag, value])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert f"error: argument {flag}" in error and value in error, error


@pytest.mark.parametrize("argv, words", [
    (["check", "no_colon_here"], "TARGET must be"),
    (["check", "reference_impls.torch_impl:positional_encoding", "--scale", "0"], "scale must not be 0"),
    (["check", "--convention", "fairseq", "--odd", "ceil", "reference_impls.torch_impl:positional_encoding"],
     "odd='ceil' is defined for freq_shift=0 only"),
    (["check", "reference_impls.torch_impl:positional_encoding", "--config", "x.toml"], "not both"),
])
def test_invalid_combinations_are_usage_errors(argv, words, capsys):
    """Values argparse cannot judge (a malformed TARGET, scale 0, ceil with shift 1) exit 2 too."""
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert words in error and "Traceback" not in error, error


def test_unimportable_target_exits_2_with_json(tmp_path, capsys):
    """A TARGET that cannot be imported: exit 2, the reason printed, the JSON still written."""
    out = tmp_path / "r.json"
    status = main(["check", "no_such_package.module:fn", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 2, printed
    entry = json.loads(out.read_text())
    assert entry["checks"][0] == {"name": "import", "passed": False,
                                  "message": "raised ModuleNotFoundError: No module named 'no_such_package'",
                                  "max_error": None, "tolerance": None}
    assert "cannot be imported" in printed


def test_crashing_target_gets_a_verdict_without_traceback(tmp_path, capfd):
    """os._exit in every call: exit 1, one-line reasons, no traceback from the gate, JSON written."""
    out = tmp_path / "r.json"
    status = main(["check", f"{HERE}:exits_hard", "--max-positions", "64", "--json", str(out)])
    captured = capfd.readouterr()
    assert status == 1, captured.out
    assert "Traceback" not in captured.out + captured.err
    entry = json.loads(out.read_text())
    assert entry["checks"][1]["message"] == "the process exited with status 7 (os._exit or a crash)"


def test_config_with_an_unimportable_target_reports_all(tmp_path, capsys):
    """--config: every target is reported; one that cannot be imported makes the status 2."""
    config = tmp_path / "gate.toml"
    config.write_text(f'max_positions = 64\n\n[[targets]]\ntarget = "{HERE}:zero_padded_vaswani"\nodd = "zero-pad"\n'
                      '\n[[targets]]\ntarget = "missing_module:fn"\n')
    out = tmp_path / "r.json"
    status = main(["check", "--config", str(config), "--json", str(out)])
    capsys.readouterr()
    report = json.loads(out.read_text())
    assert status == 2
    assert [entry["conforms"] for entry in report["targets"]] == [True, False]
    assert report["conforms"] is False


def test_xfails_file_accepts_known_deviations(tmp_path, capsys):
    """Known deviations listed in --xfails do not fail the run; a line that matches no check
    is warned about."""
    xfails = tmp_path / "xfails.txt"
    xfails.write_text("# numpy_loop refuses odd widths\nodd[7]\nodd[65]  # also this one\nformula[1x1]\n")
    status = main(["check", "reference_impls.numpy_loop:positional_encoding", "--odd", "zero-pad",
                   "--max-positions", "64", "--xfails", str(xfails)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "xfail odd[7]" in printed and "warning: xfails entry 'formula[1x1]' matches no check" in printed


def test_json_to_stdout_keeps_stdout_clean(capsys):
    """--json - writes only the JSON to stdout; the summary goes to stderr."""
    status = main(["check", "reference_impls.torch_impl:positional_encoding", "--max-positions", "64",
                   "--json", "-"])
    captured = capsys.readouterr()
    assert status == 0
    assert json.loads(captured.out)["conforms"] is True
    assert "conforms" in captured.err


def test_identify_cli(tmp_path, capsys):
    """identify names the preset (exit 0) and says none, with the nearest, for a random table (exit 1)."""
    out = tmp_path / "id.json"
    assert main(["identify", "reference_impls.torch_impl:positional_encoding", "--json", str(out)]) == 0
    answer = json.loads(out.read_text())
    assert {"target", "convention", "max_error_ratio", "nearest"} <= set(answer)
    assert answer["name"] == "vaswani" and answer["convention"]["layout"] == "interleaved"
    assert main(["identify", f"{HERE}:random_table", "--json", str(out)]) == 1
    answer = json.loads(out.read_text())
    assert answer["convention"] is None and answer["name"] == "none"
    assert answer["nearest"]["max_error_ratio"] > 1
    assert "none: no member of the family fits" in capsys.readouterr().out
