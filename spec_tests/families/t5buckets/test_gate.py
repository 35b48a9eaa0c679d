"""The T5-bucket family as users declare it: the gate in-process, the command line, a
``[tool.posenc-spec]`` table, the pytest plugin and the Python API, usage errors (one line,
exit 2), and ``identify``. The targets are written into a folder of their own: T5's function
with its ``abs()`` guarded (it conforms everywhere, ``-2**(b-1)`` included) and two slips."""

from __future__ import annotations

import json
import textwrap

import pytest

import posenc_spec
from posenc_spec.cli import main
from posenc_spec.gate import check_target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError

TARGETS = textwrap.dedent("""
    import math
    import torch

    def t5(relative_position, bidirectional=True, num_buckets=32, max_distance=128, halve=True):
        relative_position = torch.clamp(relative_position.long(), -max_distance, max_distance)
        buckets = 0
        if bidirectional:
            if halve:
                num_buckets //= 2
            buckets += (relative_position > 0).long() * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        large = max_exact + (torch.log(relative_position.float() / max_exact)
                             / math.log(max_distance / max_exact) * (num_buckets - max_exact)).long()
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return buckets + torch.where(relative_position < max_exact, relative_position, large)

    def causal_flag(relative_position, causal=False, num_buckets=32, max_distance=128):
        return t5(relative_position, not causal, num_buckets, max_distance)

    def halving_forgotten(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        return t5(relative_position, bidirectional, num_buckets, max_distance, halve=False)

    # The buckets of a model of 512 positions, looked up: no |r| beyond 511 has one.
    _LOOKUP = t5(torch.arange(-511, 512))

    def looked_up(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        index = relative_position.long() + 511
        if bool((index < 0).any()) or bool((index >= _LOOKUP.numel()).any()):
            raise IndexError("relative position beyond the model's 512 positions")
        return _LOOKUP[index]

    class Bias(torch.nn.Module):
        def __init__(self, num_buckets, max_distance, heads=2):
            super().__init__()
            self.num_buckets, self.max_distance = num_buckets, max_distance
            self.relative_attention_bias = torch.nn.Embedding(num_buckets, heads)

        def forward(self, q_len, k_len):
            relative = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
            buckets = t5(relative, True, self.num_buckets, self.max_distance)
            return self.relative_attention_bias(buckets).permute(2, 0, 1)
""")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "buckets.py").write_text(TARGETS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _failed(report) -> list[str]:
    return [check.name for check in report.failures()]


def test_correct_function_conforms_and_a_slip_fails_with_its_hint(folder):
    """In-process gate: T5's function conforms; with the halving forgotten it fails range and
    formula, and the hint names the slip and advises no key: the gate hands the function its
    num_buckets, so declaring the count its buckets show would only hand it that count."""
    report = check_target(declare({"target": "buckets:t5", "api": "t5-buckets"}))
    assert report.conforms, _failed(report)
    wrong = check_target(declare({"target": "buckets:halving_forgotten", "api": "t5-buckets"}))
    assert {"range[int64]", "formula[int64]"} <= set(_failed(wrong)), _failed(wrong)
    [hint] = wrong.hints
    assert hint.slips == ("t5-settings", "t5-halving-forgotten") and hint.declare == (), hint.text()
    assert "t5-halving-forgotten" in hint.text() and "if that is intended" not in hint.text(), hint.text()


def test_command_line_renames_an_argument_and_builds_a_bias_module(folder, capsys):
    """check: a function whose flag is `causal` (declared --arg-name bidirectional=causal)
    conforms as a decoder; a bias module built with --init conforms; a wrong target exits 1."""
    assert main(["check", "--api", "t5-buckets", "--convention", "t5-decoder", "--arg-name",
                 "bidirectional=causal", "buckets:causal_flag"]) == 0, capsys.readouterr().out
    assert main(["check", "--api", "t5-buckets", "--signature", "bias", "--init", "num_buckets={num_buckets}",
                 "--init", "max_distance={max_distance}", "--arg-name", "query_length=q_len",
                 "--arg-name", "key_length=k_len", "buckets:Bias"]) == 0, capsys.readouterr().out
    assert main(["check", "--api", "t5-buckets", "buckets:halving_forgotten"]) == 1
    assert "hint: the buckets are those of bidirectional, 64 buckets" in capsys.readouterr().out


def test_pyproject_table_declares_the_family(folder, capsys):
    """A [tool.posenc-spec] table with TOML values (a bool, an int, a table of names) is read as the flags are."""
    (folder / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.posenc-spec]
        api = "t5-buckets"

        [[tool.posenc-spec.targets]]
        target = "buckets:causal_flag"
        bidirectional = false
        num_buckets = 64
        max_distance = 256
        arg_names = {bidirectional = "causal"}
    """), encoding="utf-8")
    assert main(["check", "--json", "report.json"]) == 0, capsys.readouterr().out
    [entry] = json.loads((folder / "report.json").read_text())["targets"]
    declared = entry["declaration"]
    assert (declared["num_buckets"], declared["bidirectional"], declared["bucket_args"]) == \
        (64, False, {"bidirectional": "causal"}), declared


def test_python_api_takes_a_function_object(folder):
    """posenc_spec.check takes the function itself and the family's keys as keyword arguments."""
    import buckets

    report = posenc_spec.check(buckets.t5, api="t5-buckets", convention="wavlm")
    assert report.conforms, _failed(report)
    with pytest.raises(UsageError, match="num_buckets must be a number, got '32'"):
        posenc_spec.check(buckets.t5, api="t5-buckets", num_buckets="32")


def test_plugin_makes_an_item_of_each_check(pytester):
    """--posenc-target with the family's flags: every check an item, the slip's checks failed."""
    (pytester.path / "buckets.py").write_text(TARGETS, encoding="utf-8")
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "-n", "0", "--posenc-target",
                                          "buckets:halving_forgotten", "--posenc-api", "t5-buckets",
                                          "--posenc-convention", "t5-encoder", "--posenc-items", "check")
    output = "\n".join(result.outlines)
    assert result.ret == 1 and "FAILED posenc::buckets:halving_forgotten::range[int64]" in output, output
    assert "hint: the buckets are those of bidirectional, 64 buckets" in output, output


@pytest.mark.parametrize("arguments, message", [
    (["--convention", "t5_decoder"], "--convention must be one of t5-encoder"),
    (["--num-buckets", "many"], "--num-buckets must be an integer"),
    (["--max-distance", "8"], "--max-distance must exceed max_exact = 8"),
    (["--bidirectional", "yes"], "--bidirectional must be true or false, got 'yes'"),
    (["--compute-dtype", "bfloat16"], "--compute-dtype must be one of float64, float32, float16, got 'bfloat16'"),
    (["--convention", "wavlm", "--compute-dtype", "float16"], "--compute-dtype: log_dtype float16 cannot place"),
    (["--arg-name", "distance=n"], "--arg-name role must be one of relative_position"),
    (["--arg-name", "query_length=q"], "the static signature hands over no query_length"),
    (["--bucket-embedding", "emb"], "--bucket-embedding is read by the bias signature, not by static"),
    (["--model-config", "missing.json"], "--model-config: cannot read the bucket config missing.json"),
    (["--rope-type", "linear"], "--rope-type declares a rotary embedding, not T5 relative-position buckets"),
    (["--signature", "table"], "a table call that takes no length needs an object built for it"),
])
def test_usage_errors_are_one_line_naming_the_flag(folder, capsys, arguments, message):
    """A bad value, a key of another signature or family, a missing file: exit 2, one line naming it."""
    extra = ["--arg-name", "query_length=", "--arg-name", "key_length="] if "table" in arguments else []
    assert main(["check", "--api", "t5-buckets", *arguments, *extra, "buckets:t5"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_identify_names_the_member_and_refuses_a_slip(folder, capsys):
    """identify: T5's function is t5-encoder (check accepts it); under --bidirectional false the
    same code is t5-decoder; the halving forgotten is no member check accepts (exit 1); a bias
    module built for 64 buckets is read from its table."""
    assert main(["identify", "--api", "t5-buckets", "buckets:t5"]) == 0
    assert "buckets:t5: t5-encoder (bidirectional true" in capsys.readouterr().out
    assert main(["identify", "--api", "t5-buckets", "--bidirectional", "false", "buckets:t5"]) == 0
    assert "t5-decoder" in capsys.readouterr().out
    assert main(["identify", "--api", "t5-buckets", "buckets:halving_forgotten"]) == 1
    assert "none: bidirectional, 64 buckets, max_distance 128 fits" in capsys.readouterr().out
    assert main(["identify", "--api", "t5-buckets", "--signature", "bias", "--init", "num_buckets={num_buckets}",
                 "--init", "max_distance={max_distance}", "--arg-name", "query_length=q_len", "--arg-name",
                 "key_length=k_len", "--num-buckets", "64", "buckets:Bias"]) == 0
    assert "buckets:Bias: bidirectional, 64 buckets, max_distance 128" in capsys.readouterr().out


def test_plot_writes_the_bucket_map(folder, capsys):
    """plot writes bucket_map.png for a correct and a wrong target, the summary counting the
    offsets in another bucket; a table size is refused (exit 2)."""
    assert main(["plot", "--api", "t5-buckets", "buckets:t5", "--out", "right"]) == 0
    assert "every bucket of 1025 offsets within its band" in capsys.readouterr().out
    assert main(["plot", "--api", "t5-buckets", "buckets:halving_forgotten", "--out", "wrong"]) == 0
    assert "offsets in another bucket" in capsys.readouterr().out
    for name in ("right", "wrong"):
        assert (folder / name / "bucket_map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", "--api", "t5-buckets", "buckets:t5", "--num-positions", "8", "--out", "sized"]) == 2


def test_check_plots_and_the_python_api_draw_a_failing_target(folder):
    """check --plots writes the bucket map of a target that does not conform; the Python API's
    report.plot() gives the same figure."""
    assert main(["check", "--api", "t5-buckets", "buckets:halving_forgotten", "--plots", "plots"]) == 1
    [written] = list((folder / "plots").rglob("bucket_map.png"))
    assert written.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import buckets

    assert list(posenc_spec.check(buckets.halving_forgotten, api="t5-buckets").plot()) == ["bucket_map"]


def test_max_positions_bounds_the_relative_positions_the_grid_hands(folder):
    """A function that has buckets only for the relative positions of a 512-position model
    conforms under max_positions = 512 (no call hands |r| > 511, the extremes included), and
    fails its extremes without it."""
    report = check_target(declare({"target": "buckets:looked_up", "api": "t5-buckets", "max_positions": 512}))
    assert report.conforms, _failed(report)
    assert not any(check.name.startswith("int-min") for check in report.checks)
    unbounded = check_target(declare({"target": "buckets:looked_up", "api": "t5-buckets"}))
    assert {"call[extremes:int64]", "call[extremes:int32]"} <= set(_failed(unbounded)), _failed(unbounded)
