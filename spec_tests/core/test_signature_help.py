"""``posenc-spec keys FAMILY`` names every signature each of the family's APIs takes."""

from posenc_spec import registry
from posenc_spec.cli import main


def test_keys_names_every_familys_signatures(capsys):
    """keys FAMILY lists each API of the family with all its signatures, the API's own form first."""
    for names in registry.names():
        assert main(["keys", names.name]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for api, signatures in names.signatures.items():
            assert f"{api} {', '.join(signatures)}" in text, f"keys {names.name} lacks {api}'s signatures: {text}"
