"""``identify`` and ``init`` take a family's repeated call flag (``--bucket-arg ROLE=NAME``) as
``check`` does: every occurrence kept, in order, not the last alone."""

from __future__ import annotations

import pytest

from posenc_spec import registry
from posenc_spec.cli import build_parser
from posenc_spec.gate.keys import flag


@pytest.mark.parametrize("command", ["identify", "init", "check"])
def test_every_occurrence_of_a_repeated_call_flag_is_kept(command):
    """Each family's repeated keys that identify reads to call a target keep all their occurrences."""
    repeated = [key for names in registry.names() for key in names.identify_keys if key in names.repeated]
    assert repeated, "no family has a repeated identify key: this test tests nothing"
    for key in repeated:
        args = build_parser().parse_args([command, "m:f", flag(key), "a=b", flag(key), "c=d"])
        assert getattr(args, key) == ["a=b", "c=d"], (command, key, getattr(args, key))
