"""The gate on real code as its authors wrote it, with no wrapper (the ``signature``,
``init`` and ``method`` keys, ``posenc_spec/gate/signatures.py``): transformers'
``apply_rotary_pos_emb`` and ``LlamaRotaryEmbedding`` built from a ``config.json``,
rotary-embedding-torch's ``RotaryEmbedding(dim).rotate_queries_or_keys``, and, copied
verbatim where they cannot be installed (``spec_tests/real_targets/verbatim``), torchtune's
``RotaryPositionalEmbeddings``, Meta's ``apply_rotary_emb``, the PyTorch tutorial's
``PositionalEncoding`` and diffusers' ``get_timestep_embedding`` called with Stable
Diffusion's options (``kwargs``). Each conforms as declared and fails under a wrong declaration, with
a hint that names the difference (transformers' apply, handed cos and sin laid out for a
wrongly declared interleaved pairing, pairs them rotate-half: the hint names that and advises
the pairing it computes).
"""

from __future__ import annotations

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary
from spec_tests.real_targets import HERE, TRANSFORMERS_PRELOAD
from spec_tests.real_targets.rope_configs import CONFIGS

VERBATIM = HERE / "verbatim"
LLAMA = "transformers.models.llama.modeling_llama"
# rotary-embedding-torch's known deviation in low precision (spec_tests/families/rope/test_real_code.py)
XFAILS = HERE.parent / "data" / "rotary_embedding_torch.xfails"
SMALL = 64

# name -> (what it is, as declared; a wrong key)
REAL = {
    "transformers-apply": ({"target": f"{LLAMA}:apply_rotary_pos_emb", "api": "rope-apply",
                            "signature": "q-k-cos-sin", "x_layout": "bhsd", "head_dim": 64},
                           {"rope_layout": "interleaved"}),
    "transformers-module": ({"target": f"{LLAMA}:LlamaRotaryEmbedding", "api": "rope-cache",
                             "cache_call": "x-positions", "init": "config",
                             "rope_config": str(CONFIGS / "llama3_1_8b.json")},
                            {"rope_theta": 10000.0}),
    "rotary-embedding-torch": ({"target": "rotary_embedding_torch:RotaryEmbedding", "api": "rope-apply",
                                "signature": "x-offset", "x_layout": "bhsd", "rope_layout": "interleaved",
                                "init": {"dim": "{head_dim}"}, "method": "rotate_queries_or_keys", "head_dim": 64,
                                "xfails": str(XFAILS)},
                               {"rope_layout": "half"}),
    "torchtune": ({"target": f"{VERBATIM / 'torchtune_rope.py'}:RotaryPositionalEmbeddings", "api": "rope-apply",
                   "signature": "x-input-pos", "rope_layout": "interleaved", "head_dim": 64,
                   "init": {"dim": "{head_dim}", "max_seq_len": "{max_positions}"}, "max_positions": 8192},
                  {"rope_theta": 500000.0}),
    "meta": ({"target": f"{VERBATIM / 'meta_llama.py'}:apply_rotary_emb", "api": "rope-apply",
              "signature": "xq-xk-freqs-cis", "rope_layout": "interleaved", "head_dim": 64},
             {"rope_layout": "half"}),
    "diffusers-timesteps": ({"target": f"{VERBATIM / 'diffusers_timesteps.py'}:get_timestep_embedding",
                             "api": "timesteps", "convention": "guided-diffusion", "odd": "zero-pad",
                             "kwargs": {"flip_sin_to_cos": True, "downscale_freq_shift": 0}},
                            {"kwargs": {"flip_sin_to_cos": True, "downscale_freq_shift": 1}}),
    "pytorch-tutorial": ({"target": f"{VERBATIM / 'pytorch_tutorial.py'}:PositionalEncoding",
                          "signature": "adds-to-x", "init": {"d_model": "{dim}", "max_len": "{num_positions}"},
                          "convention": "vaswani", "max_positions": SMALL},
                         {"convention": "concat"}),
}


@pytest.fixture(scope="module")
def reports():
    """Each as declared and as misdeclared (the latter with --fail-fast: its first failure is enough)."""
    declared = {name: declare(keys) for name, (keys, _) in REAL.items()}
    misdeclared = {name: declare({**keys, **wrong}) for name, (keys, wrong) in REAL.items()}
    return (check_named(declared, preload=TRANSFORMERS_PRELOAD),
            check_named(misdeclared, preload=TRANSFORMERS_PRELOAD, fail_fast=True))


@pytest.mark.parametrize("name", REAL)
def test_real_code_as_written_conforms(reports, name):
    """Declared as what it computes, with the signature it has, it conforms."""
    report = reports[0][name]
    assert report.conforms, f"{name}: {failure_summary(report)}"


@pytest.mark.parametrize("name", REAL)
def test_real_code_as_written_fails_a_wrong_declaration(reports, name):
    """Declared with one key wrong, it fails a formula check (not a call: it was called right)."""
    report = reports[1][name]
    failed = [check.name for check in report.failures()]
    assert failed and failed[0].startswith("formula["), f"{name}: {failure_summary(report)}"


# name -> what the hint of its wrong declaration says
HINTS = {
    "transformers-apply": "rotate-half applied to the interleaved cos/sin",
    "transformers-module": "base (rope_theta) 500000 where 10000 is declared",
    "rotary-embedding-torch": "rotate-half and interleaved pairs mixed up",
    "torchtune": "base (rope_theta) 10000 where 500000 is declared",
    "meta": "rotate-half and interleaved pairs mixed up",
    "pytorch-tutorial": "the columns are interleaved (sin, cos, sin, cos, ...) where concat",
    "diffusers-timesteps": "the exponent divides by `half_dim - 1`",
}


@pytest.mark.parametrize("name", REAL)
def test_a_wrong_declaration_gets_a_hint_naming_the_difference(reports, name):
    """The hint says what the code does where the declaration says otherwise, and how to declare it."""
    hints = [hint.text() for hint in reports[1][name].hints]
    assert any(HINTS[name] in hint and "declare" in hint for hint in hints), hints


def test_the_module_built_from_its_config_keeps_the_config_theta(reports):
    """LlamaRotaryEmbedding built from Llama 3.1's config computes llama3 scaling with theta
    500000: its report says so."""
    assert "llama3" in reports[0]["transformers-module"].declaration.convention_name()


def test_every_declaration_and_misdeclaration_is_accepted_by_the_gate():
    """Each real target, declared and misdeclared, is a declaration the gate accepts: the
    misdeclared ones fail checks in the run (the slow tier), not as a usage error."""
    for keys, wrong in REAL.values():
        assert declare(keys).api == declare({**keys, **wrong}).api == keys.get("api", "table")
