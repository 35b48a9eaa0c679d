"""Reading RoPE conventions from Hugging Face configs: each example file, the other shapes
found on the hub, overrides, and an error naming the file for every way a config can fail."""

import json

import pytest

from posenc_spec.families.rope.config import RopeConfigError, parse_rope_param, read_config
from posenc_spec.families.rope.conventions import ROPE_TYPES, RopeConvention
from spec_tests.real_targets.rope_configs import CONFIGS

PHI3_SHORT = [round(1.0 + 0.02 * i, 2) for i in range(48)]
PHI3_LONG = [round(1.0 + 0.9 * i + 0.01 * i * i, 2) for i in range(48)]


@pytest.mark.parametrize("name, layer_type, head_dim, expected", [
    ("llama3_1_8b.json", None, 128, RopeConvention(
        "llama3", 500000.0, {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192}, max_position_embeddings=131072)),
    ("deepseek_v3_yarn.json", None, 192, RopeConvention(
        "yarn", 10000.0, {"factor": 40.0, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                          "original_max_position_embeddings": 4096},
        rotary_dim=64, rotary_features="last", max_position_embeddings=163840)),
    ("phi3_mini_128k_longrope.json", None, 96, RopeConvention(
        "longrope", 10000.0, {"short_factor": PHI3_SHORT, "long_factor": PHI3_LONG,
                              "original_max_position_embeddings": 4096}, max_position_embeddings=131072)),
    ("gemma3_27b_layer_types.json", "full_attention", 128, RopeConvention(
        "linear", 1e6, {"factor": 8.0}, max_position_embeddings=131072)),
    ("gemma3_27b_layer_types.json", "sliding_attention", 128, RopeConvention(
        "default", 10000.0, max_position_embeddings=131072)),
    ("gemma4_proportional.json", "full_attention", 512, RopeConvention(
        "proportional", 1e6, partial_rotary_factor=0.25, max_position_embeddings=131072)),
    ("gemma4_proportional.json", "sliding_attention", 256, RopeConvention(
        "default", 10000.0, max_position_embeddings=131072)),
    ("vicuna_7b_16k_linear_type.json", None, 128, RopeConvention(
        "linear", 10000.0, {"factor": 4.0}, max_position_embeddings=4096)),
    ("phi2_partial_rotary.json", None, 80, RopeConvention(
        "default", 10000.0, partial_rotary_factor=0.4, max_position_embeddings=2048)),
])
def test_example_configs_read_into_their_conventions(name, layer_type, head_dim, expected):
    """Every example file gives the convention its model states, written out by hand."""
    declared = read_config(CONFIGS / name, layer_type)
    assert (declared.convention, declared.head_dim) == (expected, head_dim)
    assert declared.source == str(CONFIGS / name) and declared.layer_type == layer_type


def test_example_files_have_their_provenance_written_down():
    """Each example file is named in the README beside them."""
    readme = (CONFIGS / "README.md").read_text()
    assert all(f"`{path.name}`" in readme for path in CONFIGS.glob("*.json"))


BASE = {"hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 8192}


@pytest.mark.parametrize("config, expected, head_dim", [
    ({**BASE, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                  "original_max_position_embeddings": 2048, "truncate": False}},
     RopeConvention("yarn", 1e6, {"factor": 4.0, "original_max_position_embeddings": 2048, "truncate": False},
                    max_position_embeddings=8192), 128),
    ({**BASE, "rope_theta": 5e5, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}},  # L0 from the max length
     RopeConvention("yarn", 5e5, {"factor": 4.0, "original_max_position_embeddings": 8192},
                    max_position_embeddings=8192), 128),
    ({**BASE, "original_max_position_embeddings": 4096,
      "rope_scaling": {"type": "su", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64,
                       "original_max_position_embeddings": 2048}},  # Phi-3: the top-level L0 wins
     RopeConvention("longrope", 10000.0, {"short_factor": [1.0] * 64, "long_factor": [2.0] * 64,
                                          "original_max_position_embeddings": 4096},
                    max_position_embeddings=8192), 128),
    ({"hidden_size": 768, "num_attention_heads": 12, "rotary_pct": 0.25, "rotary_emb_base": 10000},  # GPT-NeoX
     RopeConvention(partial_rotary_factor=0.25), 64),
    ({"hidden_size": 4096, "num_attention_heads": 16, "rotary_dim": 64},  # GPT-J
     RopeConvention(rotary_dim=64), 256),
    ({**BASE, "head_dim": None, "rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}},
     RopeConvention(partial_rotary_factor=0.5, max_position_embeddings=8192), 128),
    ({**BASE, "rope_scaling": {"type": "dynamic", "factor": 2.0, "rope_type": "dynamic"}},
     RopeConvention("dynamic", params={"factor": 2.0}, max_position_embeddings=8192), 128),
])
def test_other_shapes_on_the_hub(config, expected, head_dim):
    """transformers 5 dicts, rope_scaling with rope_type or type, Phi-3's top-level L0,
    GPT-NeoX's and GPT-J's own keys, a null head_dim."""
    declared = read_config(config)
    assert (declared.convention, declared.head_dim, declared.source) == (expected, head_dim, "<config dict>")


def test_rope_scaling_wins_over_rope_parameters():
    """With both, transformers takes ``rope_scaling``; so does the reader."""
    both = {**BASE, "rope_parameters": {"rope_type": "linear", "factor": 2.0},
            "rope_scaling": {"type": "linear", "factor": 4.0}}
    assert read_config(both).convention.param("factor") == 4.0


def test_rope_interleave_states_the_layout():
    """DeepSeek's ``rope_interleave`` says which layout; without it the config states none."""
    assert read_config({**BASE, "rope_interleave": True}).layout == "interleaved"
    assert read_config({**BASE, "rope_interleave": False}).layout == "half"
    assert read_config(BASE).layout is None


def test_overrides_win_and_none_removes():
    """Overrides use the config's names; ``None`` removes a type key."""
    path = CONFIGS / "llama3_1_8b.json"
    assert read_config(path, overrides={"factor": 16}).convention.param("factor") == 16.0
    plain = read_config(path, overrides={"rope_type": "default", "factor": None, "low_freq_factor": None,
                                         "high_freq_factor": None, "original_max_position_embeddings": None})
    assert plain.convention == RopeConvention(theta=500000.0, max_position_embeddings=131072)
    moved = read_config(path, overrides={"head_dim": 64, "rope_theta": 1e4, "rotary_features": "last",
                                         "attention_factor_placement": "separate", "layout": "interleaved"})
    assert (moved.head_dim, moved.convention.theta, moved.convention.rotary_features, moved.layout) == \
        (64, 1e4, "last", "interleaved")
    assert moved.convention.attention_factor_placement == "separate"
    parsed = dict(map(parse_rope_param, ["factor=32", "original_max_position_embeddings=4096"]))
    assert read_config(path, overrides=parsed).convention.params_dict()["factor"] == 32.0


@pytest.mark.parametrize("text, expected", [
    ("factor=8", ("factor", 8)), ("truncate=false", ("truncate", False)),
    ("short_factor=[1, 1.5]", ("short_factor", [1, 1.5])), ('rope_type="yarn"', ("rope_type", "yarn")),
    (" beta_fast = 16.5", ("beta_fast", 16.5)),
])
def test_parse_rope_param(text, expected):
    """NAME=VALUE with VALUE in JSON."""
    assert parse_rope_param(text) == expected


@pytest.mark.parametrize("text, message", [
    ("factor", "rope parameter 'factor' must be NAME=VALUE"),
    ("=8", "rope parameter '=8' must be NAME=VALUE"),
    ("factor=eight", "rope parameter 'factor=eight': not JSON (Expecting value at line 1, column 1); strings need"),
    ("rope_type=yarn", "rope parameter 'rope_type=yarn': not JSON (Expecting value at line 1, column 1); strings "
                       'need quotes: rope_type="yarn"'),
    ("factor=[1, 2", "rope parameter 'factor=[1, 2': not JSON (Expecting ',' delimiter at line 1, column 6)"),
    ("factor=" + "9" * 5000, "rope parameter 'factor=99999"),
    ("factor=" + "[" * 100_000 + "]" * 100_000, "...': nested more than 64 levels deep"),
])
def test_parse_rope_param_errors_name_the_text(text, message):
    """Not NAME=VALUE, VALUE not JSON, a number of 5000 digits, or nested past the depth a
    file's JSON may have: one line quoting the text (its first 80 characters)."""
    with pytest.raises(RopeConfigError) as error:
        parse_rope_param(text)
    assert message in str(error.value) and "\n" not in str(error.value) and len(str(error.value)) < 300, error.value


NESTED = {**BASE, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0},
                                      "sliding_attention": None}}


@pytest.mark.parametrize("content, layer_type, overrides, message", [
    ("{not json", None, None, "not JSON (Expecting property name enclosed in double quotes at line 1, column 2)"),
    ([BASE], None, None, "the JSON is a list, not an object"),
    ({**BASE, "rope_scaling": {"type": "ntk", "factor": 2}}, None, None,
     "unknown rope_type 'ntk'; known: " + ", ".join(ROPE_TYPES)),
    ({**BASE, "rope_scaling": {"rope_type": "llama3", "factor": 8}}, None, None,
     "llama3 needs parameter(s) low_freq_factor, high_freq_factor"),
    ({**BASE, "rope_scaling": {"rope_type": "linear", "factor": 8, "beta_fast": 4}}, None, None,
     "unknown linear parameter(s) beta_fast"),
    ({**BASE, "rope_scaling": {"rope_type": "linear", "type": "dynamic", "factor": 8}}, None, None,
     "rope_type and type disagree (dynamic vs linear)"),
    ({**BASE, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 3, "long_factor": [1.0] * 3}}, None,
     None, "longrope short_factor has 3 values; head_dim 128 needs r/2 = 64"),
    ({**BASE, "rope_parameters": [1, 2]}, None, None, "rope_parameters must be an object, got [1, 2]"),
    (NESTED, None, None, "rope_parameters has one entry per layer type (full_attention, sliding_attention); "
                         "name a layer_type"),
    (NESTED, "chunked_attention", None, "no layer type 'chunked_attention' in rope_parameters; found: "
                                        "full_attention, sliding_attention"),
    (NESTED, "sliding_attention", None, "layer type 'sliding_attention' has no RoPE"),
    ({"rope_theta": 1e4}, None, None, "missing head_dim, and hidden_size / num_attention_heads (None / None)"),
    ({**BASE, "head_dim": 127}, None, None, "head_dim must be even, got 127"),
    ({**BASE, "rope_theta": 1.0}, None, None, "theta must not be 1"),
    (BASE, None, {"scale": 2}, "unknown override(s) scale"),
    (BASE, None, {"layout": "neox"}, "layout must be one of half, interleaved, got 'neox'"),
])
def test_every_error_is_one_line_naming_the_file(tmp_path, content, layer_type, overrides, message):
    """Unreadable, not JSON, not an object, unknown type, missing or unknown keys, layer types."""
    path = tmp_path / "config.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(RopeConfigError) as error:
        read_config(path, layer_type, overrides)
    text = str(error.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_unreadable_files_are_named(tmp_path):
    """A missing file and a directory both say which path could not be read, and why."""
    with pytest.raises(RopeConfigError) as error:
        read_config(tmp_path / "absent.json")
    absent = tmp_path / "absent.json"
    assert str(error.value) == f"cannot read the Hugging Face config {absent}: No such file or directory"
    with pytest.raises(RopeConfigError) as error:
        read_config(tmp_path)
    assert str(error.value) == f"{tmp_path}: the Hugging Face config is a directory, not a regular file"


def test_a_dict_source_is_named_and_a_wrong_source_type_refused():
    with pytest.raises(RopeConfigError, match="^<config dict>: unknown rope_type 'ntk'"):
        read_config({**BASE, "rope_parameters": {"rope_type": "ntk"}})
    with pytest.raises(TypeError, match="source must be a path or a dict, got int"):
        read_config(3)
