"""The seeds' claims about pretrained models that are not true, each pinned by a test that
shows what is true instead (see "Claims in the seeds that are not true" in the conventions).

Models are randomly initialised from configs and shrunk where the claim does not depend
on size: the T5 encoders have 1 or 2 layers instead of 6 (the relative bias is computed in
block 0 and reused unchanged by every later block, and nothing else sees positions) and a
vocabulary of :data:`VOCAB_SIZE` tokens instead of 32128 (no position module reads it),
the Marian model is tiny (its sinusoidal module is the same class at any size).
"""

from __future__ import annotations

import torch

from posenc_spec import pretrained
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.tolerance import unit_roundoff
from reference_impls import torch_impl
from spec_tests.assertions import assert_check, assert_matches_formula

# transformers is imported inside the tests that use it: at the top, its 0.5 s would be paid in
# every pytest-xdist worker's collection, not only in the one that runs this file.

SEQUENCE_LENGTH = 20
VOCAB_SIZE = 512  # token ids never meet T5's relative bias; the hub's 32128 rows took most of each build


def _t5_encoder(num_layers: int, dtype=torch.float32, **overrides):
    import transformers

    torch.manual_seed(0)
    config = pretrained.model_config("t5-small", num_layers=num_layers, vocab_size=VOCAB_SIZE, **overrides)
    return transformers.T5EncoderModel(config).to(dtype).eval()


def _encode(encoder, ids, added=None):
    """The encoder's output for ``ids``, with ``added`` summed into the token embeddings."""
    with torch.no_grad():
        embeddings = encoder.get_input_embeddings()(ids)
        if added is not None:
            embeddings = embeddings + added
        return encoder(inputs_embeds=embeddings).last_hidden_state[0]


def _permutation_error(encoder, ids, permutation, added=None) -> float:
    """``max |f(x)[perm] - f(x[perm])|``: zero for a model that does not see positions."""
    return float((_encode(encoder, ids, added)[permutation] - _encode(encoder, ids[:, permutation], added))
                 .abs().max())


def test_seed000_t5_uses_sinusoidal_encodings_is_false():
    """Seed 000 says "t5 uses sinusoidal positional encodings". It uses none: with its one
    position component, block 0's relative attention bias, set to zero, the encoder is
    blind to order (shuffling the tokens only shuffles the outputs, to float64 rounding).
    Adding seed 000's sinusoidal table to the embeddings, as the claim would have it, or
    restoring the bias, makes the output depend on order by many orders of magnitude more.

    Computed in float64; "blind to order" means below what float32 can resolve:
    ``unit_roundoff(float32) * max |output|``. Measured: 4.2e-15 with the bias zeroed
    against a bound of 2.4e-7; 0.096 with the (random) bias; 1.7 with the sinusoidal table added.
    """
    encoder = _t5_encoder(num_layers=2, dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, encoder.config.vocab_size, (1, SEQUENCE_LENGTH), generator=generator)
    permutation = torch.randperm(SEQUENCE_LENGTH, generator=generator)
    bias = encoder.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight
    with_bias = _permutation_error(encoder, ids, permutation)
    with torch.no_grad():
        bias.zero_()
    bound = unit_roundoff("float32") * float(_encode(encoder, ids).abs().max())
    without_bias = _permutation_error(encoder, ids, permutation)
    sinusoidal = torch_impl.positional_encoding(SEQUENCE_LENGTH, encoder.config.d_model, dtype=torch.float64)
    with_sinusoids = _permutation_error(encoder, ids, permutation, added=sinusoidal)
    assert without_bias <= bound, f"T5 encoder, relative bias zeroed, sees order: {without_bias:.3g} > {bound:.3g}"
    assert with_bias > bound and with_sinusoids > bound, (
        f"the order test cannot see positions: error {with_bias:.3g} with the bias, {with_sinusoids:.3g} with "
        f"sinusoids added, bound {bound:.3g}")


def test_seed000_t5_has_no_position_limit():
    """The 300 seed 000 uses as ``max_position_embeddings`` is a generation length; T5
    itself has no position limit: its encoder runs 600 positions (more than the legacy
    ``n_positions`` 512), and ``n_positions`` changes nothing (a model built with 4 has the
    same weights and gives the same output)."""
    encoder = _t5_encoder(num_layers=1)
    tiny_limit = _t5_encoder(num_layers=1, n_positions=4)
    shapes = {name: tuple(value.shape) for name, value in encoder.state_dict().items()}
    assert shapes == {name: tuple(value.shape) for name, value in tiny_limit.state_dict().items()}
    ids = torch.randint(0, encoder.config.vocab_size, (1, 600), generator=torch.Generator().manual_seed(0))
    output = _encode(encoder, ids)
    assert output.shape == (600, encoder.config.d_model) and bool(torch.isfinite(output).all())
    assert torch.equal(output, _encode(tiny_limit, ids)), "n_positions changed the T5 encoder's output"


def test_seed002_frequencies_are_fixed_not_learned():
    """Seed 002 says "the model learns a different frequency" for each dimension. The
    frequencies are fixed by the width and the base: a model with a sinusoidal table
    (Marian, in transformers) holds it frozen, out of reach of the optimizer, and after a
    training step that moves the other weights the table is bit for bit what it was and
    still the formula, with the angle step per position still ``base ** (-2k/d)``."""
    import transformers

    torch.manual_seed(0)
    config = transformers.MarianConfig(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1,
                                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                                       decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=0,
                                       decoder_start_token_id=0)
    model = transformers.MarianMTModel(config).train()
    table = model.model.encoder.embed_positions.weight
    before, tokens_before = table.detach().clone(), model.model.shared.weight.detach().clone()
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    assert not table.requires_grad and all(parameter is not table for parameter in trainable), \
        "Marian's sinusoidal table is trainable"

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 64, (2, 16), generator=generator)
    labels = torch.randint(1, 64, (2, 12), generator=generator)
    optimizer = torch.optim.AdamW(trainable, lr=0.1)
    model(input_ids=ids, labels=labels).loss.backward()
    optimizer.step()

    assert not torch.equal(model.model.shared.weight, tokens_before), "the training step moved nothing"
    assert torch.equal(table, before), "a training step changed Marian's sinusoidal table"
    expected = checks.expectation(64, 32, "concat", "float32")
    values = table.detach().numpy()
    assert_matches_formula(values, "MarianSinusoidalPositionalEmbedding after a training step", expected)
    assert_check(checks.check_frequencies(values, expected), "MarianSinusoidalPositionalEmbedding")


def test_seed004_random_index_picks_a_dimension():
    """Seed 004 labels ``positions[:, randidx]`` "Position index", with ``randidx`` drawn
    below ``positions.shape[1]``: in a learned table (MiniLM's here, 512 positions x 384
    dimensions) that axis is the hidden size, so the index picks an embedding dimension and
    the plotted line runs over all positions."""
    model = pretrained.minilm_model()
    table = pretrained.minilm_position_table()
    config = model.config
    assert table.shape == (config.max_position_embeddings, config.hidden_size) == (512, 384), f"table {table.shape}"
    # The seed's np.random.randint(positions.shape[1]) draws below 384, never a position from 384 to 511.
    assert table.shape[1] == config.hidden_size != config.max_position_embeddings
    assert table[:, 383].shape == (config.max_position_embeddings,)
