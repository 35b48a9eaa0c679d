"""Every command of docs/families/sincos2d.md runs, in a folder of its own, with the outcome
stated here (each given ``--preload`` of the libraries it names, so that they are imported once
for them all); its TOML example declares a target the gate accepts. The commands name the
installed transformers and diffusers: without them the test skips, saying so."""

from __future__ import annotations

import importlib.util
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from posenc_spec.cli import main
from posenc_spec.gate.declaration import declare
from spec_tests.families.sincos2d.real_code import PRELOAD

DOCUMENT = Path(__file__).resolve().parents[3] / "docs" / "families" / "sincos2d.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)
# Each command of the document (its words after posenc-spec) and its exit status.
OUTCOMES = {
    "check diffusers.models.embeddings:get_2d_sincos_pos_embed": 0,
    "check transformers.models.vit_mae.modeling_vit_mae:build_2d_sinusoidal_position_embedding": 1,
    "identify transformers.models.vit_mae.modeling_vit_mae:build_2d_sinusoidal_position_embedding": 0,
    "plot transformers.models.vit_mae.modeling_vit_mae:build_2d_sinusoidal_position_embedding": 0,
    "check transformers.models.detr.modeling_detr:DetrSinePositionEmbedding": 0,
    "check diffusers.models.embeddings:PatchEmbed": 0,
}


def blocks(language: str) -> list[str]:
    return [text for found, text in FENCE.findall(DOCUMENT.read_text(encoding="utf-8")) if found == language]


def commands() -> list[list[str]]:
    return [shlex.split(line)[1:] for text in blocks("sh") for line in text.splitlines()
            if line.startswith("posenc-spec ")]


def _needs_libraries() -> None:
    for library in ("transformers", "diffusers"):
        if importlib.util.find_spec(library) is None:
            pytest.skip(f"the document's commands name {library}: pip install {library}")


@pytest.mark.parametrize("words", commands(), ids=lambda words: " ".join(words[:2]))
def test_each_command_gives_its_outcome(words, tmp_path, monkeypatch, capsys):
    """The command, as a reader copies it, exits with the status OUTCOMES states."""
    _needs_libraries()
    key = " ".join(words[:2])
    assert key in OUTCOMES, f"{DOCUMENT.name}: no outcome stated for posenc-spec {' '.join(words)}"
    monkeypatch.chdir(tmp_path)
    # The libraries imported once, in the template every command of this process shares.
    status = main([*words, "--preload", ",".join(PRELOAD), *(("--max-positions", "16") if words[0] != "identify"
                                                                else ())])
    output = capsys.readouterr()
    assert status == OUTCOMES[key], f"posenc-spec {' '.join(words)}: {output.out}{output.err}"


def test_every_stated_outcome_is_a_command_of_the_document():
    """OUTCOMES names no command the document no longer has."""
    assert set(OUTCOMES) == {" ".join(words[:2]) for words in commands()}


def test_the_toml_example_declares_its_targets():
    """The document's [[tool.posenc-spec.targets]] tables are declarations the gate accepts."""
    [text] = blocks("toml")
    for table in tomllib.loads(text)["tool"]["posenc-spec"]["targets"]:
        assert declare(table).spec.preset == table["convention"]
