"""A user's project for the command tests: a folder of its own (its ``.git`` stops the search
for ``pyproject.toml``) holding ``enc.py``, the working folder and on the import path; and
``identify``'s answer read from its JSON."""

from __future__ import annotations

import json

from posenc_spec.cli import main


def make_project(tmp_path, monkeypatch, source: str):
    """``tmp_path`` as a project whose ``enc.py`` holds ``source``."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "enc.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def identify(*argv) -> tuple[int, dict]:
    """``posenc-spec identify ARGV``'s exit status and its JSON answer."""
    status = main(["identify", *argv, "--json", "answer.json"])
    with open("answer.json", encoding="utf-8") as answer:
        return status, json.load(answer)
