"""GPT-2's and t5-small's real weights, when the local Hugging Face cache holds them.

The build machines cannot download them, so these tests skip there, with a reason that
says how to enable them; ``tox -e pretrained`` runs only these. They load through the
same ``from_pretrained(..., local_files_only=True)`` path as the MiniLM tests.

The thresholds are those of the MiniLM tests, named in :mod:`posenc_spec.pretrained.learned`
(test_pretrained_minilm.py states the values measured there); GPT-2's own values are
printed by each assertion message.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc_spec import pretrained
from posenc_spec.families.sinusoidal.learned_fit import best_sinusoidal_fit
from posenc_spec.tolerance import unit_roundoff
from spec_tests.t5_buckets import t5_bucket

pytestmark = pytest.mark.pretrained

SEED = 0


def _load_or_skip(repo_id: str, model_class: str):
    if not pretrained.is_cached(repo_id):
        pytest.skip(pretrained.skip_reason(repo_id, model_class))
    return pretrained.load_pretrained(repo_id, model_class).eval()


def _stored_tensors(repo_id: str, names_ending) -> dict[str, np.ndarray]:
    """The tensors of the cached weights file whose names end with one of ``names_ending``."""
    path = pretrained.cached_weights_file(repo_id)
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        tensors = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
        tensors = {name: value.numpy() for name, value in state.items()}
    return {name: value for name, value in tensors.items() if name.endswith(tuple(names_ending))}


@pytest.fixture(scope="module")
def gpt2():
    return _load_or_skip("gpt2", "GPT2Model")


@pytest.fixture(scope="module")
def gpt2_table(gpt2):
    return pretrained.position_table(gpt2)


@pytest.fixture(scope="module")
def t5():
    return _load_or_skip("t5-small", "T5ForConditionalGeneration")


# -- GPT-2 --------------------------------------------------------------------------------


def test_gpt2_wpe_is_1024_by_768_float32_from_the_file(gpt2_table):
    """GPT-2's ``wpe`` is 1024 x 768 float32 and equals, bit for bit, the tensor in the cached weights file."""
    assert gpt2_table.shape == (1024, 768) and gpt2_table.dtype == np.float32, f"{gpt2_table.shape} {gpt2_table.dtype}"
    stored = _stored_tensors("gpt2", ["wpe.weight"])
    assert len(stored) == 1, f"wpe tensors in the file: {sorted(stored)}"
    assert np.array_equal(gpt2_table, next(iter(stored.values()))), "loaded wpe differs from the file"


def test_gpt2_sequence_classification_reaches_the_same_wpe(gpt2_table):
    """Seed 001's GPT2ForSequenceClassification loads the same table as ``.transformer.wpe``."""
    model = _load_or_skip("gpt2", "GPT2ForSequenceClassification")
    assert np.array_equal(model.transformer.wpe.weight.detach().numpy(), gpt2_table)


def test_gpt2_neighbouring_rows_more_similar_than_random_pairs(gpt2_table):
    """The median cosine of positions p, p + 1 exceeds the 95th percentile over all pairs."""
    neighbours = pretrained.neighbour_similarities(gpt2_table)
    pairs = pretrained.pair_similarities(gpt2_table)
    median_neighbour, pair_95 = np.median(neighbours), np.percentile(pairs, pretrained.NEIGHBOUR_PERCENTILE)
    assert median_neighbour > pair_95, f"gpt2: median neighbour cosine {median_neighbour:.3g} <= {pair_95:.3g}"


def test_gpt2_wpe_is_low_rank_against_a_random_table(gpt2_table):
    """The effective rank of ``wpe`` is at most half that of a seeded Gaussian table like it."""
    effective = pretrained.effective_rank(gpt2_table)
    random_effective = pretrained.effective_rank(pretrained.random_table_like(gpt2_table, SEED))
    assert effective <= pretrained.MAX_EFFECTIVE_RANK_SHARE * random_effective, \
        f"gpt2: effective rank {effective:.4g}, random {random_effective:.4g}"


def test_gpt2_wpe_is_not_sinusoidal_under_any_base_or_rotation(gpt2_table):
    """No preset at any base becomes GPT-2's table by a scale, a rotation and a shift: the
    best fit leaves at least half of it unexplained (the search is the one that recognises
    a disguised sinusoidal table to rounding in test_pretrained_minilm.py)."""
    fit = best_sinusoidal_fit(gpt2_table)
    assert fit.relative >= pretrained.MIN_SINUSOIDAL_RESIDUAL, f"gpt2's wpe is nearly sinusoidal: {fit.describe()}"


# -- t5-small -----------------------------------------------------------------------------


def test_t5_small_relative_bias_only_in_block_0_from_the_file(t5):
    """t5-small's only position weights are block 0's ``relative_attention_bias`` in each
    stack, 32 buckets x 8 heads float32, equal to the cached file's tensors."""
    position_parameters = {name: value for name, value in t5.named_parameters()
                           if "pos" in name or "relative" in name}
    assert sorted(position_parameters) == [
        "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    ], f"position parameters: {sorted(position_parameters)}"
    stored = _stored_tensors("t5-small", list(position_parameters))
    for name, value in position_parameters.items():
        assert tuple(value.shape) == (32, 8) and value.dtype == torch.float32, f"{name}: {value.shape} {value.dtype}"
        assert np.array_equal(value.detach().numpy(), stored[name]), f"{name} differs from the file"


@pytest.mark.parametrize("stack_name", ["encoder", "decoder"])
def test_t5_small_bias_depends_only_on_offset(t5, stack_name):
    """With the trained weights, ``compute_bias(40, 40)[h, q, k]`` is the bucket table's entry for ``k - q``."""
    attention = getattr(t5, stack_name).block[0].layer[0].SelfAttention
    with torch.no_grad():
        bias = attention.compute_bias(40, 40)[0]
        table = attention.relative_attention_bias.weight
    expected = torch.stack([torch.stack([table[t5_bucket(k - q, stack_name == "encoder")] for k in range(40)])
                            for q in range(40)]).permute(2, 0, 1)
    assert torch.equal(bias, expected), f"t5-small {stack_name}: bias is not a function of the offset alone"


def test_t5_small_encoder_is_order_blind_without_its_relative_bias():
    """With the trained weights and block 0's relative bias zeroed, t5-small's encoder
    (in float64) maps shuffled tokens to shuffled outputs, below float32 resolution
    (``unit_roundoff(float32) * max |output|``): nothing else in it sees positions."""
    encoder = _load_or_skip("t5-small", "T5EncoderModel").to(torch.float64)
    generator = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, encoder.config.vocab_size, (1, 20), generator=generator)
    permutation = torch.randperm(20, generator=generator)
    with torch.no_grad():
        encoder.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.zero_()
        output = encoder(input_ids=ids).last_hidden_state[0]
        shuffled = encoder(input_ids=ids[:, permutation]).last_hidden_state[0]
    error = float((output[permutation] - shuffled).abs().max())
    bound = unit_roundoff("float32") * float(output.abs().max())
    assert error <= bound, f"t5-small encoder without relative bias sees order: {error:.3g} > {bound:.3g}"
