"""ALiBi through the real gate, declared every way a user can: ``check_target`` on a declaration,
the command line, a ``[tool.posenc-spec]`` table, the pytest plugin and ``posenc_spec.check``;
and every bad declaration refused in one line with exit status 2. The targets are small
functions written to a file, as a user's module is; a declared ``num_heads`` keeps each
run to one head count."""

from __future__ import annotations

import re

import pytest

import posenc_spec
from posenc_spec.cli import main
from posenc_spec.gate import check_target, declare
from posenc_spec.gate.errors import UsageError
from spec_tests.families.alibi.user_targets import TARGETS

HEADS = 12  # a count with the paper's interleave


def _failed(report) -> list[str]:
    return [check.name for check in report.failures()]


def test_check_target_judges_slopes_and_a_module(impl):
    """Declared in Python, the paper's slopes and a bidirectional module conform at 12 heads; the
    geometric slopes fail formula, with the hint that names them and the keys that declare them."""
    slopes = check_target(declare({"target": "impl:paper_slopes", "api": "alibi-slopes", "num_heads": HEADS}))
    module = check_target(declare({"target": "impl:Bidirectional", "api": "alibi-bias", "signature": "module-ij",
                                   "init": {"heads": "{num_heads}"}, "convention": "bidirectional",
                                   "num_heads": HEADS}))
    assert slopes.conforms and module.conforms, (_failed(slopes), _failed(module))
    assert "decode[p=31]" in [check.name for check in module.checks]
    wrong = check_target(declare({"target": "impl:geometric_slopes", "api": "alibi-slopes",
                                  "num_heads": HEADS}))
    assert _failed(wrong) == ["formula[h=12]", "head-ratio[h=12]"], _failed(wrong)
    assert [hint.as_dict()["keys"] for hint in wrong.hints] == ['slope_rule = "geometric"']


def test_command_line_exit_statuses(impl, capsys):
    """check exits 0 for a conforming target, 1 for a failing one, and says which check failed."""
    assert main(["check", "--api", "alibi-bias", "--signature", "heads-length-max", "--convention", "mpt",
                 "--num-heads", str(HEADS), "impl:mpt_bias"]) == 0
    assert main(["check", "--api", "alibi-bias", "--signature", "heads-length-max", "--convention", "mpt",
                 "--alibi-bias-max", "16", "--num-heads", str(HEADS), "impl:mpt_bias"]) == 1
    out = capsys.readouterr().out
    assert "conforms" in out and "under mpt (alibi_bias_max=16)" not in out
    assert re.search(r"FAIL  formula, \d+ of \d+ calls; worst formula\[L=\d+\]: h=12:1x\d+ ", out), out
    assert "hint: the slopes are those of alibi_bias_max 8, not 16; if that is intended, declare " \
           "--alibi-bias-max 8" in out, out


def test_pyproject_table(impl, capsys):
    """A [tool.posenc-spec] table declares ALiBi targets as TOML keys: both conform."""
    (impl / "pyproject.toml").write_text(
        '[tool.posenc-spec]\nattention_heads = 12\n\n'
        '[[tool.posenc-spec.targets]]\ntarget = "impl:paper_slopes"\napi = "alibi-slopes"\n\n'
        '[[tool.posenc-spec.targets]]\ntarget = "impl:Bidirectional"\napi = "alibi-bias"\nsignature = "module-ij"\n'
        'init = {heads = "{num_heads}"}\nalibi_convention = "bidirectional"\n')
    assert main(["check"]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.count(": conforms") == 2


def test_pytest_plugin(pytester):
    """The plugin turns each ALiBi check into an item: the geometric slopes fail formula with the hint."""
    (pytester.path / "impl.py").write_text(TARGETS)
    (pytester.path / "gate.toml").write_text('num_heads = 12\napi = "alibi-slopes"\n\n'
                                             '[[targets]]\ntarget = "impl:paper_slopes"\n\n'
                                             '[[targets]]\ntarget = "impl:geometric_slopes"\n')
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "-n", "0", "--posenc-config", "gate.toml",
                                          "--posenc-items", "check")
    output = "\n".join(result.outlines + result.errlines)
    assert int(result.ret) == 1, output
    assert "FAILED posenc::impl:geometric_slopes@paper (num_heads=12)::formula[h=12]" in output, output
    assert "hint: the slopes are one geometric sequence" in output, output
    assert "Traceback" not in output, output


def test_python_api_takes_the_function_itself(impl):
    """posenc_spec.check gates a function object (forked from this process) with ALiBi keys."""
    import impl as module

    report = posenc_spec.check(module.mpt_bias, api="alibi-bias", signature="heads-length-max",
                               convention="mpt", num_heads=HEADS)
    assert report.conforms, _failed(report)
    wrong = posenc_spec.check(module.mpt_bias, api="alibi-bias", signature="heads-length-max",
                              convention="bidirectional", num_heads=HEADS)
    assert "formula[L=7]" in _failed(wrong) and "hint: the bias has the key-last form" in wrong.text(), wrong.text()


@pytest.mark.parametrize(("flags", "message"), [
    (["--bias-form", "diagonal"], "--bias-form must be one of causal, symmetric, key, key-last, got 'diagonal'"),
    (["--alibi-bias-max", "nan"], "--alibi-bias-max must be a finite number, got 'nan'"),
    (["--alibi-bias-max", "65"], "--alibi-bias-max must be"),
    (["--num-heads", "0"], "--num-heads must be an integer from 1 to 4096, got '0'"),
    (["--alibi-heads", "8", "--num-heads", "4"], "--alibi-heads 8 exceeds --num-heads 4"),
    (["--alibi-heads", "200"], "--alibi-heads 200 is more than the 128 heads the grid calls: declare the model's "
                               "--num-heads"),
    (["--convention", "blom"], "(did you mean 'bloom'?)"),
    (["--up-to-row-constant", "maybe"], "--up-to-row-constant must be true or false, got 'maybe'"),
    (["--key-positions", "mask-cumsum"], "key_positions 'mask-cumsum' goes with a key-only bias_form"),
    (["--rope-type", "linear"], "--rope-type declares a rotary embedding, not an ALiBi bias"),
    (["--signature", "mask-heads-dtype"], "--signature mask-heads-dtype returns one row of keys for every query"),
    (["--signature", "module-ij", "--init", "dim={head_dim}"], "--init.dim must be one of {num_heads}"),
    (["--x-layout", "bsd"], "--x-layout: the alibi-bias API takes no x"),
    (["--max-positions", "4"], "max_positions 4 is below the 7 keys the ALiBi grid calls every head count with"),
])
def test_bad_declarations_are_one_line_usage_errors(impl, capsys, flags, message):
    """Each bad ALiBi key is refused before anything runs: exit 2, one line naming the flag and value."""
    assert main(["check", "--api", "alibi-bias", *flags, "impl:mpt_bias"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_a_bias_key_for_the_slopes_api_names_the_api_that_reads_it(impl):
    """--api alibi-slopes judges slopes alone: a key of the bias is refused, naming alibi-bias."""
    with pytest.raises(UsageError, match="bias_form is read by --api alibi-bias, not by --api alibi-slopes"):
        declare({"target": "impl:paper_slopes", "api": "alibi-slopes", "bias_form": "causal"})


def test_a_length_the_gate_chose_that_runs_out_of_memory_is_a_note(impl):
    """Code that builds the whole (heads, keys, keys) square conforms with no max_positions: the
    decoding step at 2050 keys the gate chose cannot be allocated under a 256 MiB limit and is
    noted, the shorter calls judged; a max_positions that declares those keys makes it a failure."""
    from posenc_spec.gate.options import run_options

    keys = {"target": "impl:FullSquare", "api": "alibi-bias", "signature": "module-ij",
            "init": {"heads": "{num_heads}"}, "num_heads": HEADS}
    options = run_options(jobs=1, max_memory="256MiB")
    report = check_target(declare(keys), options)
    statuses = {check.name: check.status for check in report.checks}
    assert report.conforms, _failed(report)
    assert (statuses["call[p=2049]"], statuses["formula[p=2049]"], statuses["formula[p=257]"]) == (
        "noted", "skipped", "passed"), statuses
    note = next(check.message for check in report.checks if check.name == "call[p=2049]")
    assert "2050 keys is a length the gate chose (no max_positions declared)" in note, note
    declared = check_target(declare({**keys, "max_positions": 2050}), options)
    assert _failed(declared) == ["call[p=2049]"], _failed(declared)
