"""``identify`` knows the slips: an answer that is a known slip of a nearby member (the preset
it is one slip away from, or the declared convention) says so, naming the slip, and ``init``
writes it only with ``--accept-slip``; the same answer declared on purpose is no slip. Its
acceptance check is the user's: under ``strict`` a note fails it."""

from __future__ import annotations

import tomllib

import pytest

from posenc_spec.cli import main
from spec_tests.core.projects import identify, make_project
from spec_tests.core.test_identify_init_every_family import TARGETS

SLIPS = TARGETS + '''

def i_over_d(n, d):  # `i/d` where the formula has `2i/d`: base 100 where 10000 is meant
    position = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) / 2 * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
    return pe


def rope_i_over_d(head_dim):  # `i/d` where `2i/d` belongs: theta 707.107, the square root of Llama 3's 500000
    return 1.0 / (500000.0 ** (torch.arange(0, head_dim // 2, dtype=torch.float32) / head_dim))


def geometric_slopes(n):  # 2 ** (-8 h / n) for every head count
    return torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float32)


def meshgrid_swapped(h, w, dim):  # MAE's table with meshgrid's arguments the other way round
    if dim % 4:
        raise ValueError("the width must be a multiple of 4")
    rows, cols = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij")

    def axis(d, pos):
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    return np.concatenate([axis(dim // 2, rows), axis(dim // 2, cols)], axis=1)
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository of its own holding enc.py."""
    return make_project(tmp_path, monkeypatch, SLIPS)



CASES = {
    "base 100": (["enc:i_over_d"], "exponent-i-over-d"),
    "rope theta a square root": (["enc:rope_i_over_d", "--api", "rope-freqs"], "exponent-i-over-d"),
    "geometric slopes": (["enc:geometric_slopes", "--api", "alibi-slopes"], "alibi-geometric-slopes"),
    "axes swapped": (["enc:meshgrid_swapped", "--api", "sincos2d", "--grid-convention", "mae"], "axes-swapped"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_identify_names_the_slip_and_init_writes_it_only_when_accepted(project, capsys, case):
    """The answer names the slip in its message and its JSON; init writes nothing (exit 1)
    until --accept-slip, then writes the answer."""
    argv, slip = CASES[case]
    status, answer = identify(*argv)
    assert status == 0 and answer["slip"]["slips"] == [slip], answer
    assert f"slip: {slip}" in answer["message"] and "--accept-slip" in answer["message"], answer["message"]
    capsys.readouterr()
    assert main(["init", *argv]) == 1
    assert "--accept-slip" in capsys.readouterr().err
    assert not (project / "pyproject.toml").exists()
    assert main(["init", *argv, "--accept-slip"]) == 0
    assert tomllib.loads((project / "pyproject.toml").read_text())["tool"]["posenc-spec"]["targets"], "no entry"


@pytest.mark.parametrize("argv", [["enc:i_over_d", "--base", "100"],
                                  ["enc:geometric_slopes", "--api", "alibi-slopes", "--slope-rule", "geometric"],
                                  ["enc:meshgrid_swapped", "--api", "sincos2d", "--grid-convention", "transformers"],
                                  ["enc:rope_i_over_d", "--api", "rope-freqs", "--base", repr(500000.0 ** 0.5)]],
                         ids=["base 100 declared", "geometric declared", "transformers declared", "theta declared"])
def test_an_answer_declared_on_purpose_is_no_slip(project, argv):
    """The same answers, compared with a declaration that states them, are no slip."""
    status, answer = identify(*argv)
    assert status == 0 and "slip" not in answer, answer["message"]


def test_a_preset_answered_without_a_declaration_is_no_slip(project):
    """The meshgrid-swapped table is transformers' preset: without a declaration, no slip."""
    status, answer = identify("enc:meshgrid_swapped", "--api", "sincos2d")
    assert (status, answer["name"]) == (0, "transformers") and "slip" not in answer, answer["message"]


def test_identify_checks_the_answer_under_strict(project):
    """T5's code returns -2**63 unchanged (a note of check); under --strict that note fails the
    answer's check, so the answer is none, as check --strict would say."""
    status, answer = identify("enc:t5_bucket", "--api", "t5-buckets")
    assert (status, answer["check"]) == (0, "conforms") and answer["notes"], answer["message"]
    status, answer = identify("enc:t5_bucket", "--api", "t5-buckets", "--strict")
    assert (status, answer["name"]) == (1, "none") and "strict" in answer["message"], answer["message"]
