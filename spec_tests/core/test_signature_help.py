"""``--signature``'s help names every signature each gated family's API takes besides its own form."""

from posenc_spec import registry
from posenc_spec.cli import main


def test_signature_help_names_every_familys_signatures(capsys):
    """check --help lists each API's other signatures, with the API they belong to."""
    try:
        main(["check", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    help_text = text.rsplit("--signature NAME", 1)[1].split("--init", 1)[0].replace("- ", "-")
    for names in registry.names():
        for api, signatures in names.signatures.items():
            for signature in signatures[1:]:
                assert signature in help_text, f"--signature's help lacks {signature} ({api}): {help_text}"
            if len(signatures) > 1:
                assert f"({api})" in help_text, f"--signature's help does not name {api}: {help_text}"
