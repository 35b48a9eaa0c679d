"""The RoPE gate on rotary code that ships in installed packages, called, not copied.

transformers 5: ``ROPE_INIT_FUNCTIONS`` for every rope type and the default (rope-freqs),
``LlamaRotaryEmbedding`` with default, llama3 and dynamic configs (rope-cache, ``x-positions``,
half layout), Llama's ``apply_rotary_pos_emb`` with the module's cos and sin, GPT-J's
``rotate_every_two`` apply (interleaved, ``rotary_dim`` 64 of 256) and GPT-NeoX's partial
apply (``rotary_pct`` 0.25). rotary-embedding-torch (lucidrains): its angles, its interpolated
angles through its cache, and ``rotate_queries_or_keys``.

Each is declared with the convention it implements, from the example config of
``spec_tests/data/rope_configs/`` that fits it (the ``rope_config`` key) or from keys, and
conforms; each is also declared with a plausible wrong convention (a wrong base, factor,
layer type, layout, rotary size or attention factor) and the gate names the check that
catches it. Where a real implementation departs from the RoPE reference
(docs/families/rope-reference.md), the test asserts what the gate reports and its docstring
says why: a deviation the gate finds is a result.

The adapters live in ``spec_tests/real_targets/`` and only the gate's child imports them;
one ``check_many`` on one lane, with transformers' shared modules preloaded, imports each
adapter module once, in the module template every target forks from.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from posenc_spec.families.rope import grid
from posenc_spec.families.rope.spec import GRID_HEAD_DIMS
from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named, failure_summary
from spec_tests.real_targets import TRANSFORMERS_PRELOAD, target
from spec_tests.real_targets.rope_configs import CONFIGS, PER_LAYER_YARN

# The largest of the integers from 0 up that bfloat16 holds without a gap: 2**(mantissa bits + 1),
# with eps = 2**-(mantissa bits).
BFLOAT16_EXACT = round(2 / torch.finfo(torch.bfloat16).eps)
FLOAT16_MAX = torch.finfo(torch.float16).max


def hf(name: str) -> str:
    return target("rope_transformers", name)


def lucidrains(name: str) -> str:
    return target("rope_rotary_embedding_torch", name)


def config(name: str) -> str:
    return str(CONFIGS / name)


PHI3_LONG_FACTOR = json.loads((CONFIGS / "phi3_mini_128k_longrope.json").read_text())["rope_scaling"]["long_factor"]
DYNAMIC = {"rope_type": "dynamic", "rope_parameters": {"factor": 2.0}, "max_positions": 4096}  # L0 = 4096
# The adapter's per-layer yarn, declared at its head size.
PER_LAYER_YARN_KEYS = {"rope_type": PER_LAYER_YARN["rope_type"], "rope_theta": PER_LAYER_YARN["rope_theta"],
                       "head_dim": 128, "rope_parameters": {key: value for key, value in PER_LAYER_YARN.items()
                                                            if key not in ("rope_type", "rope_theta")}}
X_POSITIONS = {"api": "rope-cache", "cache_call": "x-positions"}
ANGLES = {"api": "rope-cache", "cache_form": "angles", "cache_layout": "interleaved"}

# name -> the declaration of what it implements
REAL = {
    "llama-default-freqs": {"target": hf("llama_default_freqs"), "api": "rope-freqs"},
    "phi2-default-freqs": {"target": hf("phi2_default_freqs"), "api": "rope-freqs",
                           "rope_config": config("phi2_partial_rotary.json")},
    "vicuna-linear-freqs": {"target": hf("vicuna_linear_freqs"), "api": "rope-freqs",
                            "rope_config": config("vicuna_7b_16k_linear_type.json")},
    "gemma3-linear-freqs": {"target": hf("gemma3_full_attention_linear_freqs"), "api": "rope-freqs",
                            "rope_config": config("gemma3_27b_layer_types.json"), "layer_type": "full_attention"},
    "dynamic-freqs": {"target": hf("dynamic_freqs"), "api": "rope-freqs", **DYNAMIC},
    "deepseek-yarn-freqs": {"target": hf("deepseek_yarn_freqs"), "api": "rope-freqs",
                            "rope_config": config("deepseek_v3_yarn.json")},
    "phi3-longrope-freqs": {"target": hf("phi3_longrope_freqs"), "api": "rope-freqs",
                            "rope_config": config("phi3_mini_128k_longrope.json")},
    "llama3-freqs": {"target": hf("llama3_freqs"), "api": "rope-freqs", "rope_config": config("llama3_1_8b.json")},
    "gemma4-proportional-freqs": {"target": hf("gemma4_proportional_freqs"), "api": "rope-freqs",
                                  "rope_config": config("gemma4_proportional.json"), "layer_type": "full_attention"},
    "llama-cache-default": {"target": hf("llama_cache_default"), **X_POSITIONS},
    "llama-cache-llama3": {"target": hf("llama_cache_llama3"), **X_POSITIONS,
                           "rope_config": config("llama3_1_8b.json")},
    "llama-apply": {"target": hf("llama_apply"), "api": "rope-apply", "x_layout": "bhsd"},
    "gptj-apply": {"target": hf("gptj_apply"), "api": "rope-apply", "rope_layout": "interleaved", "head_dim": 256,
                   "rotary_dim": 64, "max_positions": 2048},
    "neox-partial-apply": {"target": hf("neox_partial_apply"), "api": "rope-apply", "x_layout": "bhsd",
                           "partial_rotary_factor": 0.25},
    "lucidrains-angles": {"target": lucidrains("angles"), **ANGLES},
    "lucidrains-interpolated-angles": {"target": lucidrains("interpolated_angles"), **ANGLES, "cache_call": "length",
                                       "rope_type": "linear", "rope_parameters": {"factor": 2.0}},
}
# Declared right, and departing from the RoPE reference (see the tests below).
DEVIATING = {
    "llama-cache-dynamic": {"target": hf("llama_cache_dynamic"), **X_POSITIONS, **DYNAMIC},
    "lucidrains-rotate-queries": {"target": lucidrains("rotate_queries"), "api": "rope-apply",
                                  "rope_layout": "interleaved", "x_layout": "bhsd"},
    "per-layer-yarn-freqs": {"target": hf("per_layer_yarn_freqs"), "api": "rope-freqs", **PER_LAYER_YARN_KEYS},
}
# name -> (the implementation, the keys that make its declaration wrong, the check that fails, words of its reason)
WRONG = {
    "llama-default-freqs": ({"rope_theta": 500000.0, "head_dim": 64}, "formula[d=64]", "inv_freq:"),
    "phi2-default-freqs": ({"partial_rotary_factor": 1.0}, "call[d=80]", "expected (40,)"),
    "vicuna-linear-freqs": ({"rope_parameters": {"factor": 2.0}}, "formula[d=128]", "inv_freq:"),
    "gemma3-linear-freqs": ({"layer_type": "sliding_attention"}, "formula[d=128]", "inv_freq:"),
    "dynamic-freqs": ({"rope_type": "linear", "max_positions": None, "head_dim": 64}, "formula[d=64]", "inv_freq:"),
    "deepseek-yarn-freqs": ({"rope_parameters": {"mscale_all_dim": 0}}, "attention-factor[d=192]",
                            "expected 1.3688"),
    "phi3-longrope-freqs": ({"rope_parameters": {"short_factor": PHI3_LONG_FACTOR}}, "formula[d=96]", "inv_freq:"),
    "llama3-freqs": ({"rope_parameters": {"factor": 4.0}}, "formula[d=128]", "inv_freq:"),
    "gemma4-proportional-freqs": ({"rope_type": "default"}, "call[d=512]", "expected (64,)"),
    "llama-cache-default": ({"cache_layout": "interleaved", "head_dim": 64}, "formula[d=64:short:float32]", "cos:"),
    "llama-cache-llama3": ({"rope_config": None, "rope_theta": 500000.0, "head_dim": 128},
                           "formula[d=128:long:float32]", "cos:"),
    "llama-apply": ({"rope_layout": "interleaved", "head_dim": 64}, "formula[d=64:float32]", "x':"),
    "gptj-apply": ({"rope_layout": "half"}, "formula[d=256:float32]", "x':"),
    "neox-partial-apply": ({"partial_rotary_factor": None, "head_dim": 64}, "formula[d=64:float32]", "x':"),
    "lucidrains-angles": ({"cache_layout": "half", "head_dim": 64}, "formula[d=64:short]", "angles:"),
    "lucidrains-interpolated-angles": ({"rope_type": None, "rope_parameters": None, "head_dim": 64},
                                      "formula[d=64:short]", "angles:"),
}
RIGHT_TRUNCATION = {**DEVIATING["per-layer-yarn-freqs"],
                    "rope_parameters": {**PER_LAYER_YARN_KEYS["rope_parameters"], "truncate": True}}


def _declarations() -> dict:
    declarations = {(name, "declared"): declare(keys) for name, keys in {**REAL, **DEVIATING}.items()}
    for name, (changes, _, _) in WRONG.items():
        declarations[name, "wrong"] = declare({**REAL[name], **changes})
    declarations["per-layer-yarn-freqs", "truncated"] = declare(RIGHT_TRUNCATION)
    return declarations


@pytest.fixture(scope="module")
def reports():
    return check_named(_declarations(), preload=TRANSFORMERS_PRELOAD)


@pytest.mark.parametrize("name", REAL)
def test_real_rotary_code_conforms_to_its_convention(name, reports):
    """Each implementation conforms to the convention it implements, on the whole grid."""
    report = reports[name, "declared"]
    assert report.conforms, f"{name} under {report.declaration.convention_name()}: {failure_summary(report)}"


@pytest.mark.parametrize("name", WRONG)
def test_real_rotary_code_fails_a_wrong_declaration(name, reports):
    """Declared with a plausible wrong convention, the same code fails, and the check that
    catches it is the one the mistake concerns (the frequencies, the attention factor, the
    size of what comes back, the layout of the rotated features)."""
    _, check_id, words = WRONG[name]
    report = reports[name, "wrong"]
    result = report.result(check_id)
    assert not report.conforms and result.status == "failed" and words in result.message, (
        f"{name} under {report.declaration.convention_name()}: {check_id} {result.status}: {result.message}")


def test_transformers_dynamic_ntk_keeps_the_longest_calls_frequencies(reports):
    """Deviation. transformers' dynamic update recomputes ``inv_freq`` when a call is longer
    than any before, and restores the original only below ``L0``: after the 131073-position
    call, a call of length ``L0 + 1`` keeps the long call's base (the RoPE reference: the base follows
    each call's own length). Fresh, the same call is right; the short call after the long one
    is right too (restored). So ``history[d=D]`` fails at the ``L0 + 1`` call, for every head
    size, and nothing else does."""
    report = reports["llama-cache-dynamic", "declared"]
    assert {check.name for check in report.failures()} == {f"history[d={d}]" for d in GRID_HEAD_DIMS}, \
        failure_summary(report)
    for d in GRID_HEAD_DIMS:
        assert report.result(f"history[d={d}]").message.startswith(f"d={d}:length-4097-again"), failure_summary(report)
        assert report.result(f"formula[d={d}:length-4097:float32]").passed


def test_rotary_embedding_torch_forms_positions_in_the_dtype_of_q(reports):
    """Deviation. ``rotate_queries_or_keys`` builds its positions with ``get_seq_pos(...,
    dtype=q.dtype)``: in bfloat16 they collide above 256 (257 becomes 256), in float16 they
    round above 2048 and overflow to inf above 65504, so cos/sin of inf is NaN. float32 q is
    right everywhere (as are the relative-position and history checks, which use it): the
    gate reports ``formula[d=D:bfloat16]``, worst at a position above 256, and
    ``finite[d=D:float16]``, first at a position above 65504, and nothing else."""
    report = reports["lucidrains-rotate-queries", "declared"]
    positions = grid.grid_positions(report.declaration.spec.convention)  # the long calls, as the gate made them
    expected = {f"{check}[d={d}:{dtype}]" for d in GRID_HEAD_DIMS
                for check, dtype in (("formula", "bfloat16"), ("finite", "float16"))}
    assert {check.name for check in report.failures()} == expected, failure_summary(report)
    for d in GRID_HEAD_DIMS:
        _, _, row, _ = report.result(f"formula[d={d}:bfloat16]").worst.index  # x' is (1, heads, seq, d)
        assert positions[row] > BFLOAT16_EXACT, report.result(f"formula[d={d}:bfloat16]").message
        finite = report.result(f"finite[d={d}:float16]").message
        first = re.search(r"NaN or Inf values in the \d+ table, first at \[(\d+)\]", finite)
        assert first and positions[int(first.group(1)) // d % positions.size] > FLOAT16_MAX, finite
        assert report.result(f"formula[d={d}:float32]").passed


def test_transformers_loses_a_per_layer_yarn_truncate(reports):
    """Deviation. ``_compute_yarn_parameters`` reads ``truncate`` from ``config.rope_parameters``,
    which in a per-layer-type config is the dict of layer types, not the layer's own: the
    layer's ``truncate: false`` is lost and the ramp's ends are floored and ceiled anyway. The
    gate fails the declared convention on the frequencies alone and accepts the same parameters
    with ``truncate`` on."""
    report = reports["per-layer-yarn-freqs", "declared"]
    assert [check.name for check in report.failures()] == ["formula[d=128]"], failure_summary(report)
    assert report.result("attention-factor[d=128]").passed
    truncated = reports["per-layer-yarn-freqs", "truncated"]
    assert truncated.conforms, failure_summary(truncated)


def test_every_declaration_is_accepted_by_the_gate():
    """Each real, deviating and misdeclared target is a declaration of a RoPE API the gate
    accepts (the run that judges them reads transformers' code: the slow tier)."""
    declarations = _declarations()
    assert {name for name, _ in declarations} == {*REAL, *DEVIATING}
    assert all(declaration.api.startswith("rope-") for declaration in declarations.values())
