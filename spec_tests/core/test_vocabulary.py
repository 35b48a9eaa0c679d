"""One name per concept: the keys families share, their former names (read as the key, said
once, everywhere a key is read), the table of every key (docs/keys.md) and the short help."""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import pytest

import posenc_spec
from posenc_spec import registry
from posenc_spec.cli import main
from posenc_spec.gate import declaration as declaration_module
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.keys import ALIASES, FAMILY_KEYS, KEYS, RenamedKey, flag, markdown_table

REPO = Path(__file__).resolve().parents[2]
# A value each former name takes, the API of the family it belongs to, and any other keys
# the value needs (in their names now).
FORMER_VALUES = {
    "grid_convention": ("sincos2d", "transformers"), "pairing": ("sincos2d", "interleaved"),
    "grid_freq_shift": ("sincos2d", 1), "grid_base": ("sincos2d", 20.0), "position_offset": ("sincos2d", 0.5),
    "position_scale": ("sincos2d", 2.0), "rope_config": ("rope-cache", "config.json"),
    "rope_theta": ("rope-cache", 500000.0), "rope_layout": ("rope-apply", "interleaved"),
    "bucket_preset": ("t5-buckets", "t5-decoder"), "log_dtype": ("t5-buckets", "float64"),
    "bucket_args": ("t5-buckets", {"bidirectional": "causal"}),
    "bucket_query_offset": ("t5-buckets", "end", {"signature": "table",
                                                  "arg_names": {"query_length": "q", "key_length": "k"}}),
    "bucket_config": ("t5-buckets", "config.json"), "alibi_convention": ("alibi-bias", "bloom"),
    "bias_dtype": ("alibi-bias", "bfloat16"), "attention_heads": ("alibi-bias", 12),
    "mrope_preset": ("mrope-cache", "qwen3-vl"), "mrope_axes": ("mrope-cache", "h,t,w"),
    "axes_theta": ("mrope-cache", 500000.0), "mrope_layout": ("mrope-cache", "interleaved"),
    "attention_head_dim": ("mrope-cache", 128), "mrope_config": ("mrope-cache", "config.json"),
}
CONFIGS = {"rope-cache": '{"rope_theta": 10000.0, "head_dim": 64}',
           "t5-buckets": '{"relative_attention_num_buckets": 32, "relative_attention_max_distance": 128}',
           "mrope-cache": '{"rope_parameters": {"rope_theta": 1000000.0, "mrope_section": [16, 24, 24]}, '
                          '"head_dim": 128}'}


@pytest.fixture
def fresh_notes(monkeypatch):
    """Each test sees every former name for the first time."""
    monkeypatch.setattr(declaration_module, "_noted", set())


def test_every_former_name_is_listed_by_a_test():
    """The table of values above covers every former name the families keep."""
    assert set(FORMER_VALUES) == set(ALIASES)


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_a_former_name_declares_what_its_key_declares(old, tmp_path, fresh_notes):
    """Each former name, given a value, declares exactly what its key given the same value
    (as the key spells it) declares, with one RenamedKey note naming both."""
    api, value, *more = FORMER_VALUES[old]
    more = more[0] if more else {}
    new = ALIASES[old]
    if value == "config.json":
        (tmp_path / "config.json").write_text(CONFIGS[api], encoding="utf-8")
    spelled = registry.names_of_api(api).alias_values.get(old, {}).get(value, value) \
        if isinstance(value, str) else value
    with pytest.warns(RenamedKey, match=f"^{old} is now {new}$"):
        renamed = declare({"target": "x.py:f", "api": api, old: value, **more}, base_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedKey)
        current = declare({"target": "x.py:f", "api": api, new: spelled, **more}, base_dir=tmp_path)
    assert renamed.as_dict() == current.as_dict()
    assert renamed.spec == current.spec


def test_a_former_name_is_noted_once(fresh_notes):
    """The second declaration with the same former name says nothing more."""
    with pytest.warns(RenamedKey):
        declare({"target": "x.py:f", "api": "sincos2d", "grid_base": 100.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedKey)
        declare({"target": "x.py:f", "api": "sincos2d", "grid_base": 100.0})


def test_both_names_of_one_key_and_another_familys_former_name_are_refused(fresh_notes):
    """A key under both names is a usage error; a former name of another family's key is
    refused as that key is, naming the family and its APIs."""
    with pytest.raises(UsageError, match="grid_base is the former name of base: give base alone"):
        declare({"target": "x.py:f", "api": "sincos2d", "grid_base": 100.0, "base": 100.0})
    with pytest.raises(UsageError, match="rope_theta declares a rotary embedding, not a sinusoidal table: give "
                                         "--api rope-freqs or rope-cache or rope-apply"):
        declare({"target": "x.py:f", "api": "table", "rope_theta": 100.0})
    with pytest.raises(UsageError, match="--num-heads declares an ALiBi bias, not a rotary embedding"):
        declare({"target": "x.py:f", "api": "rope-cache", "num_heads": 8}, flags=True)


@pytest.mark.parametrize("typed, meant", [
    ("grid_bse", "base"), ("rope_thet", "base"), ("bas", "base"), ("attention_head_di", "head_dim"),
    ("attention_head", "num_heads"), ("convnetion", "convention")])
def test_a_misspelled_key_is_told_the_key_as_it_is_now(typed, meant):
    """A key close to a former name, or to a key, gets "did you mean" with the key's name now."""
    with pytest.raises(UsageError, match=f"unknown key '{typed}' \\(did you mean '{meant}'\\?\\)"):
        posenc_spec.check("x.py:f", **{typed: 1})


def test_a_shared_key_belongs_to_each_family_that_reads_it(fresh_notes):
    """base is the sinusoidal base, the rotary base (rope_theta) and both axes' base of a 2-D table."""
    assert declare({"target": "x.py:f", "api": "table", "base": 100.0}).spec.convention.base == 100.0
    assert declare({"target": "x.py:f", "api": "rope-cache", "base": 100.0}).spec.convention.theta == 100.0
    grid = declare({"target": "x.py:f", "api": "sincos2d", "base": 100.0}).spec.convention
    assert (grid.row_base, grid.col_base) == (100.0, 100.0)


def test_former_names_in_a_toml_file_are_read_and_noted_once(tmp_path, monkeypatch, capsys, fresh_notes):
    """Two targets of a --config file that each give grid_base conform as with base, and the
    command line says the former name once, as one line on stderr naming where it is."""
    (tmp_path / "grids.py").write_text((REPO / "spec_tests/families/sincos2d/targets.py").read_text(encoding="utf-8"),
                                       encoding="utf-8")
    (tmp_path / "gate.toml").write_text(textwrap.dedent("""
        api = "sincos2d"

        [[targets]]
        target = "grids.py:mae"
        grid_base = 10000.0

        [[targets]]
        target = "grids.py:rows_first"
        grid_convention = "transformers"
        grid_base = 10000.0
    """), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    status = main(["check", "--config", "gate.toml"])
    captured = capsys.readouterr()
    assert status == 0, captured.out
    notes = [line for line in captured.err.splitlines() if "note:" in line]
    assert notes == ["posenc-spec check: note: gate.toml: targets[0]: grid_base is now base",
                     "posenc-spec check: note: gate.toml: targets[1]: grid_convention is now convention"], notes


def test_the_command_line_notes_a_former_flag_once(tmp_path, monkeypatch, capsys, fresh_notes):
    """--grid-base and --grid-convention each give one note line; the check runs as with --base."""
    monkeypatch.chdir(REPO)
    status = main(["check", "spec_tests.families.sincos2d.targets:rows_first", "--api", "sincos2d",
                   "--grid-convention", "transformers", "--grid-base", "10000"])
    captured = capsys.readouterr()
    assert status == 0, captured.out
    notes = [line for line in captured.err.splitlines() if "note:" in line]
    assert notes == ["posenc-spec check: note: --grid-convention is now --convention",
                     "posenc-spec check: note: --grid-base is now --base"], captured.err


def test_the_table_of_keys_is_the_code_s():
    """docs/keys.md holds what posenc_spec.gate.keys.markdown_table() writes: every key, its
    flag, its former names and the families that read it."""
    text = (REPO / "docs" / "keys.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- keys: [^>]*-->\n(.*?)\n<!-- /keys -->", text, flags=re.S)
    assert found, "docs/keys.md has no <!-- keys --> block"
    assert found.group(1) == markdown_table(), f"docs/keys.md's table is stale; paste:\n{markdown_table()}"
    for key in KEYS:
        assert f"| `{key}` |" in found.group(1)
    for old in ALIASES:
        assert f"`{old}`" in found.group(1)


def test_former_names_are_no_keys_and_each_names_a_key_of_its_family():
    """A former name is no live key, and the key it names is one its family reads."""
    for names in registry.names():
        for old, new in names.aliases.items():
            assert old not in KEYS and new in names.keys, (names.name, old, new)


def _help(*words: str, capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        main([*words, "--help"])
    assert stopped.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["check", "identify", "init", "plot", "snapshot"])
def test_help_is_short_and_lists_every_family(command, capsys):
    """Each command's --help is at most 80 lines and names every family on a line of its own."""
    text = _help(command, capsys=capsys)
    assert len(text.splitlines()) <= 80, len(text.splitlines())
    for names in registry.names():
        assert re.search(rf"^  {names.name} +{re.escape(', '.join(names.apis))} ", text, flags=re.M), names.name


def _keys_text(name: str, capsys) -> str:
    assert main(["keys", name]) == 0
    return capsys.readouterr().out


def test_every_key_appears_in_some_help(capsys):
    """Every key is a flag check --help lists or one posenc-spec keys FAMILY lists, with its
    values; every former name is listed beside its key."""
    shown = _help("check", capsys=capsys)
    for names in registry.names():
        shown += _keys_text(names.name, capsys)
    for key in (*FAMILY_KEYS, *(key for key in KEYS if key not in ("target", "xfails"))):
        assert f"{flag(key)} " in shown, key
    shown = " ".join(shown.split())
    for old, new in ALIASES.items():
        assert f"{old} -> {new}" in shown, old


def test_keys_lists_a_familys_keys_signatures_and_check_ids(capsys):
    """keys rope-apply (an API names its family) shows each rotary key with its metavar, each
    API's signatures, the check ids; an unknown name is a usage error with the close one."""
    text = _keys_text("rope-apply", capsys)
    names = registry.names_of_api("rope-apply")
    for key in names.keys:
        assert re.search(rf"{flag(key)}( \[{key}\])? {re.escape(names.help[key][0])}", text), key
    for signatures in names.signatures.values():
        assert ", ".join(signatures) in " ".join(text.split())
    assert "check ids: Rotary embeddings" in text
    assert main(["keys", "rope-aply"]) == 2
    assert "did you mean rope-apply?" in capsys.readouterr().err


def test_a_shared_top_level_default_reads_as_it_did_in_a_file_of_several_families(fresh_notes):
    """A top-level base and layout beside sinusoidal and rotary targets stay the sinusoidal
    targets' (as before the families shared the names); with rotary targets alone, they are theirs."""
    from posenc_spec.gate.config import declarations_from_table

    mixed = declarations_from_table({"layout": "concat", "base": 100.0, "targets": [
        {"target": "a.py:f"}, {"target": "b.py:g", "api": "rope-cache"}]}, None, "")
    assert mixed[0].spec.convention.base == 100.0 and mixed[0].spec.convention.layout == "concat"
    assert mixed[1].spec.convention.theta == 10000.0
    alone = declarations_from_table({"base": 100.0, "targets": [{"target": "b.py:g", "api": "rope-cache"}]},
                                    None, "")
    assert alone[0].spec.convention.theta == 100.0
