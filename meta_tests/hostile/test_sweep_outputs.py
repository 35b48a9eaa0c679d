"""Report destinations that would destroy what the run reads or writes: ``--json`` (of
``check``, ``diff`` and ``identify``) or ``snapshot --out`` naming a target's source file,
the configuration, the xfails file or a snapshot the run reads, and ``--json`` and
``--junitxml`` naming one file (a symlink to it too). Each is one usage line, exit status 2,
before any target runs, and the file is left as it was."""

from __future__ import annotations

import pytest

from posenc_spec import cli

TARGET_SOURCE = "def table(num_positions, dim):\n    raise ValueError('never run')\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder holding a target file, a config naming it and an xfails file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "enc.py").write_text(TARGET_SOURCE)
    (tmp_path / "gate.toml").write_text('[[targets]]\ntarget = "enc.py:table"\nxfails = "known.txt"\n')
    (tmp_path / "known.txt").write_text("odd\n")
    return tmp_path


@pytest.mark.parametrize(("argv", "file", "said"), [
    (["check", "enc.py:table", "--json", "enc.py"], "enc.py", "--json enc.py is a source file of enc.py:table"),
    (["check", "enc.py:table", "--junitxml", "./enc.py"], "enc.py", "is a source file of enc.py:table"),
    (["check", "--config", "gate.toml", "--json", "gate.toml"], "gate.toml", "is the configuration file"),
    (["check", "--config", "gate.toml", "--junitxml", "known.txt"], "known.txt", "is the xfails file of"),
    (["snapshot", "enc.py:table", "--out", "enc.py", "--force"], "enc.py", "--out enc.py is a source file"),
    (["diff", "known.txt", "gate.toml", "--json", "gate.toml"], "gate.toml", "--json gate.toml is the new snapshot"),
    (["identify", "enc.py:table", "--json", "enc.py"], "enc.py", "--json enc.py is a source file of enc.py:table"),
])
def test_a_destination_that_is_a_file_the_run_reads_is_refused(project, capsys, argv, file, said):
    """The run reads the file; writing the report over it is refused and the file is kept."""
    before = (project / file).read_bytes()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "writing there would replace it" in err and len(err.splitlines()) == 1
    assert (project / file).read_bytes() == before


@pytest.mark.parametrize("junit", ["report.json", "link.json"])
def test_two_reports_to_one_file_are_refused(project, capsys, junit):
    """--json and --junitxml naming one file (directly or by a symlink) is one usage line."""
    (project / "report.json").write_text("kept")
    (project / "link.json").symlink_to(project / "report.json")
    assert cli.main(["check", "enc.py:table", "--json", "report.json", "--junitxml", junit]) == 2
    err = capsys.readouterr().err
    assert "--json and --junitxml name one file" in err and len(err.splitlines()) == 1
    assert (project / "report.json").read_text() == "kept"


def test_two_reports_to_one_new_name_are_refused(project, capsys):
    """A name not there yet, given to both, is one file too."""
    assert cli.main(["check", "enc.py:table", "--json", "new.json", "--junitxml", "sub/../new.json"]) == 2
    assert "name one file" in capsys.readouterr().err
    assert not (project / "new.json").exists()
