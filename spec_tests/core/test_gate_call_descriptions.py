"""Real call shapes gated as written, with a call description and no wrapper: Meta's
``precompute_freqs_cis(dim, end, theta)``, GPT-J's ``apply_rotary_pos_emb(tensor, sin, cos)``,
x-transformers' ``RotaryEmbedding.forward(t)`` returning ``(freqs, scale)``, flash-attn's
``apply_rotary_emb(x, cos, sin, interleaved=...)``, vLLM's ``RotaryEmbedding.forward(positions,
query, key)``, an ALiBi ``fn(num_heads, q_len, k_len)``, funasr's ``get_alibi(max_positions,
heads)``, keras-hub Falcon's ``_build_alibi_tensor(heads, mask)`` and the PyTorch tutorial's
table kept as ``pe``. Installed libraries are imported; the others are copies in
``spec_tests/real_targets/verbatim`` (each file names its source and licence). Each conforms as
declared; declared with its roles swapped or its result misread, it fails on a call's shape,
an exception or the formula, and the message or a hint says which.

Meta's is declared at ``head_dim = 64``: the short call of a length cache is then 64 x 64,
square, and only the grid's longer call (8193 positions) can tell ``fn(head_dim,
num_positions)`` from ``fn(num_positions, head_dim)``.
"""

from __future__ import annotations

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary
from spec_tests.real_targets import HERE

VERBATIM = HERE / "verbatim"
SMALL = 64

# name -> (the declaration as written, the change that misdeclares it, what its failure or hint says)
REAL = {
    "meta-precompute": ({"target": f"{VERBATIM / 'meta_llama.py'}:precompute_freqs_cis", "api": "rope-cache",
                         "call": "precompute_freqs_cis(head_dim, num_positions, theta=10000.0)",
                         "cache_form": "complex", "cache_layout": "compact", "head_dim": 64},
                        {"call": "precompute_freqs_cis(num_positions, head_dim, theta=10000.0)"},
                        "returned shape 64x4096, expected 8193x32"),
    "gptj-apply": ({"target": "transformers.models.gptj.modeling_gptj:apply_rotary_pos_emb", "api": "rope-apply",
                    "call": "apply_rotary_pos_emb(x, sin, cos)", "cache_layout": "compact",
                    "rope_layout": "interleaved", "head_dim": 64},
                   {"call": "apply_rotary_pos_emb(x, cos, sin)"}, "formula["),
    "x-transformers": ({"target": "x_transformers.x_transformers:RotaryEmbedding", "api": "rope-cache",
                        "call": "RotaryEmbedding(dim=head_dim).forward(positions)[0]", "cache_form": "angles",
                        "cache_layout": "interleaved", "head_dim": 64},
                       {"call": "RotaryEmbedding(dim=head_dim).forward(positions)[1]"}, "0-d array"),
    "flash-attn": ({"target": f"{VERBATIM / 'flash_attn_rotary.py'}:apply_rotary_emb", "api": "rope-apply",
                    "call": "apply_rotary_emb(x, cos, sin, interleaved=False)", "cache_layout": "compact",
                    "head_dim": 64},
                   {"call": "apply_rotary_emb(x, cos, sin, interleaved=True)"},
                   "rotate-half and interleaved pairs mixed up"),
    "vllm": ({"target": f"{VERBATIM / 'vllm_rotary.py'}:RotaryEmbedding", "api": "rope-apply",
              "call": "RotaryEmbedding(head_dim, head_dim, max_positions, base, True, dtype)"
                      ".forward(positions, q, k)", "max_positions": 8192, "head_dim": 64},
             {"call": "RotaryEmbedding(head_dim, head_dim, max_positions, base, True, dtype)"
                      ".forward(positions, k, q)"}, "formula["),
    "alibi-query-key": ({"target": f"{VERBATIM / 'alibi_query_key.py'}:alibi_bias", "api": "alibi-bias",
                         "call": "alibi_bias(num_heads, query_length, key_length)", "attention_heads": 12},
                        {"call": "alibi_bias(num_heads, key_length, query_length)"}, "returned shape (12, 8, 1)"),
    "funasr": ({"target": f"{VERBATIM / 'funasr_alibi.py'}:get_alibi", "api": "alibi-bias",
                "call": "get_alibi(key_length, num_heads)", "bias_form": "symmetric", "bias_region": "full",
                "attention_heads": 12},
               {"call": "get_alibi(num_heads, key_length)"}, "returned shape (7, 12, 12)"),
    "keras-hub-falcon": ({"target": f"{VERBATIM / 'keras_hub_falcon_alibi.py'}:FalconTransformerDecoder",
                          "api": "alibi-bias", "alibi_convention": "bloom", "attention_heads": 71,
                          "call": "FalconTransformerDecoder()._build_alibi_tensor(num_heads, attention_mask)"},
                         {"call": "FalconTransformerDecoder()._build_alibi_tensor(attention_mask, num_heads)"},
                         "'int' object has no attribute 'shape'"),
    "table-attribute": ({"target": f"{VERBATIM / 'pytorch_tutorial.py'}:PositionalEncoding",
                         "call": "PositionalEncoding(d_model=dim, max_len=num_positions).pe", "convention": "vaswani",
                         "max_positions": SMALL},
                        {"call": "PositionalEncoding(d_model=num_positions, max_len=dim).pe"}, "returned shape"),
}


@pytest.fixture(scope="module")
def reports():
    """Each as declared and as misdeclared (the latter with --fail-fast: its first failure is enough)."""
    declared = {name: declare(keys) for name, (keys, _, _) in REAL.items()}
    misdeclared = {name: declare({**keys, **wrong}) for name, (keys, wrong, _) in REAL.items()}
    return check_named(declared), check_named(misdeclared, fail_fast=True)


@pytest.mark.parametrize("name", REAL)
def test_real_code_described_as_written_conforms(reports, name):
    """Declared with the call it has, it conforms."""
    report = reports[0][name]
    assert report.conforms, f"{name}: {failure_summary(report)}"


@pytest.mark.parametrize("name", REAL)
def test_a_wrong_description_fails_saying_why(reports, name):
    """Declared with its roles swapped or the wrong element read, it fails, and the first
    failure or a hint says what went wrong."""
    report = reports[1][name]
    said = failure_summary(report, 1) + " ".join(hint.text() for hint in report.hints)
    assert not report.conforms and REAL[name][2] in said, f"{name}: {said}"


def test_every_description_and_misdescription_is_a_declaration_the_gate_accepts():
    """Each call description, as written and as misdescribed, is accepted by the gate: the
    misdescribed ones fail checks in the run (the slow tier), not as a usage error."""
    for keys, wrong, _ in REAL.values():
        assert declare(keys).api == declare({**keys, **wrong}).api == keys.get("api", "table")
