"""Every command and table of ``docs/families/t5buckets.md`` as a reader copies it: each
``posenc-spec`` command is listed in :data:`OUTCOMES` with its exit status, parses, and
declares what it means (the declaration validated as ``check`` validates it); the TOML table
reads as a ``pyproject.toml``. ``pytest -m slow`` runs each command too, in a folder holding the
files the docs name, and holds it to its exit status.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import shutil
from pathlib import Path

import pytest

from posenc_spec.cli import build_parser, main
from posenc_spec.commands.arguments import declaration_flags
from posenc_spec.gate.config import read_config
from posenc_spec.gate.declaration import declare

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT = ROOT / "docs" / "families" / "t5buckets.md"
DATA = "spec_tests/data/t5buckets"
# Each documented command's exit status, and the library it needs beyond transformers.
OUTCOMES = {
    "check transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket": (0, None),
    "check x_transformers.x_transformers:RelativePositionBias._relative_position_bucket": (0, "x-transformers"),
    "check transformers.models.umt5.modeling_umt5:UMT5Attention": (0, None),
    "check transformers.models.t5.modeling_t5:T5Attention": (0, None),
    "identify transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket": (0, None),
    "plot transformers.models.mpnet.modeling_mpnet:MPNetEncoder": (0, None),
}


def _blocks(language: str) -> list[str]:
    text = DOCUMENT.read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _commands() -> list[list[str]]:
    return [shlex.split(line)[1:] for block in _blocks("sh") for line in block.splitlines()
            if line.startswith("posenc-spec ")]


def _key(arguments: list[str]) -> str:
    return f"{arguments[0]} {arguments[1]}"


COMMANDS = _commands()


def test_every_command_has_an_outcome():
    """The document's commands are exactly those OUTCOMES lists."""
    assert sorted(_key(arguments) for arguments in COMMANDS) == sorted(OUTCOMES)


@pytest.mark.parametrize("arguments", COMMANDS, ids=_key)
def test_command_declares_what_it_says(arguments, monkeypatch):
    """Each command parses, and its flags make a valid t5-buckets declaration."""
    monkeypatch.chdir(ROOT)
    args = build_parser().parse_args(arguments)
    keys = {key: value for key, value in declaration_flags(args).items() if value is not None}
    declaration = declare({"target": args.target, **keys}, flags=True)
    assert declaration.api == "t5-buckets", declaration


def test_toml_table_reads(tmp_path):
    """The documented [tool.posenc-spec] entries read as declarations of the family, config paths and all."""
    shutil.copytree(ROOT / DATA, tmp_path / DATA)
    [table] = _blocks("toml")
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    declarations = read_config(tmp_path / "pyproject.toml")
    assert [declaration.spec.signature for declaration in declarations] == ["bias", "bias", "bias"]
    assert declarations[0].spec.convention.bidirectional is False  # from t5-decoder.json's is_decoder


@pytest.mark.slow
@pytest.mark.parametrize("arguments", COMMANDS, ids=_key)
def test_command_gives_its_outcome(arguments, tmp_path, monkeypatch):
    """Run as written, in a folder holding the files it names: the exit status OUTCOMES gives."""
    status, library = OUTCOMES[_key(arguments)]
    if library is not None:
        try:
            importlib.metadata.version(library)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"{library} is not installed")
    shutil.copytree(ROOT / DATA, tmp_path / DATA)
    monkeypatch.chdir(tmp_path)
    assert main(arguments) == status, arguments
