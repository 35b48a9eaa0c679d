"""Every command of ``docs/families/alibi.md`` says what the gate does: each documented
``check`` declares exactly one of the real-code declarations that
``meta_tests/corpus/test_alibi_corpus_gate.py`` runs through the gate (with the verdict the page
gives: conforms, or fails with its known deviation); the ``identify`` and ``plot`` commands
run in process (``posenc_spec.cli.main``) in a folder of their own, their library given to
``--preload`` (imported once, not in each child); the page's
``[tool.posenc-spec]`` table reads as ``check`` reads it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from meta_tests.corpus.test_alibi_corpus_gate import REAL
from posenc_spec.cli import main
from posenc_spec.gate import engine
from posenc_spec.gate.config import read_config
from posenc_spec.gate.declaration import declare

PAGE = Path(__file__).resolve().parents[3] / "docs" / "families" / "alibi.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", PAGE.read_text(), flags=re.S)
COMMANDS = [line for language, body in BLOCKS if language == "sh" for line in body.splitlines() if line.strip()]
CHECKS = [command for command in COMMANDS if command.startswith("posenc-spec check ")]
# Each documented check command is declared as the page says it behaves: the REAL entry it is.
FALCON_AS_BLOOM = "falcon-as-bloom"
LABML_AS_FAIRSEQ = "labml-as-fairseq"


class _Declared(BaseException):
    """Raised in place of running the gate: the declarations a command made."""

    def __init__(self, declarations):
        super().__init__("declared")
        self.declarations = list(declarations)


def _declared(command: str, monkeypatch) -> list:
    def capture(declarations, *args, **kwargs):
        raise _Declared(declarations)

    monkeypatch.setattr(engine, "check_many", capture)
    with pytest.raises(_Declared) as caught:
        main(shlex.split(command)[1:])
    return caught.value.declarations


def _same(declaration) -> str | None:
    """The id of the REAL entry ``declaration`` declares, or None."""
    for real_id, _, keys, _ in REAL:
        real = declare(keys)
        if (real.target, real.api, real.as_dict(), real.how()) == (
                declaration.target, declaration.api, declaration.as_dict(), declaration.how()):
            return real_id
    return None


def test_the_page_holds_its_commands():
    """The page's commands are posenc-spec commands: nine conforming checks (MPT's and labml's
    also declared causal up to a row constant), the two known deviations, an identify and a plot."""
    assert all(command.startswith("posenc-spec ") for command in COMMANDS)
    assert len(CHECKS) == 11 and len(COMMANDS) == 13


@pytest.mark.parametrize("command", CHECKS)
def test_documented_check_is_a_gated_real_code_declaration(command, monkeypatch):
    """The command declares one real-code target the corpus gate test runs, with the verdict the
    page gives it."""
    declarations = _declared(command, monkeypatch)
    assert len(declarations) == 1
    real_id = _same(declarations[0])
    assert real_id is not None, f"{command}: not among the gated real-code declarations"
    deviation = dict((real[0], real[3]) for real in REAL)[real_id]
    assert (deviation is not None) == (real_id in (FALCON_AS_BLOOM, LABML_AS_FAIRSEQ)), real_id


@pytest.mark.parametrize("command", [command for command in COMMANDS if command not in CHECKS])
def test_documented_identify_and_plot_run(command, tmp_path, monkeypatch, capsys):
    """identify names Falcon's bias falcon; plot draws MPT's bias (exit 0 each)."""
    pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    words = shlex.split(command)[1:]
    module = next(word for word in words if ":" in word).split(":")[0]
    assert main([*words, "--preload", module]) == 0, capsys.readouterr()  # imported once, in the template
    out = capsys.readouterr().out
    assert ": falcon: the slopes and the bias" in out if " identify " in command else "bias.png" in out, out


def test_the_toml_table_declares_its_targets(tmp_path):
    """The page's [tool.posenc-spec] table reads as two declarations of the model's 112 heads."""
    table = next(body for language, body in BLOCKS if language == "toml")
    (tmp_path / "pyproject.toml").write_text(table)
    declarations = read_config(tmp_path / "pyproject.toml")
    assert [(d.api, d.spec.preset, d.spec.attention_heads) for d in declarations] == [
        ("alibi-bias", "bloom", 112), ("alibi-bias", "bidirectional", 112)]
