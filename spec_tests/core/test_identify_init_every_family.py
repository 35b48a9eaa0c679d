"""``identify`` and ``init`` take what ``check`` takes, for every family: the keys of how a
target is called (signature, ``init``, ``method``, ``kwargs``, the family's call keys) call it
as written, ``init`` writes them with the API and the answer, and ``check`` then passes the
entry. The advice a failing check gives to run ``identify`` is itself a command that works."""

from __future__ import annotations

import json
import shlex
import tomllib

import pytest

from posenc_spec.cli import main
from spec_tests.core.projects import identify, make_project

TARGETS = """\
import math
import numpy as np
import torch


def vaswani(n, d):
    position = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
    return pe


def precompute_freqs_cis(dim, end, theta=10000.0):  # Meta's Llama: the head size first, then the length
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    freqs = torch.outer(torch.arange(end, device=freqs.device), freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def rotate_half(x):  # transformers' apply_rotary_pos_emb
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rotate_every_two(x):  # GPT-J's pairing: (2i, 2i + 1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_interleaved(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_every_two(q) * sin, k * cos + rotate_every_two(k) * sin


def sincos_w_h(w, h, dim):  # MAE's table, its sides given width first
    if dim % 4:
        raise ValueError("the width must be a multiple of 4")
    rows, cols = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij")

    def axis(d, pos):
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    return np.concatenate([axis(dim // 2, cols), axis(dim // 2, rows)], axis=1)


def paper_slopes(n):
    def power_of_two(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return torch.tensor(power_of_two(n))
    closest = 2 ** math.floor(math.log2(n))
    return torch.tensor(power_of_two(closest) + paper_slopes(2 * closest).tolist()[0::2][: n - closest])


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, relative_position, large)
"""

FLUX = ["diffusers.models.transformers.transformer_flux:FluxPosEmbed", "--api", "mrope-cache", "--signature", "ids",
        "--init", "theta=10000", "--init", "axes_dim={axes_dim}"]
# family -> (identify's and init's arguments, the keys the entry must hold; None: absent, the default)
CASES = {
    "sinusoidal": (["enc:vaswani", "--max-positions", "512"], {"convention": "vaswani", "max_positions": 512}),
    "rope": (["enc:apply_rotary_pos_emb", "--api", "rope-apply", "--signature", "q-k-cos-sin", "--x-layout", "bhsd"],
             {"api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": "bhsd", "layout": "half"}),
    "rope-interleaved": (["enc:apply_interleaved", "--api", "rope-apply", "--signature", "q-k-cos-sin"],
                         {"signature": "q-k-cos-sin", "x_layout": "bshd", "layout": "interleaved"}),
    "rope-call": (["enc:precompute_freqs_cis", "--api", "rope-cache", "--call", "f(head_dim, num_positions)",
                   "--cache-form", "complex", "--cache-layout", "compact"],
                  {"api": "rope-cache", "call": "f(head_dim, num_positions)", "cache_call": "length", "base": 10000}),
    "sincos2d": (["enc:sincos_w_h", "--api", "sincos2d", "--signature", "w-h-dim"],
                 {"api": "sincos2d", "signature": "w-h-dim", "convention": "mae"}),
    "alibi": (["enc:paper_slopes", "--api", "alibi-slopes"], {"api": "alibi-slopes", "convention": None}),
    "t5buckets": (["enc:t5_bucket", "--api", "t5-buckets"], {"api": "t5-buckets", "convention": "t5-encoder"}),
    "mrope": (FLUX, {"api": "mrope-cache", "signature": "ids", "init": {"theta": 10000, "axes_dim": "{axes_dim}"}}),
    "mrope-apply": (["diffusers.models.embeddings:apply_rotary_emb", "--api", "mrope-apply", "--signature",
                     "x-cos-sin"], {"api": "mrope-apply", "signature": "x-cos-sin", "layout": "interleaved"}),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository of its own (a .git folder stops the search for pyproject.toml) holding enc.py."""
    return make_project(tmp_path, monkeypatch, TARGETS)



@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_init_writes_an_entry_check_passes(project, capsys, case):
    """init calls the target as the flags say, writes the API, the call keys and the answer,
    and check passes the entry as written."""
    argv, expected = CASES[case]
    if case.startswith("mrope"):
        pytest.importorskip("diffusers")
    assert main(["init", *argv]) == 0, capsys.readouterr()
    entry = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["posenc-spec"]["targets"][0]
    assert {key: entry.get(key) for key in expected} == expected, entry
    capsys.readouterr()
    assert main(["check"]) == 0, capsys.readouterr().out


def test_identify_says_no_pairing_fits_a_rotation_it_does_not_apply(project):
    """An apply function that returns q and k unrotated fits neither pairing: none, exit 1."""
    (project / "enc.py").write_text(TARGETS + "\n\ndef unrotated(q, k, cos, sin, unsqueeze_dim=1):\n    return q, k\n")
    status, answer = identify("enc:unrotated", "--api", "rope-apply", "--signature", "q-k-cos-sin")
    assert (status, answer["name"], answer["convention"]) == (1, "none", None), answer["message"]


def test_the_identify_a_failing_check_advises_calls_the_target_as_check_did(project, capsys):
    """A rotary apply target declared with the wrong pairing fails; the identify command its
    report advises carries the signature and the x layout, and names the pairing that passes."""
    declared = ["enc:apply_rotary_pos_emb", "--api", "rope-apply", "--signature", "q-k-cos-sin",
                "--x-layout", "bhsd", "--rope-layout", "interleaved"]
    assert main(["check", *declared, "--json", "report.json"]) == 1
    capsys.readouterr()
    with open("report.json", encoding="utf-8") as report:
        nearest = json.load(report)["targets"][0]["nearest"]["message"]
    command = shlex.split(nearest.removeprefix("run "))
    assert command[:2] == ["posenc-spec", "identify"], nearest
    status, answer = identify(*command[2:])
    assert (status, answer["convention"]["layout"], answer["check"]) == (0, "half", "conforms"), answer["message"]
