"""A hint speaks the user's language: one renderer, the hint holds the keys and their values,
and the surface the declaration came from spells them: ``posenc_spec.check`` keywords from
Python (``first='cos'``, with ``Report.hints`` structured), flags on the command line
(``--first cos``), TOML keys for a config file (``first = "cos"``). The JSON carries every
spelling; the Python API's advice, applied as written, conforms."""

from __future__ import annotations

import json

import numpy as np
import pytest

import posenc_spec
from posenc_spec.cli import main
from posenc_spec.testing import assert_conforms
from spec_tests.core.projects import make_project

QUICK = {"max_positions": 64, "odd": "skip"}  # the smallest grid that tells the conventions apart
SPELLED = {"python": "declare first='cos'", "flags": "declare --first cos", "toml": 'declare first = "cos"'}
SWAPPED = """\
import numpy as np

def swapped(n, d):
    angles = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)
    table = np.empty((n, d))
    table[:, 0::2], table[:, 1::2] = np.cos(angles), np.sin(angles)
    return table
"""


def swapped(n, d):
    angles = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)
    table = np.empty((n, d))
    table[:, 0::2], table[:, 1::2] = np.cos(angles), np.sin(angles)
    return table


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository of its own holding enc.py."""
    return make_project(tmp_path, monkeypatch, SWAPPED)


def _spelled_only(text: str, spelling: str) -> None:
    assert SPELLED[spelling] in text and all(SPELLED[other] not in text for other in SPELLED if other != spelling), text


def test_python_hints_are_structured_and_their_keys_conform():
    """Report.hints: the slip id, the text in check's keywords, the keys with their values;
    check given those keys conforms."""
    report = posenc_spec.check(swapped, **QUICK)
    [hint] = report.hints
    assert (hint.slips, hint.keys) == (("sin-cos-swapped",), {"first": "cos"}), hint
    _spelled_only(hint.text, "python")
    _spelled_only(report.text(), "python")
    assert posenc_spec.check(swapped, **QUICK, **hint.keys).conforms


def test_assert_conforms_speaks_python_not_the_command_line():
    """assert_conforms's message gives the hint in keywords and says how to see every check
    from Python, not with a command-line flag."""
    with pytest.raises(AssertionError) as failure:
        assert_conforms(swapped, **QUICK)
    message = str(failure.value)
    _spelled_only(message, "python")
    assert "-v lists every check" not in message and ".text(verbose=True) lists every check" in message, message


def test_the_command_line_spells_flags_and_a_config_file_toml_keys(project, capsys):
    """The same slip: check with flags advises flags; the same target in pyproject.toml advises
    TOML keys; the JSON carries every spelling and the keys as an object."""
    assert main(["check", "enc:swapped", "--max-positions", "64", "--odd", "skip", "--json", "flags.json"]) == 1
    _spelled_only(capsys.readouterr().out, "flags")
    (project / "pyproject.toml").write_text('[[tool.posenc-spec.targets]]\ntarget = "enc:swapped"\n'
                                            'max_positions = 64\nodd = "skip"\n')
    assert main(["check"]) == 1
    _spelled_only(capsys.readouterr().out, "toml")
    with open("flags.json", encoding="utf-8") as report:
        [hint] = json.load(report)["targets"][0]["hints"]
    assert (hint["flags"], hint["keys"], hint["keywords"], hint["declare"]) == (
        "--first cos", 'first = "cos"', "first='cos'", {"first": "cos"}), hint


def test_a_key_given_as_a_flag_over_a_config_file_is_advised_as_that_flag(project, capsys):
    """check --config with --first over the file's keys: the hint advises the flag, not the
    file's key (which the flag would still override); given as written, the target conforms."""
    (project / "gate.toml").write_text('[[targets]]\ntarget = "enc:swapped"\nmax_positions = 64\nodd = "skip"\n')
    assert main(["check", "--config", "gate.toml", "--first", "sin"]) == 1
    _spelled_only(capsys.readouterr().out, "flags")
    assert main(["check", "--config", "gate.toml", "--first", "sin", "--first", "cos"]) == 0


def geometric_slopes(n):
    import torch

    return torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float32)


def test_alibis_nearest_member_is_spelled_as_declared(project, capsys):
    """ALiBi's nearest member names its keys as the declaration was written: check's keywords
    from Python, flags on the command line (never Python reprs on the command line)."""
    report = posenc_spec.check(geometric_slopes, api="alibi-slopes")
    assert "(slope_rule='geometric')" in report.nearest, report.nearest
    (project / "slopes.py").write_text("import torch\n\n\ndef geometric_slopes(n):\n    return torch.tensor("
                                       "[2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float32)\n")
    assert main(["check", "slopes:geometric_slopes", "--api", "alibi-slopes", "--json", "slopes.json"]) == 1
    capsys.readouterr()
    with open("slopes.json", encoding="utf-8") as written:
        nearest = json.load(written)["targets"][0]["nearest"]["message"]
    assert "(--slope-rule geometric)" in nearest and "'" not in nearest.partition(":")[0], nearest
