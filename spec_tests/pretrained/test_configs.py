"""The config.json of the hub models gpt2 and t5-small, shipped as data, against the
defaults of transformers' ``GPT2Config()`` and ``T5Config()``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posenc_spec import pretrained

# transformers is imported inside the tests that use it: at the top, its 0.5 s would be paid in
# every pytest-xdist worker's collection, not only in the one that runs this file.

# Where a hub file and a default config differ, and why. Every other field of the file
# equals the default.
KNOWN_DIFFERENCES = {
    "gpt2": {
        "architectures": "which class saved the checkpoint (GPT2LMHeadModel); a default config names none",
        "n_ctx": "a legacy copy of n_positions (1024) that GPT2Config no longer has",
        "task_specific_params": "generation settings for pipelines (text-generation max_length 50)",
    },
    "t5-small": {
        "architectures": "which class saved the checkpoint (T5ForConditionalGeneration)",
        "decoder_start_token_id": "0 (the pad token); T5Config leaves it to the generation config",
        "n_positions": "a legacy field (512): nothing in the T5 code reads it",
        "output_past": "a legacy cache flag",
        "task_specific_params": "generation settings per task: prefixes, beams and max_length",
    },
}
DEFAULT_CONFIGS = {"gpt2": "GPT2Config", "t5-small": "T5Config"}

# The hub files as recorded with the tests (see the README.md there for their provenance).
FACTS = Path(__file__).resolve().parents[1] / "data" / "facts"


@pytest.mark.parametrize("name", sorted(pretrained.CONFIG_FILES))
def test_config_ships_as_package_data(name):
    """The packaged config is found through importlib.resources and parses as JSON naming its model type."""
    data = pretrained.config_dict(name)
    assert data["model_type"] == {"gpt2": "gpt2", "t5-small": "t5"}[name], f"{pretrained.config_path(name)}: {data}"


@pytest.mark.parametrize("name", sorted(pretrained.CONFIG_FILES))
def test_config_matches_the_recorded_facts(name):
    """The packaged file holds the same JSON as the hub file recorded in spec_tests/data/facts/."""
    recorded = FACTS / pretrained.CONFIG_FILES[name]
    assert recorded.is_file(), f"{recorded} is missing: the test data travels with the tests"
    assert pretrained.config_dict(name) == json.loads(recorded.read_text(encoding="utf-8")), \
        f"{name}: the packaged copy differs from {recorded}"


@pytest.mark.parametrize("name", sorted(pretrained.CONFIG_FILES))
def test_config_differs_from_transformers_defaults_only_where_known(name):
    """Every field of the hub file equals the transformers default, except the known ones."""
    import transformers

    default = getattr(transformers, DEFAULT_CONFIGS[name])()
    missing = object()
    differing = {key: (value, getattr(default, key, missing)) for key, value in pretrained.config_dict(name).items()
                 if getattr(default, key, missing) != value}
    unexplained = {key: pair for key, pair in differing.items() if key not in KNOWN_DIFFERENCES[name]}
    assert not unexplained, \
        f"{name}: fields (file value, default) differing from {DEFAULT_CONFIGS[name]}(): {unexplained}"
    assert set(differing) == set(KNOWN_DIFFERENCES[name]), \
        f"{name}: expected differences {sorted(KNOWN_DIFFERENCES[name])}, found {sorted(differing)}"


def test_gpt2_config_position_facts():
    """gpt2: 1024 learned positions of width 768, 12 layers of 12 heads; n_ctx repeats n_positions."""
    from transformers import GPT2Config

    config = pretrained.model_config("gpt2")
    assert isinstance(config, GPT2Config)
    facts = (config.n_positions, config.max_position_embeddings, config.n_embd, config.hidden_size,
             config.n_layer, config.n_head)
    assert facts == (1024, 1024, 768, 768, 12, 12), f"gpt2 config: {facts}"
    assert pretrained.config_dict("gpt2")["n_ctx"] == config.n_positions


def test_t5_small_config_position_facts():
    """t5-small: width 512, 6 layers of 8 heads, 32 relative-position buckets up to distance 128."""
    from transformers import T5Config

    config = pretrained.model_config("t5-small")
    assert isinstance(config, T5Config)
    facts = (config.d_model, config.num_layers, config.num_decoder_layers, config.num_heads,
             config.relative_attention_num_buckets, config.relative_attention_max_distance)
    assert facts == (512, 6, 6, 8, 32, 128), f"t5-small config: {facts}"


def test_t5_small_300_is_a_generation_length():
    """Seed 000's 300 is ``task_specific_params.translation_en_to_de.max_length``: a generation
    setting beside num_beams and a prompt prefix, not a position limit; T5Config has no
    max_position_embeddings at all."""
    from transformers import T5Config

    config = pretrained.model_config("t5-small")
    translation = config.task_specific_params["translation_en_to_de"]
    assert translation["max_length"] == 300, f"translation_en_to_de: {translation}"
    assert {"num_beams", "early_stopping", "prefix"} <= set(translation), f"translation_en_to_de: {translation}"
    assert translation["prefix"] == "translate English to German: "
    assert not hasattr(T5Config(), "max_position_embeddings"), "T5Config() has a max_position_embeddings"
    # The other generation lengths differ by task: they are per-task output limits.
    lengths = {task: params["max_length"] for task, params in config.task_specific_params.items()}
    assert lengths == {"summarization": 200, "translation_en_to_de": 300, "translation_en_to_fr": 300,
                       "translation_en_to_ro": 300}, f"max_length per task: {lengths}"
