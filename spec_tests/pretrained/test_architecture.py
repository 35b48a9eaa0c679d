"""Where GPT-2 and T5 keep position information, on randomly initialised models built from
the gpt2 and t5-small configs (no weights needed).

Shrunk: GPT-2 is built with 1 layer instead of 12, because ``wpe`` sits in front of the
layers and its size and the position limit do not depend on depth. T5 keeps its full
depth (6 + 6 blocks): which blocks hold the relative attention bias is a fact about the
layer structure. Both get a small vocabulary (:data:`VOCAB_SIZE`): no position module
reads it, and the hub's 50257 and 32128 embedding rows only cost initialisation time.
"""

from __future__ import annotations

import pytest
import torch

from posenc_spec import pretrained
from spec_tests.t5_buckets import t5_bucket

OFFSETS = range(-130, 131)
VOCAB_SIZE = 512  # token ids never meet a position module; T5's 32128 rows took 1.4 s of its 2.5 s build


# transformers' model modules take seconds to import: they load with the first test that
# needs them, not when every pytest-xdist worker collects this module.


def _t5_bucket_function():
    from transformers.models.t5.modeling_t5 import T5Attention

    return T5Attention._relative_position_bucket


@pytest.fixture(scope="module")
def gpt2():
    from transformers import GPT2ForSequenceClassification

    torch.manual_seed(0)
    return GPT2ForSequenceClassification(pretrained.model_config("gpt2", n_layer=1, vocab_size=VOCAB_SIZE)).eval()


@pytest.fixture(scope="module")
def t5():
    from transformers import T5ForConditionalGeneration

    torch.manual_seed(0)
    return T5ForConditionalGeneration(pretrained.model_config("t5-small", vocab_size=VOCAB_SIZE)).eval()


# -- GPT-2 --------------------------------------------------------------------------------


def test_gpt2_learned_table_is_wpe(gpt2):
    """GPT2ForSequenceClassification reaches its learned position table as ``.transformer.wpe``,
    an ``Embedding(1024, 768)``, the model's only position module."""
    wpe = gpt2.transformer.wpe
    assert isinstance(wpe, torch.nn.Embedding), f"transformer.wpe is {type(wpe).__name__}"
    assert (wpe.num_embeddings, wpe.embedding_dim) == (1024, 768), f"transformer.wpe: {wpe}"
    assert wpe.weight.requires_grad, "transformer.wpe is not trainable"
    position_modules = [name for name, _ in gpt2.named_modules() if "wpe" in name or "position" in name]
    assert position_modules == ["transformer.wpe"], f"position modules: {position_modules}"


def test_gpt2_adds_wpe_row_p_at_position_p(gpt2):
    """The first hidden state is ``wte[token] + wpe[p]``: row p of the table is added at position p."""
    ids = torch.randint(0, gpt2.config.vocab_size, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        hidden = gpt2.transformer(ids, output_hidden_states=True).hidden_states[0][0]
        expected = gpt2.transformer.wte.weight[ids[0]] + gpt2.transformer.wpe.weight[:9]
    assert torch.equal(hidden, expected), f"max |hidden - (wte + wpe)| = {(hidden - expected).abs().max().item()}"


def test_gpt2_runs_1024_positions_and_refuses_1025(gpt2):
    """1024 positions run; 1025 is an IndexError: row 1024 of ``wpe`` does not exist."""
    with torch.no_grad():
        out = gpt2.transformer(torch.zeros((1, 1024), dtype=torch.long)).last_hidden_state
        assert out.shape == (1, 1024, 768), f"1024 positions gave {tuple(out.shape)}"
        with pytest.raises(IndexError, match="index out of range"):
            gpt2.transformer(torch.zeros((1, 1025), dtype=torch.long))


# -- T5 -----------------------------------------------------------------------------------


def _self_attentions(stack):
    return [block.layer[0].SelfAttention for block in stack.block]


def test_t5_has_no_absolute_position_module(t5):
    """No T5 module embeds positions: the only position parameters are the two
    ``relative_attention_bias`` tables, and no stack has a ``wpe`` or ``embed_positions``."""
    position_parameters = sorted(name for name, _ in t5.named_parameters() if "pos" in name or "relative" in name)
    assert position_parameters == [
        "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    ], f"position parameters: {position_parameters}"
    classes = sorted({type(module).__name__ for module in t5.modules() if "Position" in type(module).__name__})
    assert classes == [], f"position module classes: {classes}"
    for stack in (t5.encoder, t5.decoder):
        present = [attr for attr in ("wpe", "embed_positions", "position_embeddings") if hasattr(stack, attr)]
        assert present == [], f"{type(stack).__name__} has {present}"
    assert list(t5.named_buffers()) == [], f"buffers: {[name for name, _ in t5.named_buffers()]}"


@pytest.mark.parametrize("stack_name", ["encoder", "decoder"])
def test_t5_only_block_0_holds_relative_attention_bias(t5, stack_name):
    """In each stack of 6 blocks, block 0's self-attention holds ``relative_attention_bias``,
    an Embedding(32 buckets, 8 heads); blocks 1-5 and every cross-attention hold none."""
    stack = getattr(t5, stack_name)
    attentions = _self_attentions(stack)
    assert len(attentions) == 6, f"{stack_name}: {len(attentions)} blocks"
    holders = [i for i, attention in enumerate(attentions) if attention.has_relative_attention_bias]
    assert holders == [0], f"{stack_name}: blocks with relative_attention_bias: {holders}"
    bias = attentions[0].relative_attention_bias
    assert (bias.num_embeddings, bias.embedding_dim) == (32, 8), f"{stack_name}.block.0: {bias}"
    assert all(not hasattr(attention, "relative_attention_bias") for attention in attentions[1:])
    if stack_name == "decoder":
        cross = [block.layer[1].EncDecAttention for block in stack.block]
        assert not any(attention.has_relative_attention_bias for attention in cross), f"{stack_name} cross-attention"


def test_t5_later_blocks_reuse_block_0_bias(t5):
    """In a forward pass, block 0 of each stack computes the position bias (from its
    bucket table, bidirectional in the encoder, causal in the decoder) and every later
    block is handed that same tensor."""
    seen = {}

    def record(name):
        def hook(module, args, kwargs, output):
            seen[name] = (kwargs.get("position_bias"), output[1])
        return hook

    handles = [attention.register_forward_hook(record((stack_name, i)), with_kwargs=True)
               for stack_name in ("encoder", "decoder")
               for i, attention in enumerate(_self_attentions(getattr(t5, stack_name)))]
    generator = torch.Generator().manual_seed(0)
    source = torch.randint(0, t5.config.vocab_size, (1, 11), generator=generator)
    target = torch.randint(0, t5.config.vocab_size, (1, 7), generator=generator)
    try:
        with torch.no_grad():
            t5(input_ids=source, decoder_input_ids=target)
    finally:
        for handle in handles:
            handle.remove()
    for stack_name, length in (("encoder", 11), ("decoder", 7)):
        given, computed = seen[(stack_name, 0)]
        assert given is None, f"{stack_name} block 0 was handed a position bias"
        with torch.no_grad():
            expected = _self_attentions(getattr(t5, stack_name))[0].compute_bias(length, length)
        assert torch.equal(computed, expected), f"{stack_name} block 0's bias is not compute_bias({length}, {length})"
        for i in range(1, 6):
            handed, returned = seen[(stack_name, i)]
            assert handed is computed and returned is computed, f"{stack_name} block {i} did not reuse block 0's bias"


# Where each log-spaced bucket starts (distance n = |offset|), from the formula by hand:
# ceil(8 * 16 ** (j / 8)) bidirectional, ceil(16 * 8 ** (j / 16)) causal.
BUCKET_STARTS = {
    True: [8, 12, 16, 23, 32, 46, 64, 91],
    False: [16, 19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113],
}


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "causal"])
def test_t5_bucket_of_every_offset(bidirectional):
    """T5's bucket function agrees with the paper's formula at every offset from -130 to 130."""
    offsets = torch.tensor(list(OFFSETS))
    got = _t5_bucket_function()(offsets, bidirectional=bidirectional, num_buckets=32, max_distance=128).tolist()
    expected = [t5_bucket(offset, bidirectional) for offset in OFFSETS]
    wrong = [(offset, g, e) for offset, g, e in zip(OFFSETS, got, expected, strict=True) if g != e]
    assert not wrong, f"_relative_position_bucket(bidirectional={bidirectional}): (offset, got, expected) {wrong}"


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "causal"])
def test_t5_buckets_exact_then_log_spaced_then_saturated(bidirectional):
    """Small distances get one bucket each, larger ones log-spaced bins that start where
    the formula says, and every distance from 113 (causal) or 91 (bidirectional) on shares
    the last bucket; causal attention puts all keys after the query in bucket 0."""
    relative_position_bucket = _t5_bucket_function()

    def bucket(offset):
        return int(relative_position_bucket(torch.tensor(offset), bidirectional=bidirectional))

    exact = 8 if bidirectional else 16
    assert [bucket(-n) for n in range(exact)] == list(range(exact)), "one bucket per small distance"
    starts = BUCKET_STARTS[bidirectional]
    for j, start in enumerate(starts):
        assert (bucket(-(start - 1)), bucket(-start)) == (exact + j - 1, exact + j), \
            f"log bucket {exact + j} should start at distance {start}"
    last = 2 * exact - 1
    assert {bucket(-n) for n in range(starts[-1], 1000)} == {last}, f"distances {starts[-1]}..999 in bucket {last}"
    if bidirectional:
        assert [bucket(n) for n in range(1, exact)] == list(range(17, 16 + exact)), "keys after the query"
        assert {bucket(n) for n in range(91, 1000)} == {31}
    else:
        assert {bucket(n) for n in range(0, 1000)} == {0}, "causal: every key after the query in bucket 0"


@pytest.mark.parametrize("stack_name", ["encoder", "decoder"])
def test_t5_bias_depends_only_on_offset(t5, stack_name):
    """``compute_bias(40, 40)[h, q, k]`` is ``relative_attention_bias[bucket(k - q), h]``:
    a function of the offset alone, the same along every diagonal."""
    attention = _self_attentions(getattr(t5, stack_name))[0]
    bidirectional = stack_name == "encoder"
    with torch.no_grad():
        bias = attention.compute_bias(40, 40)[0]
        table = attention.relative_attention_bias.weight
    assert bias.shape == (8, 40, 40), f"{stack_name}: compute_bias shape {tuple(bias.shape)}"
    expected = torch.stack([torch.stack([table[t5_bucket(k - q, bidirectional)] for k in range(40)])
                            for q in range(40)]).permute(2, 0, 1)
    assert torch.equal(bias, expected), f"{stack_name}: bias differs from the table looked up by offset"
    for offset in range(-39, 40):
        diagonal = torch.diagonal(bias, offset=offset, dim1=1, dim2=2)
        assert torch.equal(diagonal, diagonal[:, :1].expand_as(diagonal)), f"{stack_name}: offset {offset} varies"
