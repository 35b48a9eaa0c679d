"""The real multi-axis rotary code installed with transformers and diffusers, declared as a user
declares it (``posenc-spec check --api mrope-cache ...``), and the checks each fails: its
deviations from the reference, each with the smallest input that shows it (``DEVIATIONS``).

The transformers targets are built from the small configs in ``spec_tests/data/mrope`` (the
rotary modules read only their rope_parameters and head size; the models' ``get_rope_index``
only their vision config and token ids).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "mrope"
_VIDEO_TEXT = ("formula[video:2x1x1]", "formula[video:4x2x3]", "formula[image-video]")

# The deviations, by the check that shows them: what the reference does, what the code does,
# and the smallest input that tells them apart.
DEVIATIONS = {
    "text after a video": (
        "transformers 5.x get_rope_index (Qwen2-VL, Qwen2.5-VL) starts the text after a vision run at "
        "start + max(h, w) // merge, the run's spatial extent, where Qwen2-VL's reference (and the models' "
        "training) starts it after the run's largest position, temporal ones included: after a video of several "
        "frames the text's positions run back into the video's. Smallest input: 1 text token, a video of 2 x 2 x 2 "
        "patches (2 x 1 x 1 tokens after the 2 x 2 merge), 2 text tokens: the first text after the video gets "
        "(2, 2, 2) where (3, 3, 3) belongs (Qwen2.5-VL, 2 tokens per second: (2, 2, 2) where (4, 4, 4) belongs)."),
    "cropped grid": (
        "diffusers get_2d_rotary_pos_embed and get_3d_rotary_pos_embed (HunyuanDiT, CogVideoX 1.0) place a cropped "
        "grid's positions at linspace(start, stop (n - 1) / n, n), which is np.linspace(start, stop, n, "
        "endpoint=False) only when start is 0; CogVideoX's pipeline crops with a non-zero start whenever the "
        "aspect ratio differs from its base grid. Smallest input: grid_size (1, 2) with crops_coords ((0, 1), "
        "(1, 3)): the second column at w = 1.5 where 2 belongs (1 + 1 x (3 - 1) / 2)."),
}


@dataclass(frozen=True)
class RealTarget:
    """One real target: its declaration keys, the library it comes from, the checks it fails."""

    id: str
    library: str
    keys: dict = field(hash=False)
    fails: tuple[str, ...] = ()

    def declaration_keys(self) -> dict:
        return {"api": "mrope-cache", **self.keys}  # the keys' own api, where they give one, wins


def _config(name: str) -> str:
    return str(DATA / name)


_TRANSFORMERS = "transformers.models"
_DIFFUSERS = "diffusers.models"

TARGETS = (
    RealTarget("Qwen2VLRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen2_vl.modeling_qwen2_vl:Qwen2VLRotaryEmbedding", "mrope_preset": "qwen2-vl",
        "signature": "x-position-ids", "init": "config", "mrope_config": _config("qwen2_vl_text.json")}),
    RealTarget("Qwen2_5_VLRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen2_5_vl.modeling_qwen2_5_vl:Qwen2_5_VLRotaryEmbedding",
        "mrope_preset": "qwen2.5-vl", "signature": "x-position-ids", "init": "config",
        "mrope_config": _config("qwen2_5_vl_text.json")}),
    RealTarget("Qwen3VLTextRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen3_vl.modeling_qwen3_vl:Qwen3VLTextRotaryEmbedding", "mrope_preset": "qwen3-vl",
        "signature": "x-position-ids", "init": "config", "mrope_config": _config("qwen3_vl_text.json")}),
    RealTarget("Glm4vTextRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.glm4v.modeling_glm4v:Glm4vTextRotaryEmbedding", "mrope_preset": "glm-4v",
        "signature": "x-position-ids", "init": "config", "mrope_config": _config("glm4v_text.json")}),
    RealTarget("Qwen2VLModel.get_rope_index", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen2_vl.modeling_qwen2_vl:Qwen2VLModel", "api": "mrope-positions",
        "signature": "get-rope-index", "init": "config", "method": "get_rope_index",
        "mrope_config": _config("qwen2_vl.json")}, _VIDEO_TEXT),
    RealTarget("Qwen2_5_VLModel.get_rope_index", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen2_5_vl.modeling_qwen2_5_vl:Qwen2_5_VLModel", "api": "mrope-positions",
        "signature": "get-rope-index", "init": "config", "method": "get_rope_index",
        "mrope_config": _config("qwen2_5_vl.json")}, _VIDEO_TEXT),
    RealTarget("Qwen2VLVisionRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen2_vl.modeling_qwen2_vl:Qwen2VLVisionRotaryEmbedding",
        "mrope_preset": "qwen2-vl-vision", "attention_head_dim": 40, "signature": "x-ids", "init": "config",
        "mrope_config": _config("qwen2_vl_vision.json")}),
    RealTarget("PixtralVisionRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.pixtral.modeling_pixtral:PixtralVisionRotaryEmbedding",
        "mrope_preset": "pixtral-vision", "signature": "x-ids", "init": "config",
        "mrope_config": _config("pixtral_vision.json")}),
    RealTarget("Llama4VisionRotaryEmbedding", "transformers", {
        "target": f"{_TRANSFORMERS}.llama4.modeling_llama4:Llama4VisionRotaryEmbedding",
        "mrope_preset": "llama4-vision", "signature": "square-grid", "init": "config",
        "mrope_config": _config("llama4_vision.json")}),
    RealTarget("FluxPosEmbed", "diffusers", {
        "target": f"{_DIFFUSERS}.transformers.transformer_flux:FluxPosEmbed", "mrope_preset": "flux",
        "signature": "ids", "init": {"theta": 10000, "axes_dim": "{axes_dim}"}}),
    RealTarget("Lumina2RotaryPosEmbed._get_freqs_cis", "diffusers", {
        "target": f"{_DIFFUSERS}.transformers.transformer_lumina2:Lumina2RotaryPosEmbed", "mrope_preset": "lumina2",
        "signature": "batch-ids", "init": {"theta": 10000, "axes_dim": "{axes_dim}"}, "method": "_get_freqs_cis",
        "max_positions": 300}),
    RealTarget("HunyuanVideoRotaryPosEmbed", "diffusers", {
        "target": f"{_DIFFUSERS}.transformers.transformer_hunyuan_video:HunyuanVideoRotaryPosEmbed",
        "mrope_preset": "hunyuan-video", "signature": "hidden-states",
        "init": {"patch_size": 2, "patch_size_t": 1, "rope_dim": "{axes_dim}", "theta": 256},
        "mrope_patch": [1, 2, 2]}),
    RealTarget("WanRotaryPosEmbed", "diffusers", {
        "target": f"{_DIFFUSERS}.transformers.transformer_wan:WanRotaryPosEmbed", "mrope_preset": "wan",
        "signature": "hidden-states", "init": {"attention_head_dim": "{head_dim}", "patch_size": "{patch_size}",
                                               "max_seq_len": 1024}, "mrope_patch": [1, 2, 2]}),
    RealTarget("CosmosRotaryPosEmbed", "diffusers", {
        "target": f"{_DIFFUSERS}.transformers.transformer_cosmos:CosmosRotaryPosEmbed", "mrope_preset": "cosmos",
        "signature": "hidden-states", "init": {"hidden_size": "{head_dim}"}, "mrope_patch": [1, 2, 2]}),
    RealTarget("get_3d_rotary_pos_embed", "diffusers", {
        "target": f"{_DIFFUSERS}.embeddings:get_3d_rotary_pos_embed", "mrope_preset": "cogvideox",
        "attention_head_dim": 64, "signature": "grid-3d"}, ("formula[crop:2x4x6]",)),
    RealTarget("get_2d_rotary_pos_embed", "diffusers", {
        "target": f"{_DIFFUSERS}.embeddings:get_2d_rotary_pos_embed", "mrope_preset": "hunyuan-dit",
        "attention_head_dim": 88, "signature": "grid-2d"}, ("formula[crop:1x4x6]",)),
    RealTarget("qwen2_vl apply_rotary_pos_emb", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen2_vl.modeling_qwen2_vl:apply_rotary_pos_emb", "api": "mrope-apply",
        "mrope_preset": "qwen2-vl", "signature": "q-k-cos-sin"}),
    RealTarget("qwen3_vl apply_rotary_pos_emb", "transformers", {
        "target": f"{_TRANSFORMERS}.qwen3_vl.modeling_qwen3_vl:apply_rotary_pos_emb", "api": "mrope-apply",
        "mrope_preset": "qwen3-vl", "signature": "q-k-cos-sin"}),
    RealTarget("pixtral apply_rotary_pos_emb", "transformers", {
        "target": f"{_TRANSFORMERS}.pixtral.modeling_pixtral:apply_rotary_pos_emb", "api": "mrope-apply",
        "mrope_preset": "pixtral-vision", "signature": "q-k-cos-sin"}),
    RealTarget("glm4v apply_rotary_pos_emb", "transformers", {
        "target": f"{_TRANSFORMERS}.glm4v.modeling_glm4v:apply_rotary_pos_emb", "api": "mrope-apply",
        "mrope_preset": "glm-4v", "attention_head_dim": 128, "signature": "q-k-cos-sin"}),
    RealTarget("apply_rotary_emb (unbind -1)", "diffusers", {
        "target": f"{_DIFFUSERS}.embeddings:apply_rotary_emb", "api": "mrope-apply", "mrope_preset": "flux",
        "signature": "x-cos-sin"}),
    RealTarget("apply_rotary_emb (unbind -2)", "diffusers", {
        "target": f"{_DIFFUSERS}.embeddings:apply_rotary_emb", "api": "mrope-apply", "mrope_preset": "flux",
        "mrope_layout": "half", "signature": "x-cos-sin", "kwargs": {"use_real_unbind_dim": -2}}),
    RealTarget("get_1d_rotary_pos_embed", "diffusers", {
        "target": f"{_DIFFUSERS}.embeddings:get_1d_rotary_pos_embed", "mrope_preset": "rope-1d",
        "attention_head_dim": 64, "signature": "get-1d", "kwargs": {"use_real": True}}),
)
