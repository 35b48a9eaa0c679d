"""``identify`` answers for ``check``, and ``init`` writes its answer into pyproject.toml.

identify's answer goes through check's whole grid before it is given: positions rounded to
float16 fit vaswani on the small tables identify fits, and check rejects them at 4096x64,
so the answer is "none" with where it breaks. With a declaration (flags, or the target's
entry in the nearest [tool.posenc-spec]) the answer says how it differs. init appends the
answer as a [[tool.posenc-spec.targets]] entry, keeping every byte of the file, refuses an
entry already there without --force (exit 2), and writes nothing for "none" (exit 1)."""

from __future__ import annotations

import tomllib

import pytest

from posenc_spec.cli import main
from spec_tests.core.projects import identify, make_project

TARGETS = """\
import math
import torch

def _table(position, d):
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(position.shape[0], d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position[:, None] * div), torch.cos(position[:, None] * div)
    return pe

def vaswani(n, d):
    return _table(torch.arange(n, dtype=torch.float32), d)

def concat(n, d):
    table = vaswani(n, d)
    return torch.cat([table[:, 0::2], table[:, 1::2]], dim=1)

def float16_positions(n, d):
    return _table(torch.arange(n).to(torch.float16).float(), d)

class AddsToX(torch.nn.Module):  # the PyTorch tutorial's shape: forward(x) returns x + the table

    def __init__(self, d_model, max_len):
        super().__init__()
        self.register_buffer("pe", vaswani(max_len, d_model)[:, None, :])

    def forward(self, x):
        return x + self.pe[: x.size(0)]
"""
OLD = b'[project]\r\nname = "enc"   # a comment init keeps\r\n\r\n[tool.ruff]\r\nline-length = 100'


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository of its own (a .git folder stops the search for pyproject.toml) holding enc.py."""
    return make_project(tmp_path, monkeypatch, TARGETS)



def test_identify_names_none_where_check_rejects_the_fit(project):
    """float16 positions: the fitted tables are vaswani's, check fails formula[4096x64];
    the answer is none, vaswani the nearest, with the check, its worst row and the hint."""
    status, answer = identify("enc:float16_positions")
    assert status == 1 and answer["name"] == "none" and answer["nearest"]["name"] == "vaswani", answer["message"]
    assert "check rejects it on its whole grid" in answer["message"] and "first formula[4096x64]" in answer["message"]
    assert "row 2049 of 4096x64 is position 2049 computed as 2048" in answer["message"], answer["message"]
    assert answer["hints"][0]["slips"] == ["positions-float16"]


def test_identify_says_how_the_answer_differs_from_the_declaration(project):
    """Declared by flags, or in the nearest [tool.posenc-spec]: the difference in words."""
    status, answer = identify("enc:concat", "--max-positions", "64", "--convention", "vaswani")
    assert status == 0 and answer["declared"] == {"source": "the flags",
                                                  "differences": ["layout concat where interleaved is declared"]}
    (project / "pyproject.toml").write_text('[[tool.posenc-spec.targets]]\ntarget = "enc:concat"\n'
                                            'convention = "concat"\nbase = 500\n')
    status, answer = identify("enc:concat", "--max-positions", "64")
    assert answer["declared"]["differences"] == ["base 10000 where 500 is declared"], answer["message"]
    assert answer["message"].endswith("against the declaration in "
                                      f"{project / 'pyproject.toml'}: base 10000 where 500 is declared")


def test_init_appends_the_answer_and_keeps_every_byte(project, capsys):
    """CRLF, a comment and no final newline: the old bytes come first, unchanged; the file
    reads back with the new entry, and check passes on what init wrote."""
    path = project / "pyproject.toml"
    path.write_bytes(OLD)
    assert main(["init", "enc:concat", "--max-positions", "64"]) == 0
    data = path.read_bytes()
    assert data.startswith(OLD) and b"\r\n[[tool.posenc-spec.targets]]\r\n" in data, data
    parsed = tomllib.loads(data.decode())
    assert parsed["project"] == {"name": "enc"} and parsed["tool"]["ruff"] == {"line-length": 100}
    assert parsed["tool"]["posenc-spec"]["targets"] == [{"target": "enc:concat", "convention": "concat",
                                                         "odd": "error", "max_positions": 64}]
    assert "added [[tool.posenc-spec.targets]]" in capsys.readouterr().out
    assert main(["check"]) == 0


def test_init_creates_the_file_and_refuses_an_entry_already_there(project, capsys):
    """No pyproject.toml: init makes one. The same target again: one line, exit 2, the file
    as it was; --force replaces the entry (here with the same answer: the same bytes)."""
    path = project / "pyproject.toml"
    assert main(["init", "enc:vaswani", "--max-positions", "64"]) == 0
    written = path.read_bytes()
    capsys.readouterr()
    assert main(["init", "enc:vaswani", "--max-positions", "64"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already declares enc:vaswani" in err and "--force" in err, err
    assert path.read_bytes() == written
    assert main(["init", "enc:vaswani", "--max-positions", "64", "--force"]) == 0
    assert path.read_bytes() == written


def test_init_writes_nothing_for_none(project, capsys):
    """identify's "none" is refused with its reason, exit 1, and no file is made."""
    assert main(["init", "enc:float16_positions"]) == 1
    err = capsys.readouterr().err
    assert "nothing written" in err and "positions formed in float16" in err, err
    assert not (project / "pyproject.toml").exists()


@pytest.mark.parametrize(("table", "says"), [
    ('[tool.posenc-spec]\ntarget = "enc:vaswani"\n', "declares one target by its own keys"),
    ('[tool.posenc-spec]\ntargets = [{target = "enc:vaswani"}]\n', "cannot be added to this file"),
    ('[tool.posenc_spec]\nconvention = "concat"\n', "did you mean [tool.posenc-spec]"),
], ids=["one target by its own keys", "an inline array", "a near miss of the table's name"])
def test_init_refuses_a_file_it_cannot_extend(project, capsys, table, says):
    """A file whose table a text append would change or break: one line, exit 2, the file kept."""
    path = project / "pyproject.toml"
    path.write_text(table)
    assert main(["init", "enc:concat", "--max-positions", "64"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert path.read_text() == table


@pytest.mark.parametrize(("argv", "says"), [
    (["--api", "table", "--num-buckets", "32"], "--num-buckets describes T5 relative-position buckets"),
    (["--api", "table", "--cache-form", "complex"], "--cache-form describes a rotary embedding"),
], ids=["T5's key", "a rotary key"])
def test_identify_refuses_another_familys_keys_naming_it(project, capsys, argv, says):
    """A key of another family than the API's is refused, naming the family that reads it."""
    assert main(["identify", "enc:vaswani", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def test_identify_and_init_call_a_target_as_declared(project, capsys):
    """A module called through a signature and init (the tutorial's adds-to-x) is identified
    called so, and init writes the keys that say how to call it: check then conforms."""
    call = ["enc:AddsToX", "--signature", "adds-to-x", "--init", "d_model={dim}", "--init", "max_len={num_positions}",
            "--max-positions", "64"]
    status, answer = identify(*call)
    assert (status, answer["name"]) == (0, "vaswani"), answer
    assert main(["init", *call]) == 0
    entry = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["posenc-spec"]["targets"][0]
    assert {key: entry.get(key) for key in ("signature", "init", "x_layout")} == {
        "signature": "adds-to-x", "init": {"d_model": "{dim}", "max_len": "{num_positions}"}, "x_layout": "sbd"}, entry
    capsys.readouterr()
    assert main(["check", "--max-positions", "64"]) == 0, capsys.readouterr().out
