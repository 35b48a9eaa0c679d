"""``docs/families/mrope.md`` as a reader copies it: every ``posenc-spec`` command parses and declares
what it means (validated as ``check`` validates it), and the page names every key, preset, signature
and slip of the family."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from posenc_spec.cli import build_parser
from posenc_spec.commands.arguments import declaration_flags
from posenc_spec.families.mrope.conventions import PRESETS
from posenc_spec.families.mrope.identify import Identification
from posenc_spec.families.mrope.keys import NAMES
from posenc_spec.gate.declaration import declare

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT = ROOT / "docs" / "families" / "mrope.md"
TEXT = DOCUMENT.read_text(encoding="utf-8")
COMMANDS = [shlex.split(line)[1:] for block in re.findall(r"```sh\n(.*?)```", TEXT, flags=re.S)
            for line in block.splitlines() if line.startswith("posenc-spec ")]


@pytest.mark.parametrize("arguments", COMMANDS, ids=lambda arguments: arguments[-1])
def test_every_documented_command_declares_a_valid_target(arguments):
    """Each command parses, and its flags make a declaration the gate accepts (paths from the repository
    root); an identify command's, the request identify makes."""
    parsed = build_parser().parse_args(arguments)
    keys = {key: value for key, value in declaration_flags(parsed).items() if value is not None}
    if arguments[0] == "identify":
        call = declare({"target": arguments[-1], "api": keys.pop("api")}, flags=True)
        assert Identification(call, keys).declaration.api in NAMES.apis
        return
    declaration = declare({**keys, "target": arguments[-1]}, base_dir=ROOT, flags=True)
    assert declaration.api in NAMES.apis


def test_the_page_names_every_key_preset_signature_and_slip():
    """Every key (in the key table), preset, signature and slip of the family is on its page."""
    missing = [name for name in (*NAMES.keys, *PRESETS, *(s for sigs in NAMES.signatures.values() for s in sigs),
                                 *NAMES.slips) if f"`{name}`" not in TEXT]
    assert not missing, missing
