"""The installed transformers and diffusers code, called directly: its caches against the oracle
within the derived bounds, and each real deviation at its smallest input (:data:`.real_code.DEVIATIONS`).
A deviation test fails when the library changes the behaviour: a new fact to review."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from posenc_spec.families.mrope import oracle
from posenc_spec.families.mrope.conventions import PRESETS, at_head_dim, grid_positions
from posenc_spec.families.mrope.grid import class_token_grid
from posenc_spec.families.mrope.tolerance import cache_tolerance
from spec_tests.assertions import assert_within

from .real_code import DATA

embeddings = pytest.importorskip("diffusers.models.embeddings")
POSITIONS = np.random.default_rng(3).integers(0, 32768, size=(3, 40))


def _assert_cache(cos, sin, positions, convention, what):
    cos = np.asarray(cos, dtype=np.float64).reshape(-1, convention.rotary_dim)
    sin = np.asarray(sin, dtype=np.float64).reshape(-1, convention.rotary_dim)
    bound = oracle.expand(cache_tolerance(positions, convention, "float32"), convention)
    exact_cos, exact_sin = oracle.cache(positions, convention)
    assert_within(cos, exact_cos, bound, f"{what} cos")
    assert_within(sin, exact_sin, bound, f"{what} sin")


@pytest.mark.parametrize(("module", "name", "config", "preset"), [
    ("qwen2_vl", "Qwen2VLRotaryEmbedding", "qwen2_vl_text", "qwen2-vl"),
    ("qwen3_vl", "Qwen3VLTextRotaryEmbedding", "qwen3_vl_text", "qwen3-vl"),
    ("glm4v", "Glm4vTextRotaryEmbedding", "glm4v_text", "glm-4v"),
])
def test_transformers_mrope_caches_are_the_presets(module, name, config, preset):
    """Qwen2-VL's contiguous, Qwen3-VL's interleaved and GLM-4V's interleaved-pair M-RoPE, at positions up to 32767."""
    from importlib import import_module

    from transformers import AutoConfig

    data = json.loads((DATA / f"{config}.json").read_text())
    built = getattr(import_module(f"transformers.models.{module}.modeling_{module}"), name)(
        AutoConfig.for_model(data.pop("model_type"), **data))
    cos, sin = built(torch.zeros(1, POSITIONS.shape[1], 128), torch.from_numpy(POSITIONS)[:, None, :])
    _assert_cache(cos, sin, POSITIONS, PRESETS[preset], name)


def test_pixtral_vision_rotary_deals_the_head_frequencies_to_h_and_w_in_turn():
    """Pixtral's vision tower: one RoPE over the head, the even-indexed frequencies h's, the odd ones w's (strided)."""
    from transformers import AutoConfig
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding

    data = json.loads((DATA / "pixtral_vision.json").read_text())
    built = PixtralVisionRotaryEmbedding(AutoConfig.for_model(data.pop("model_type"), **data))
    positions = POSITIONS[:2]
    cos, sin = built(torch.zeros(1, positions.shape[1], 64), torch.from_numpy(positions.T.copy()))
    convention = at_head_dim("pixtral-vision", 64)
    _assert_cache(cos, sin, positions, convention, "PixtralVisionRotaryEmbedding")
    qwen_vision = at_head_dim("qwen2-vl-vision", 64)
    assert not np.allclose(cos.numpy(), oracle.cache(positions, qwen_vision)[0], atol=1e-2)


def test_llama4_vision_rotary_puts_the_patches_at_their_indices_plus_one_and_the_class_token_at_the_origin():
    """Llama 4's vision tower on a 5 x 5 grid: per-axis w then h, patches at (1 + i_w, 1 + i_h), then a class token."""
    from transformers import AutoConfig
    from transformers.models.llama4.modeling_llama4 import Llama4VisionRotaryEmbedding

    data = json.loads((DATA / "llama4_vision.json").read_text())
    config = AutoConfig.for_model(data.pop("model_type"), **{**data, "image_size": 5 * data["patch_size"]})
    freqs = Llama4VisionRotaryEmbedding(config)(torch.zeros(1, 26, 64)).reshape(26, -1).numpy()
    convention = at_head_dim("llama4-vision", 64)
    positions = class_token_grid(convention.axes, (1, 5, 5))
    bound = cache_tolerance(positions, convention, "float32")
    exact_cos, exact_sin = oracle.compact(positions, convention)
    assert_within(freqs.real, exact_cos, bound, "Llama4VisionRotaryEmbedding cos")
    assert_within(freqs.imag, exact_sin, bound, "Llama4VisionRotaryEmbedding sin")
    from_zero = oracle.compact(grid_positions(convention.axes, (1, 5, 5)), convention)[0]
    assert not np.allclose(freqs.real[:25], from_zero, atol=1e-2)


def test_flux_pos_embed_is_the_flux_preset():
    """FluxPosEmbed(10000, [16, 56, 56]) of (L, 3) ids: per-axis frequencies, interleaved pairs."""
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed

    cos, sin = FluxPosEmbed(10000, [16, 56, 56])(torch.from_numpy(POSITIONS.T).float())
    _assert_cache(cos, sin, POSITIONS, PRESETS["flux"], "FluxPosEmbed")


def test_video_modules_are_their_presets_on_an_odd_grid():
    """HunyuanVideo's and Wan's modules on a 3 x 5 x 7 patch grid, row-major t, h, w."""
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    positions = grid_positions(("t", "h", "w"), (3, 5, 7))
    states = torch.zeros(1, 1, 3, 10, 14)
    _assert_cache(*HunyuanVideoRotaryPosEmbed(2, 1, [16, 56, 56], 256.0)(states), positions,
                  PRESETS["hunyuan-video"], "HunyuanVideoRotaryPosEmbed")
    _assert_cache(*WanRotaryPosEmbed(128, (1, 2, 2), 1024)(states), positions, PRESETS["wan"], "WanRotaryPosEmbed")


def test_cosmos_rotary_scales_the_temporal_base_by_its_ntk_factor():
    """Cosmos' module, head 64, on 3 x 5 x 7 patches: t's base 10000 x 2 ** (n_t / (n_t - 1)), h's and w's 10000."""
    from diffusers.models.transformers.transformer_cosmos import CosmosRotaryPosEmbed

    positions = grid_positions(("t", "h", "w"), (3, 5, 7))
    cos, sin = CosmosRotaryPosEmbed(64)(torch.zeros(1, 1, 3, 10, 14))
    convention = at_head_dim("cosmos", 64)
    _assert_cache(cos, sin, positions, convention, "CosmosRotaryPosEmbed")
    unscaled = dataclasses.replace(convention, theta=(10000.0,) * 3)
    assert not np.allclose(cos.numpy(), oracle.cache(positions, unscaled)[0], atol=1e-2)


def test_lumina2_lookup_is_the_lumina2_preset():
    """Lumina 2's table lookup of (1, L, 3) ids below its axes_lens: per-axis RoPE of get_1d_rotary_pos_embed."""
    from diffusers.models.transformers.transformer_lumina2 import Lumina2RotaryPosEmbed

    positions = POSITIONS % 300
    freqs = Lumina2RotaryPosEmbed(10000, [32, 32, 32])._get_freqs_cis(torch.from_numpy(positions.T[None].copy()))
    freqs = freqs.reshape(positions.shape[1], -1).numpy()
    convention = PRESETS["lumina2"]
    bound = cache_tolerance(positions, convention, "float64", "float64")  # freqs_dtype float64, complex128
    exact_cos, exact_sin = oracle.compact(positions, convention)
    assert_within(freqs.real, exact_cos, bound, "Lumina2RotaryPosEmbed cos")
    assert_within(freqs.imag, exact_sin, bound, "Lumina2RotaryPosEmbed sin")


def test_get_2d_rotary_pos_embed_turns_its_first_half_by_the_column():
    """get_2d_rotary_pos_embed's first half follows w, though its comment says grid_h: axes (w, h)."""
    cos, sin = embeddings.get_2d_rotary_pos_embed(16, ((0, 0), (3, 5)), (3, 5))
    _assert_cache(cos, sin, grid_positions(("w", "h"), (1, 3, 5)), at_head_dim("hunyuan-dit", 16), "get_2d")


def test_deviation_cropped_grid_smallest_input():
    """diffusers' crop ((0, 1), (1, 3)) of a 1 x 2 grid puts the second column at w = 1.5 where 2 belongs."""
    convention = at_head_dim("hunyuan-dit", 8)
    cos, _ = embeddings.get_2d_rotary_pos_embed(8, ((0, 1), (1, 3)), (1, 2))
    reference = grid_positions(("w", "h"), (1, 1, 2), {"h": (0, 1), "w": (1, 3)})
    assert reference[0].tolist() == [1.0, 2.0]
    made = np.array([[1.0, 1.5], [0.0, 0.0]])
    assert np.allclose(cos.numpy(), oracle.cache(made, convention)[0], atol=1e-6)
    assert not np.allclose(cos.numpy(), oracle.cache(reference, convention)[0], atol=1e-3)


def test_deviation_text_after_a_video_smallest_input():
    """Qwen2-VL's get_rope_index: text after a 2-frame video at (2, 2, 2), where the reference puts (3, 3, 3)."""
    from transformers import AutoConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel

    data = json.loads((DATA / "qwen2_vl.json").read_text())
    model = Qwen2VLModel(AutoConfig.for_model(data.pop("model_type"), **data))
    types = torch.tensor([[0, 2, 2, 0, 0]])
    grids = torch.tensor([[2, 2, 2]])
    positions, _ = model.get_rope_index(torch.zeros_like(types), types, video_grid_thw=grids)
    reference = oracle.sequence_positions(types[0].numpy(), grids.numpy(), 2)
    assert reference[:, 3].tolist() == [3, 3, 3]
    assert positions[:, 0, 3].tolist() == [2, 2, 2]
