"""The 2-D sincos family through the real gate: declared in Python, on the command line, in a
``[tool.posenc-spec]`` table, through the pytest plugin and ``posenc_spec.check``; usage
errors in one line; ``identify`` on a correct and a wrong target; the signatures real code
has, each made by the family's adapters with no wrapper written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import posenc_spec
from posenc_spec.cli import main
from posenc_spec.gate import check_target, declare
from posenc_spec.gate.errors import UsageError
from spec_tests.assertions import failure_summary

REPO = Path(__file__).resolve().parents[3]
TARGETS = "spec_tests.families.sincos2d.targets"
CORRECT = f"{TARGETS}:mae"
SWAPPED = f"{TARGETS}:rows_first"
CORPUS = "meta_tests.corpus.sincos2d_correct"


def _check(**keys):
    return check_target(declare({"api": "sincos2d", **keys}))


def assert_conforms(report) -> None:
    assert report.conforms, f"{report.target}: {failure_summary(report)}"


def test_a_correct_target_conforms_and_a_swapped_one_fails_with_its_hint():
    """MAE's table conforms to the mae preset; the same with the row coordinate first fails
    axis-order, and its hint names the slip and the key that declares it."""
    assert_conforms(_check(target=CORRECT))
    report = _check(target=SWAPPED)
    failed = {check.name.split("[")[0] for check in report.failures()}
    assert {"axis-order", "formula"} <= failed, failed
    assert [hint.slips for hint in report.hints] == [("axes-swapped",)], [hint.text() for hint in report.hints]
    assert report.hints[0].declare == (("first_axis", "row"),)
    assert report.nearest["name"] == "transformers", report.nearest


def test_the_same_target_conforms_where_its_convention_is_declared():
    """rows_first is the transformers preset, and mae with first_axis = row."""
    assert_conforms(_check(target=SWAPPED, grid_convention="transformers"))
    assert_conforms(_check(target=SWAPPED, first_axis="row"))


@pytest.mark.parametrize("keys", [
    {"target": "meta_tests.corpus.sincos2d_correct:mae_with_a_pair", "signature": "dim-pair"},
    {"target": f"{TARGETS}:FeatureMapSine", "grid_convention": "detr", "signature": "x",
     "init": {"num_pos_feats": "{half_dim}"}, "in_channels": 3},
    {"target": f"{CORPUS}:moco_v3_square", "grid_convention": "moco-v3", "signature": "dim-size"},
], ids=["dim-pair", "x-module", "dim-size"])
def test_signatures_real_code_has_are_declared_without_a_wrapper(keys):
    """A function of (dim, (H, W)), a module built from init whose forward takes a feature
    map, and a function of (dim, side) on square grids, each declared as it is written."""
    assert_conforms(_check(**keys))


def test_cli_verdicts_and_json(tmp_path, capsys):
    """check --api sincos2d: exit 0 for a conforming target, 1 for a wrong one, with the
    report naming the declared preset."""
    assert main(["check", CORRECT, "--api", "sincos2d", "--convention", "mae"]) == 0, capsys.readouterr().out
    status = main(["check", SWAPPED, "--api", "sincos2d", "--json", str(tmp_path / "report.json")])
    output = capsys.readouterr().out
    assert status == 1, output
    assert "hint: the tables are the declared mae with" in output and "--first-axis row" in output, output
    entry = json.loads((tmp_path / "report.json").read_text())["targets"][0]
    assert entry["status"] == "does-not-conform" and entry["declaration"]["preset"] == "mae", entry["declaration"]


def test_a_pyproject_table_declares_the_family(tmp_path, monkeypatch, capsys):
    """[tool.posenc-spec] with api = "sincos2d" and the family's keys: each target judged under its entry."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.posenc-spec]\napi = "sincos2d"\n\n'
        f'[[tool.posenc-spec.targets]]\ntarget = "{CORRECT}"\n\n'
        f'[[tool.posenc-spec.targets]]\ntarget = "{SWAPPED}"\ngrid_convention = "mae"\nfirst_axis = "row"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    status = main(["check", "--json", "report.json"])
    output = capsys.readouterr().out
    assert status == 0, output
    targets = json.loads((tmp_path / "report.json").read_text())["targets"]
    assert [entry["status"] for entry in targets] == ["conforms", "conforms"], output


def test_the_python_api_checks_a_callable_and_an_import_path():
    """posenc_spec.check with the family's keys, on an import path and on the function itself."""
    from spec_tests.families.sincos2d.targets import rows_first

    assert posenc_spec.check(CORRECT, api="sincos2d").conforms
    report = posenc_spec.check(rows_first, api="sincos2d", grid_convention="mae")
    assert not report.conforms and report.result("axis-order[7x11:d=8]").status == "failed"


def test_the_plugin_runs_the_family(pytester):
    """The pytest plugin with a gate.toml of api = "sincos2d": every check an item, the swapped
    target's axis-order items failing."""
    pytester.syspathinsert(str(REPO))
    (pytester.path / "gate.toml").write_text(
        f'api = "sincos2d"\n\n[[targets]]\ntarget = "{CORRECT}"\n\n[[targets]]\ntarget = "{SWAPPED}"\n')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "-n", "0", "--posenc-config", "gate.toml",
                                          "--posenc-items", "check")
    output = "\n".join(result.outlines)
    assert int(result.ret) == 1, output
    assert f"FAILED posenc::{SWAPPED}@mae::axis-order[7x11:d=8]" in output, output
    assert f"FAILED posenc::{CORRECT}" not in output, output


@pytest.mark.parametrize("argv, words", [
    (["--convention", "maee"], "--convention must be one of mae, mae-cls"),
    (["--first-axis", "rows"], "--first-axis must be one of row, col"),
    (["--base", "1"], "--base must be"),
    (["--offset", "1", "--convention", "diffusers"], "--offset is not a parameter of position_transform 'relative'"),
    (["--first", "tan"], "--first must be one of sin, cos"),
    (["--position-transform", "crop"], "--position-transform 'crop' needs --pos-embed-max-size"),
    (["--patch-size", "2"], "--patch-size: the h-w-dim signature hands no sample of patches"),
    (["--signature", "adds-to-patches"], "--signature adds-to-patches needs --init"),
    (["--rope-type", "linear"], "--rope-type declares a rotary embedding, not a 2-D sincos table"),
    (["--signature", "dim_pair"], "--signature must be one of h-w-dim, w-h-dim"),
])
def test_usage_errors_are_one_line_with_exit_2(argv, words, capsys):
    """A misspelled value, a parameter of another transform, a key of another family or a
    signature without what it needs: exit 2, one line naming the flag."""
    status = main(["check", CORRECT, "--api", "sincos2d", *argv])
    error = capsys.readouterr().err.strip()
    assert status == 2 and len(error.splitlines()) == 1, error
    assert words in error and "Traceback" not in error, error


def test_a_key_of_the_family_in_python_is_validated_there():
    """posenc_spec.check raises UsageError naming the key for a bad value of the family's keys."""
    with pytest.raises(UsageError, match="extra_tokens needs output_layout 'tokens'"):
        posenc_spec.check(CORRECT, api="sincos2d", grid_convention="detr", extra_tokens=1)


def test_identify_names_the_member_and_how_it_differs(capsys):
    """identify: the correct target is mae, checked on the whole grid; the swapped one is the
    transformers preset, differing from the declared mae by first_axis: the axes-swapped slip of mae."""
    assert main(["identify", CORRECT, "--api", "sincos2d", "--json", "-"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["name"] == "mae" and answer["check"] == "conforms", answer
    assert main(["identify", SWAPPED, "--api", "sincos2d", "--convention", "mae"]) == 0
    output = capsys.readouterr().out
    assert "transformers: declare --convention transformers" in output, output
    assert 'first_axis "row" (declared "col")' in output and "(slip: axes-swapped)" in output, output


def test_plot_writes_the_difference_and_the_halves(tmp_path, capsys):
    """plot --api sincos2d: a correct target's pictures with its verdict, a swapped one's naming
    the worst element; both PNGs written."""
    assert main(["plot", CORRECT, "--api", "sincos2d", "--out", str(tmp_path / "correct")]) == 0
    assert "every element within tolerance" in capsys.readouterr().out
    assert main(["plot", SWAPPED, "--api", "sincos2d", "--out", str(tmp_path / "swapped")]) == 0
    output = capsys.readouterr().out
    assert "out of bound; worst at" in output, output
    for folder in ("correct", "swapped"):
        for name in ("difference.png", "halves.png"):
            assert (tmp_path / folder / name).read_bytes().startswith(b"\x89PNG"), (folder, name)


def test_plot_takes_no_sizes(capsys):
    """--num-positions sizes a 1-D table: plot --api sincos2d refuses it in one line."""
    assert main(["plot", CORRECT, "--api", "sincos2d", "--num-positions", "8", "--out", "unused"]) == 2
    assert "--num-positions sizes a table; it does not apply to" in capsys.readouterr().err


def test_identify_answers_none_for_a_table_no_member_is(capsys):
    """Every frequency 1 (an exponent floor-divided to 0) is no member of the family: identify
    answers none (exit 1) and names the nearest member and by how much it misses."""
    target = "meta_tests.corpus.sincos2d_wrong:exponent_floor_division"
    assert main(["identify", target, "--api", "sincos2d", "--json", "-"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["name"] == "none" and answer["convention"] is None, answer
    assert answer["nearest"]["max_error_ratio"] > 1 and "misses the fitted tables" in answer["message"], answer


def test_a_cos_first_table_is_declared_by_first():
    """A table whose pairs hold the cosine first conforms under first = "cos"; declared as MAE's
    sin-first table it fails, and the hint advises that key, which makes it conform."""
    target = f"{TARGETS}:mae_cos_first"
    assert_conforms(_check(target=target, first="cos"))
    report = _check(target=target)
    assert not report.conforms
    assert [hint.declare for hint in report.hints] == [(("first", "cos"),)], [hint.text() for hint in report.hints]
    assert report.hints[0].slips == ("sin-cos-swapped",)
