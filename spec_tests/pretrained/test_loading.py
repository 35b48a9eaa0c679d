"""The offline loading path itself: the suite runs with the hub switched off, a model
missing from the cache fails at once and is reported with a way to enable its tests, and
a model present in a cache loads through ``from_pretrained(..., local_files_only=True)``.

A tiny GPT-2 saved into a cache folder laid out as huggingface_hub lays out its own
stands in for a downloaded model.
"""

from __future__ import annotations

import pytest
import torch
from huggingface_hub import constants
from huggingface_hub.errors import LocalEntryNotFoundError

from posenc_spec import pretrained

# transformers is imported inside the tests that use it: at the top, its 0.5 s would be paid in
# every pytest-xdist worker's collection, not only in the one that runs this file.

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_hub_is_offline_for_the_whole_suite():
    """``HF_HUB_OFFLINE`` was set before huggingface_hub was imported, so it is in force."""
    assert constants.HF_HUB_OFFLINE is True and constants.is_offline_mode(), "the Hugging Face hub is reachable"


def _fake_cache(root, repo_id: str):
    """A cache folder holding a tiny GPT-2 as ``repo_id`` at one snapshot."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=10, n_positions=16)
    model = transformers.GPT2Model(config)
    model.save_pretrained(repo / "snapshots" / COMMIT)
    return model


def test_missing_model_is_reported_with_how_to_enable(tmp_path):
    """A model not in the cache is reported as missing, and the skip reason names the
    model, the cache, the one download command and the tox env that runs its tests."""
    assert not pretrained.is_cached("gpt2", cache_dir=tmp_path)
    reason = pretrained.skip_reason("gpt2", "GPT2Model")
    for part in ("gpt2", pretrained.hub_cache_dir(), "GPT2Model.from_pretrained(\"gpt2\")", "tox -e pretrained"):
        assert part in reason, f"skip reason lacks {part!r}: {reason}"


def test_missing_model_fails_without_the_network(tmp_path):
    """``load_pretrained`` of a model absent from the cache raises OSError caused by
    huggingface_hub's LocalEntryNotFoundError: the cache was searched and outgoing
    traffic refused, no download attempted."""
    with pytest.raises(OSError) as raised:
        pretrained.load_pretrained("gpt2", "GPT2Model", cache_dir=tmp_path)
    chain, error = [], raised.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(error, LocalEntryNotFoundError) for error in chain), \
        f"OSError not caused by LocalEntryNotFoundError: {[type(error).__name__ for error in chain]}"


def test_cached_model_loads_through_from_pretrained(tmp_path):
    """A model in the cache is found (config and weights) and loads through
    ``from_pretrained(..., local_files_only=True)`` with every weight as saved."""
    from transformers import GPT2Model

    saved = _fake_cache(tmp_path, "example/tiny-gpt2")
    assert pretrained.is_cached("example/tiny-gpt2", cache_dir=tmp_path)
    assert pretrained.cached_weights_file("example/tiny-gpt2", cache_dir=tmp_path).name == "model.safetensors"
    loaded = pretrained.load_pretrained("example/tiny-gpt2", GPT2Model, cache_dir=tmp_path)
    for name, value in saved.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), f"{name} differs after loading from the cache"
    assert (pretrained.position_table(loaded) == saved.wpe.weight.detach().numpy()).all()


def test_position_table_refuses_a_model_without_one():
    """``position_table`` names what it found when a model has no learned position table."""
    with pytest.raises(ValueError, match="exactly one learned position embedding"):
        pretrained.position_table(torch.nn.Sequential(torch.nn.Linear(2, 2)))


def test_config_path_refuses_an_unknown_model():
    """Only the packaged configs are known; another name is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="gpt2, t5-small; got 'bert'"):
        pretrained.config_path("bert")
