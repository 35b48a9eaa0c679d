"""The RoPE oracle against transformers' own code, called, not copied.

For every rope type, transformers builds its config from an example file (or a dict), and
``ROPE_INIT_FUNCTIONS[type]`` (or the model's ``compute_default_rope_parameters``) returns
``inv_freq`` in float32 and the attention factor. Both must match
:meth:`RopeConvention.frequencies` within the bound for float32 frequencies. Then the real
``LlamaRotaryEmbedding`` cache and ``apply_rotary_pos_emb`` are judged at positions up to
131071, and a doubled yarn attention factor (bug 19) is shown to fail.

Where transformers 5.23 departs from the RoPE reference (docs/families/rope-reference.md), a
test below says how and why, and asserts the departure (so that it is noticed when it
changes): dynamic NTK takes L0 from ``max_position_embeddings`` whatever the RoPE dict
states; Llama's default frequencies ignore ``partial_rotary_factor``. The departures the gate
itself reports (a per-layer yarn ``truncate`` lost, dynamic NTK keeping a longer call's
frequencies) are asserted through the gate in ``spec_tests/families/rope/test_real_code.py``.
"""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest
import torch

from posenc_spec.families.rope import oracle
from posenc_spec.families.rope.config import read_config
from posenc_spec.families.rope.conventions import ROPE_TYPES
from posenc_spec.families.rope.tolerance import (
    rope_apply_tolerance,
    rope_attention_factor_tolerance,
    rope_cache_tolerance,
    rope_frequency_tolerance,
)
from spec_tests.assertions import assert_within
from spec_tests.real_targets.rope_configs import CONFIGS, QWEN_YARN

SMALL_LLAMA = {"hidden_size": 1024, "num_attention_heads": 8, "max_position_embeddings": 131072}


@functools.cache
def hf() -> types.SimpleNamespace:
    """transformers' RoPE code, imported with the first test that needs it (seconds: not
    when every pytest-xdist worker collects this module), with the real-code adapters'
    reading of an example file."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextRotaryEmbedding
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    from transformers.models.phi.modeling_phi import PhiRotaryEmbedding

    from spec_tests.real_targets.rope_transformers import file_config

    default_inits = {"phi": PhiRotaryEmbedding, "gemma4_text": Gemma4TextRotaryEmbedding}
    return types.SimpleNamespace(LlamaConfig=LlamaConfig, ROPE_INIT_FUNCTIONS=ROPE_INIT_FUNCTIONS,
                                 LlamaRotaryEmbedding=LlamaRotaryEmbedding, apply_rotary_pos_emb=apply_rotary_pos_emb,
                                 DEFAULT_INITS=default_inits, file_config=file_config)


def transformers_config(source):
    """transformers' config for an example file (by its model_type) or a Llama-shaped dict
    (free Llama keys: legacy ``rope_scaling``, ``partial_rotary_factor``, ...)."""
    return hf().LlamaConfig(**source) if isinstance(source, dict) else hf().file_config(source)


def spec(source, layer_type=None):
    return read_config(source if isinstance(source, dict) else CONFIGS / source, layer_type)


def transformers_frequencies(source, layer_type=None, seq_len=None):
    config = transformers_config(source)
    kind = spec(source, layer_type).convention.rope_type
    kwargs = {"layer_type": layer_type} if layer_type else {}
    if kind == "default":  # not in ROPE_INIT_FUNCTIONS: each model's rotary module has its own
        rotary = hf().DEFAULT_INITS.get(config.model_type, hf().LlamaRotaryEmbedding)
        if layer_type:  # as Gemma 4's rotary module does: the layer type's own config (its head size)
            config = config.per_layer_config[layer_type]
        inv_freq, attention_factor = rotary.compute_default_rope_parameters(config, **kwargs)
    else:
        inv_freq, attention_factor = hf().ROPE_INIT_FUNCTIONS[kind](config, None, seq_len=seq_len, **kwargs)
    return inv_freq.double().numpy(), attention_factor


def assert_frequencies_match(source, layer_type=None, seq_len=None):
    declared = spec(source, layer_type)
    conv, head_dim = declared.convention, declared.head_dim
    inv_freq, attention_factor = transformers_frequencies(source, layer_type, seq_len)
    expected, expected_factor = conv.frequencies(head_dim, seq_len)
    what = f"{declared.source} [{layer_type}] {conv.describe()} at seq_len={seq_len}"
    assert inv_freq.shape == expected.shape, f"{what}: {inv_freq.shape} frequencies, expected {expected.shape}"
    assert_within(inv_freq, expected, rope_frequency_tolerance(conv, head_dim, seq_len, "float32"), what)
    # Both sides compute A in Python floats: the bound of an A returned in float64.
    assert_within(attention_factor, expected_factor, rope_attention_factor_tolerance(conv, "float64"), f"{what}: A")


FREQUENCY_CASES = [  # (config file or dict, layer type, sequence lengths to call with)
    ({**SMALL_LLAMA, "rope_theta": 10000.0}, None, [None]),
    ("phi2_partial_rotary.json", None, [None]),
    ("vicuna_7b_16k_linear_type.json", None, [None]),
    ("gemma3_27b_layer_types.json", "full_attention", [None]),
    ({**SMALL_LLAMA, "max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, None,
     [None, 100, 4096, 4097, 131072]),
    ("deepseek_v3_yarn.json", None, [None]),
    ({**SMALL_LLAMA, "rope_parameters": QWEN_YARN}, None, [None]),
    ({**SMALL_LLAMA, "rope_parameters": {**QWEN_YARN, "truncate": False}}, None, [None]),
    ({**SMALL_LLAMA, "rope_parameters": {**QWEN_YARN, "attention_factor": 0.8, "beta_fast": 16.0}}, None, [None]),
    ({**SMALL_LLAMA, "rope_parameters": {**QWEN_YARN, "factor": None}}, None, [None]),
    ("llama3_1_8b.json", None, [None]),
    ("phi3_mini_128k_longrope.json", None, [None, 4096, 4097, 131072]),
    ("gemma4_proportional.json", "full_attention", [None]),
    ("gemma4_proportional.json", "sliding_attention", [None]),
]


@pytest.mark.parametrize("source, layer_type, seq_lens", FREQUENCY_CASES,
                         ids=lambda value: value if isinstance(value, str) else None)
def test_transformers_frequencies_match_the_oracle(source, layer_type, seq_lens):
    """inv_freq within the float32 bound, A within float64 rounding, for every rope type."""
    for seq_len in seq_lens:
        assert_frequencies_match(source, layer_type, seq_len)


def test_every_rope_type_is_covered():
    """The cases above reach each of transformers' init functions and the default, which are
    the family's types: a type transformers adds later, or one added to the family, makes
    this fail until a case covers it."""
    covered = {spec(source, layer_type).convention.rope_type for source, layer_type, _ in FREQUENCY_CASES}
    assert covered == set(hf().ROPE_INIT_FUNCTIONS) | {"default"} == set(ROPE_TYPES)


def test_transformers_dynamic_takes_l0_from_max_position_embeddings():
    """Deviation: dynamic NTK's L0 is always ``max_position_embeddings`` in transformers (the
    RoPE dict's ``original_max_position_embeddings`` is reported as unrecognised and ignored);
    the convention uses the stated L0, so the two agree only when L0 is not stated."""
    stated = {**SMALL_LLAMA, "max_position_embeddings": 8192,
              "rope_scaling": {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096}}
    inv_freq, _ = hf().ROPE_INIT_FUNCTIONS["dynamic"](hf().LlamaConfig(**stated), None, seq_len=6000)
    declared = read_config(stated).convention
    as_transformers = declared.replace(params={"factor": 2.0})  # L0 falls back to max_position_embeddings
    assert_within(inv_freq.double().numpy(), as_transformers.frequencies(128, 6000)[0],
                  rope_frequency_tolerance(as_transformers, 128, 6000), "dynamic with L0 = 8192")
    assert np.any(np.abs(inv_freq.double().numpy() - declared.frequencies(128, 6000)[0])
                  > rope_frequency_tolerance(declared, 128, 6000))


def test_llama_default_frequencies_ignore_partial_rotary_factor():
    """Deviation: Llama's ``compute_default_rope_parameters`` spans the whole head even when the
    config states ``partial_rotary_factor`` (the scaling types honour it): a Llama-shaped config
    with factor 0.5 gets r = 128 under ``default`` but r = 64 under ``linear``."""
    config = {**SMALL_LLAMA, "partial_rotary_factor": 0.5}
    inv_freq, _ = hf().LlamaRotaryEmbedding.compute_default_rope_parameters(hf().LlamaConfig(**config))
    assert inv_freq.numel() == 64 and read_config(config).convention.num_pairs(128) == 32
    linear, _ = hf().ROPE_INIT_FUNCTIONS["linear"](hf().LlamaConfig(**config, rope_scaling={"rope_type": "linear",
                                                                                  "factor": 1.0}))
    assert linear.numel() == 32


POSITIONS = np.unique(np.r_[np.arange(1024), np.geomspace(1024, 131071, 200).astype(np.int64)])


def llama_cache(source, dtype, attention_factor_twice=False):
    rotary = hf().LlamaRotaryEmbedding(transformers_config(source))
    cos, sin = rotary(torch.zeros(1, dtype=dtype), torch.as_tensor(POSITIONS)[None])
    if attention_factor_twice:  # bug 19: mscale applied once more on top of the cache
        cos, sin = cos * rotary.attention_scaling, sin * rotary.attention_scaling
    return cos[0], sin[0]


@pytest.mark.parametrize("source", ["llama3_1_8b.json", {**SMALL_LLAMA, "rope_parameters": QWEN_YARN}],
                         ids=["llama3", "yarn"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transformers_llama_cache_and_apply_within_bound(source, dtype):
    """The real cos/sin cache (float32 angles, cast to x's dtype) and ``apply_rotary_pos_emb``
    in x's dtype, at positions up to 131071."""
    declared = spec(source)
    conv, head_dim = declared.convention, declared.head_dim
    cos, sin = llama_cache(source, dtype)
    expected_cos, expected_sin = oracle.cache(POSITIONS, conv, head_dim)
    tol = oracle.expand(rope_cache_tolerance(POSITIONS, conv, head_dim, dtype, "float32", "float32"), "half")
    assert_within(cos.double().numpy(), oracle.expand(expected_cos, "half"), tol, f"{conv.describe()} cos, {dtype}")
    assert_within(sin.double().numpy(), oracle.expand(expected_sin, "half"), tol, f"{conv.describe()} sin, {dtype}")
    q = torch.randn(1, 2, POSITIONS.size, head_dim, generator=torch.Generator().manual_seed(5)).to(dtype)
    rotated, _ = hf().apply_rotary_pos_emb(q, q, cos[None], sin[None])
    x = q.double().numpy()
    assert_within(rotated.double().numpy(), oracle.apply(x, POSITIONS, conv, head_dim, "half"),
                  rope_apply_tolerance(x, POSITIONS, conv, head_dim, "half", dtype, dtype, "float32", "float32"),
                  f"{conv.describe()} apply_rotary_pos_emb, {dtype}")


def test_yarn_attention_factor_applied_twice_fails():
    """A cache multiplied by A = 0.1 ln 4 + 1 once more is off by about 0.14 everywhere."""
    source = {**SMALL_LLAMA, "rope_parameters": QWEN_YARN}
    conv = spec(source).convention
    cos, _ = llama_cache(source, torch.float32, attention_factor_twice=True)
    expected_cos, _ = oracle.cache(POSITIONS, conv, 128)
    tol = oracle.expand(rope_cache_tolerance(POSITIONS, conv, 128, "float32", "float32", "float32"), "half")
    with pytest.raises(AssertionError, match="out of bound"):
        assert_within(cos.double().numpy(), oracle.expand(expected_cos, "half"), tol, "yarn with A twice")
