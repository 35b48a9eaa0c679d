"""Rotary embeddings of transformers 5, behind the gate's RoPE APIs (called, not copied).

``rope-freqs`` (``fn(head_dim) -> (inv_freq, attention_factor)``): ``ROPE_INIT_FUNCTIONS``
for every rope type, each on a config built from an example file of
``spec_tests/data/rope_configs/`` (the one the test declares with ``rope_config``, so the
gate asks for the head size that file states) or, where no file fits, on a small Llama
config of the asked head size; ``default`` through ``LlamaRotaryEmbedding`` and
``PhiRotaryEmbedding``'s own ``compute_default_rope_parameters``.

``rope-cache`` with ``cache_call = "x-positions"`` (``fn(x, positions)``, positions
``(1, S)``): ``LlamaRotaryEmbedding.forward``, one module per config and head size kept for
the whole run, as a model keeps it, so that its dynamic update sees every call.

``rope-apply`` (``fn(x, positions)``): cos and sin from the model's rotary module (or GPT-J's
table), then the model's own apply function, with the few lines of glue its attention
layer has around it (GPT-J's gather, cast and partial split).
"""

from __future__ import annotations

import functools
import json

import torch
from transformers import AutoConfig, GPTNeoXConfig, LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding
from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb as neox_apply_rotary_pos_emb
from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_apply_rotary_pos_emb
from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as llama_apply_rotary_pos_emb
from transformers.models.phi.modeling_phi import PhiRotaryEmbedding

from spec_tests.real_targets.rope_configs import CONFIGS, PER_LAYER_YARN

HEADS = 4  # attention heads of the small configs: hidden_size = HEADS * head_dim
DYNAMIC_L0 = 4096  # dynamic NTK's L0: transformers reads it from max_position_embeddings
DYNAMIC_FACTOR = 2.0
GPTJ_POSITIONS = 2048  # GPT-J 6B's n_positions: its sin/cos table has that many rows
GPTJ_ROTARY_DIM = 64
NEOX_ROTARY_PCT = 0.25


def file_config(name: str):
    """transformers' config for an example file, by its ``model_type``."""
    data = json.loads((CONFIGS / name).read_text())
    return AutoConfig.for_model(data.pop("model_type"), **data)


def llama_config(head_dim: int, rope_parameters: dict, max_position_embeddings: int = 131072) -> LlamaConfig:
    return LlamaConfig(hidden_size=HEADS * head_dim, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                       head_dim=head_dim, max_position_embeddings=max_position_embeddings,
                       rope_parameters=rope_parameters)


# -- rope-freqs: ROPE_INIT_FUNCTIONS and the default -------------------------------------------


def llama_default_freqs(head_dim):
    return LlamaRotaryEmbedding.compute_default_rope_parameters(
        llama_config(head_dim, {"rope_type": "default", "rope_theta": 10000.0}))


def phi2_default_freqs(head_dim):
    """Phi's default keeps ``partial_rotary_factor`` (Llama's ignores it)."""
    return PhiRotaryEmbedding.compute_default_rope_parameters(file_config("phi2_partial_rotary.json"))


def _init(kind: str, file: str, layer_type: str | None = None):
    kwargs = {"layer_type": layer_type} if layer_type else {}
    return ROPE_INIT_FUNCTIONS[kind](file_config(file), None, **kwargs)


def vicuna_linear_freqs(head_dim):
    return _init("linear", "vicuna_7b_16k_linear_type.json")


def gemma3_full_attention_linear_freqs(head_dim):
    return _init("linear", "gemma3_27b_layer_types.json", "full_attention")


def dynamic_freqs(head_dim):
    """Without a sequence length the dynamic init returns the frequencies at ``L0``."""
    config = llama_config(head_dim, {"rope_type": "dynamic", "factor": DYNAMIC_FACTOR, "rope_theta": 10000.0},
                          DYNAMIC_L0)
    return ROPE_INIT_FUNCTIONS["dynamic"](config, None)


def deepseek_yarn_freqs(head_dim):
    return _init("yarn", "deepseek_v3_yarn.json")


def phi3_longrope_freqs(head_dim):
    return _init("longrope", "phi3_mini_128k_longrope.json")


def llama3_freqs(head_dim):
    return _init("llama3", "llama3_1_8b.json")


def gemma4_proportional_freqs(head_dim):
    return _init("proportional", "gemma4_proportional.json", "full_attention")


def per_layer_yarn_freqs(head_dim):
    """Qwen-style yarn with truncate off on the full-attention layers of a per-layer-type config."""
    config = AutoConfig.for_model(
        "gemma3_text", hidden_size=HEADS * head_dim, num_attention_heads=HEADS, num_key_value_heads=HEADS,
        head_dim=head_dim, num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
        rope_parameters={"full_attention": dict(PER_LAYER_YARN),
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
    return ROPE_INIT_FUNCTIONS["yarn"](config, None, layer_type="full_attention")


# -- rope-cache: LlamaRotaryEmbedding, kept for the run ----------------------------------------


@functools.cache
def _llama_rotary(kind: str, head_dim: int) -> LlamaRotaryEmbedding:
    if kind == "llama3":
        return LlamaRotaryEmbedding(file_config("llama3_1_8b.json"))
    if kind == "dynamic":
        return LlamaRotaryEmbedding(llama_config(head_dim, {"rope_type": "dynamic", "factor": DYNAMIC_FACTOR,
                                                            "rope_theta": 10000.0}, DYNAMIC_L0))
    return LlamaRotaryEmbedding(llama_config(head_dim, {"rope_type": "default", "rope_theta": 10000.0}))


def llama_cache_default(x, positions):
    return _llama_rotary("default", x.shape[-1])(x, positions)


def llama_cache_llama3(x, positions):
    return _llama_rotary("llama3", x.shape[-1])(x, positions)


def llama_cache_dynamic(x, positions):
    return _llama_rotary("dynamic", x.shape[-1])(x, positions)


# -- rope-apply ----------------------------------------------------------------------------------


def llama_apply(x, positions):
    """``x`` as LlamaAttention holds q: ``(batch, heads, seq, head_dim)``."""
    cos, sin = _llama_rotary("default", x.shape[-1])(x, positions[None])
    rotated, _ = llama_apply_rotary_pos_emb(x, x, cos, sin)
    return rotated


@functools.cache
def _neox_rotary(head_dim: int) -> GPTNeoXRotaryEmbedding:
    return GPTNeoXRotaryEmbedding(GPTNeoXConfig(hidden_size=HEADS * head_dim, num_attention_heads=HEADS,
                                                rotary_pct=NEOX_ROTARY_PCT))


def neox_partial_apply(x, positions):
    """GPT-NeoX's apply rotates the first ``rotary_pct`` of each head (``cos``'s width) and
    passes the rest; ``x`` is ``(batch, heads, seq, head_dim)``."""
    cos, sin = _neox_rotary(x.shape[-1])(x, positions[None])
    rotated, _ = neox_apply_rotary_pos_emb(x, x, cos, sin)
    return rotated


@functools.cache
def _gptj_table(rotary_dim: int) -> torch.Tensor:
    return create_sinusoidal_positions(GPTJ_POSITIONS, rotary_dim)


def gptj_apply(x, positions):
    """GPT-J's attention: rows of the sin/cos table gathered for the positions and cast to
    q's dtype, ``rotate_every_two`` on the first ``rotary_dim`` features, the rest
    concatenated back; ``x`` is ``(batch, seq, heads, head_dim)`` as GPT-J splits heads."""
    sincos = _gptj_table(GPTJ_ROTARY_DIM)[positions][None].to(x.dtype)
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    rotated = gptj_apply_rotary_pos_emb(x[..., :GPTJ_ROTARY_DIM], sin, cos)
    return torch.cat([rotated, x[..., GPTJ_ROTARY_DIM:]], dim=-1)
