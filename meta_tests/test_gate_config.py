"""Config parsing for the gate: keys to GateSpecs, [[targets]] files, [tool.posenc-spec], xfails."""

from __future__ import annotations

import pytest

from posenc_spec.conventions import PRESETS, get_convention
from posenc_spec.gate import GateSpec
from posenc_spec.gate.config import ConfigError, make_spec, read_config, read_pyproject, read_xfails


def test_defaults():
    """A bare target: vaswani, odd error, the table API, t_max 1000, no cap, no xfails."""
    spec = make_spec({"target": "pkg.mod:fn"})
    assert spec == GateSpec("pkg.mod:fn", PRESETS["vaswani"])


def test_flags_override_preset_fields():
    """Explicit fields replace the preset's; odd 'skip' keeps the preset's odd and skips."""
    spec = make_spec({"target": "m:f", "convention": "tensor2tensor", "offset": 2, "scale": 1000.0,
                      "base": 500, "odd": "skip", "api": "timesteps", "t_max": 1.0, "max_positions": 512})
    assert spec.convention == get_convention("tensor2tensor", offset=2, scale=1000.0, base=500)
    assert (spec.skip_odd, spec.api, spec.t_max, spec.max_positions) == (True, "timesteps", 1.0, 512)


@pytest.mark.parametrize("keys, words", [
    ({}, "'target' is required"),
    ({"target": "m:f", "colour": "red"}, "unknown key(s) 'colour'"),
    ({"target": "m:f", "convention": "bert"}, "unknown convention 'bert'"),
    ({"target": "m:f", "freq_shift": 2}, "freq_shift must be one of 0, 1"),
    ({"target": "m:f", "freq_shift": True}, "freq_shift must be 0 or 1"),
    ({"target": "m:f", "base": "10000"}, "base must be a finite number"),
    ({"target": "m:f", "base": 1}, "base must be greater than 1"),
    ({"target": "m:f", "odd": "round"}, "odd must be one of"),
    ({"target": "m:f", "api": "batch"}, "api must be one of"),
    ({"target": "m:f", "t_max": 0}, "t_max must be positive"),
    ({"target": "m:f", "max_positions": 2.5}, "max_positions must be a positive integer"),
    ({"target": "m:f", "timeout": -1}, "timeout must be positive"),
    ({"target": "nocolon"}, "TARGET must be"),
])
def test_bad_keys_are_config_errors(keys, words):
    """Every bad key or value is a ConfigError (exit status 2) naming the key and value."""
    with pytest.raises(ConfigError) as error:
        make_spec(keys, where="gate.toml: ")
    assert words in str(error.value) and str(error.value).startswith("gate.toml: "), str(error.value)


def test_config_file_targets_with_defaults_and_relative_paths(tmp_path):
    """Top-level keys are defaults for each [[targets]] table; file targets and xfails files
    resolve against the config file's folder."""
    (tmp_path / "known.txt").write_text("odd[7]\n")
    config = tmp_path / "gate.toml"
    config.write_text('convention = "concat"\nmax_positions = 300\n\n'
                      '[[targets]]\ntarget = "impl.py:table"\nxfails = "known.txt"\n\n'
                      '[[targets]]\ntarget = "pkg.mod:fn"\nconvention = "fairseq"\nmax_positions = 64\n')
    first, second = read_config(config)
    assert first.target == f"{tmp_path / 'impl.py'}:table"
    assert (first.convention, first.max_positions, first.xfails) == (PRESETS["concat"], 300, {"odd[7]"})
    assert (second.convention, second.max_positions) == (PRESETS["fairseq"], 64)


def test_command_line_flags_override_every_target(tmp_path):
    """Flags given with --config replace the keys of every target."""
    config = tmp_path / "gate.toml"
    config.write_text('[[targets]]\ntarget = "a:f"\nmax_positions = 64\n[[targets]]\ntarget = "b:f"\n')
    specs = read_config(config, {"max_positions": 128, "convention": None})
    assert [spec.max_positions for spec in specs] == [128, 128]


def test_pyproject_single_target_and_array(tmp_path):
    """[tool.posenc-spec] holds one target directly, or a targets array."""
    single = tmp_path / "single.toml"
    single.write_text('[project]\nname = "x"\n\n[tool.posenc-spec]\ntarget = "pkg.mod:fn"\nconvention = "concat"\n')
    assert [spec.convention for spec in read_pyproject(single)] == [PRESETS["concat"]]
    many = tmp_path / "many.toml"
    many.write_text('[tool.posenc-spec]\napi = "timesteps"\n[[tool.posenc-spec.targets]]\ntarget = "a:f"\n'
                    '[[tool.posenc-spec.targets]]\ntarget = "b:g"\n')
    assert [(spec.target, spec.api) for spec in read_pyproject(many)] == [("a:f", "timesteps"), ("b:g", "timesteps")]
    assert [spec.target for spec in read_config(many)] == ["a:f", "b:g"]


@pytest.mark.parametrize("text, words", [
    ("[project]\nname = 'x'\n", "has no [tool.posenc-spec] table"),
    ("[tool.posenc-spec\n", "is not valid TOML"),
    ("[tool.posenc-spec]\ntargets = 3\n", "'targets' must be a non-empty array of tables"),
    ("[[tool.posenc-spec.targets]]\nconvention = 'concat'\n", "targets[0]: 'target' is required"),
])
def test_bad_pyproject(tmp_path, text, words):
    """A missing table, broken TOML or a bad targets array is a ConfigError saying which."""
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        read_pyproject(path)


def test_missing_files_are_config_errors(tmp_path):
    """No pyproject, no config file, no xfails file: each a ConfigError naming the file."""
    with pytest.raises(ConfigError, match="no TARGET given and no"):
        read_pyproject(tmp_path / "pyproject.toml")
    with pytest.raises(ConfigError, match="cannot read"):
        read_config(tmp_path / "gate.toml")
    with pytest.raises(ConfigError, match="cannot read the xfails file"):
        read_xfails(tmp_path / "xfails.txt")


def test_xfails_file_comments_and_blank_lines(tmp_path):
    """One check id per line; '#' starts a comment; blank lines are ignored."""
    path = tmp_path / "xfails.txt"
    path.write_text("# known deviations\n\nodd[7]\n  formula[4096x1024]   # float16 angles\n#odd[65]\n")
    assert read_xfails(path) == {"odd[7]", "formula[4096x1024]"}
