"""``posenc-spec identify --api rope-*`` end to end on corpus targets: a correct one is named
with the parameters its registry entry declares (exit 0, JSON), a wrong one is "none" with
the nearest convention (exit 1), and bad flags are usage errors (exit 2) before any call."""

from __future__ import annotations

import json

import pytest

from meta_tests.corpus.rope_registry import rope_entry
from posenc_spec.cli import main

# The registry keys that say how a target is called: identify takes them as flags.
CALL_KEYS = ("cache_form", "cache_layout", "cache_call", "x_layout", "rope_layout", "head_dim", "max_positions")


def _flags(entry) -> list[str]:
    table = entry.config_table()
    flags = ["--api", entry.api]
    for key in CALL_KEYS:
        if key in table:
            flags += ["--" + key.replace("_", "-"), str(table[key])]
    return flags


def _identify(entry, tmp_path, status: int) -> dict:
    """``identify`` of a corpus entry with its call flags: its exit status checked, its JSON answer."""
    out = tmp_path / "answer.json"
    assert main(["identify", entry.target, *_flags(entry), "--json", str(out)]) == status
    return json.loads(out.read_text())


def test_a_correct_target_is_named_with_its_declared_parameters(tmp_path, capsys):
    """Meta's llama3 freqs_cis (a complex cache): llama3 with Llama 3.1's parameters."""
    entry = rope_entry("meta_llama3_freqs_cis")
    assert entry.kind == "correct"
    answer = _identify(entry, tmp_path, 0)
    declared = entry.convention()
    assert answer["name"] == declared.rope_type and answer["target"] == entry.target
    assert answer["convention"]["theta"] == declared.theta
    assert answer["convention"]["params"] == declared.params_dict()
    assert answer["convention"]["layout"] == "compact" and answer["max_error_ratio"] <= 1
    assert capsys.readouterr().out.startswith(f"{entry.target}: identified llama3 ")


def test_a_wrong_pairing_is_none_with_the_nearest(tmp_path, capsys):
    """rope_interleaved ignored: judged under its declared interleaved pairing, no convention fits."""
    entry = rope_entry("interleaved_flag_ignored")
    assert entry.kind == "wrong"
    answer = _identify(entry, tmp_path, 1)
    assert answer["name"] == "none" and answer["convention"] is None
    assert answer["nearest"]["convention"]["layout"] == "interleaved" and answer["nearest"]["max_error_ratio"] > 1
    assert "the calls pair the features as half" in capsys.readouterr().out


@pytest.mark.parametrize("flags, says", [
    (["--api", "rope-apply", "--cache-form", "complex"], "--cache-form is read by --api rope-cache"),
    (["--rope-layout", "half"], "--rope-layout describes a rotary embedding"),
    (["--api", "rope-cache", "--head-dim", "63"], "--head-dim must be even"),
    (["--api", "rope-cache", "--t-max", "5"], "--t-max is read by --api timesteps"),
    (["--api", "rope-cache", "--cache-layout", "halves"], "--cache-layout must be one of"),
])
def test_bad_flags_are_usage_errors(flags, says, capsys):
    assert main(["identify", rope_entry("numpy_float64_yarn").target, *flags]) == 2
    assert says in capsys.readouterr().err


def test_a_target_that_cannot_be_imported_is_a_usage_error(capsys):
    target = rope_entry("numpy_float64_yarn").module + ":no_such_function"
    assert main(["identify", target, "--api", "rope-cache"]) == 2
    assert f"cannot import {target}" in capsys.readouterr().err
