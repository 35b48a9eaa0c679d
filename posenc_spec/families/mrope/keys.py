"""The names a multi-axis rotary declaration is made of (imports nothing: ``--help`` and the
pytest plugin read it without NumPy). What each key accepts: :mod:`.spec`."""

from posenc_spec.gate.family import FamilyKeys

API = "mrope-cache"
POSITIONS_API = "mrope-positions"
APPLY_API = "mrope-apply"
PRESET_NAMES = ("qwen2-vl", "qwen2.5-vl", "qwen3-vl", "glm-4v", "flux", "hunyuan-video", "wan", "cogvideox",
                "hunyuan-dit", "qwen2-vl-vision", "rope-1d", "pixtral-vision", "llama4-vision", "cosmos", "lumina2")
SIGNATURES = ("positions", "x-position-ids", "ids", "x-ids", "batch-ids", "get-1d", "grid-2d", "grid-3d",
              "hidden-states", "square-grid")

# The slips a hint names (posenc_spec.gate.identify.hint), in docs/families/mrope.md's words.
SLIPS = {
    "mrope-sections": "the frequency slots split among the axes by other sections (swapped, or summed wrongly)",
    "mrope-axis-order": "the axes in another order (their positions feed each other's slots)",
    "mrope-interleaved": "contiguous and interleaved sections mixed up",
    "mrope-frequencies": "shared, per-axis and strided frequencies mixed up (one RoPE over the head, one per axis, "
                         "or one over the head dealt out to the axes in turn)",
    "mrope-theta": "another theta (per axis, or for the whole head)",
    "mrope-layout": "rotate-half and interleaved pairs mixed up",
    "apply-pairing-mixed": "an apply pairing one way handed cos and sin laid out the other (rotate-half applied to "
                           "interleaved cos/sin, or the converse)",
    "angle-sign": "the angle's sign flipped",
    "mrope-crop": "a crop's positions made otherwise than start + i (stop - start) / n",
    "mrope-text-after-vision": "the text after an image or a video started elsewhere than after its largest "
                               "position",
    "mrope-temporal-step": "a video's temporal step truncated to an integer before it multiplies the frame index",
}

NAMES = FamilyKeys(
    name="mrope",
    noun="a multi-axis rotary embedding",
    apis=(API, POSITIONS_API, APPLY_API),
    keys=("convention", "axes", "mrope_section", "axes_dim", "mrope_interleaved", "axes_frequencies",
          "base", "layout", "head_dim", "mrope_patch", "model_config",
          "spatial_merge_size", "temporal_interval"),
    signatures={API: SIGNATURES, POSITIONS_API: ("sequence", "get-rope-index"),
                APPLY_API: ("x-positions", "q-k-cos-sin", "x-cos-sin")},
    sizes={API: ("head_dim", "axes_dim", "theta", "patch_size", "max_positions"), POSITIONS_API: ("max_positions",),
           APPLY_API: ("head_dim", "axes_dim", "theta", "max_positions")},
    number_keys=("head_dim", "spatial_merge_size", "temporal_interval"),
    config_key="model_config",
    help={
        "convention": ("NAME", f"the declared preset: {', '.join(PRESET_NAMES)} (default qwen2-vl)"),
        "axes": ("AXES", "the axes in the target's order, such as t,h,w or w,h (t, h, w, p for text)"),
        "mrope_section": ("N,N,N", "frequency pairs (slots) per axis, transformers' mrope_section"),
        "axes_dim": ("N,N,N", "features per axis, diffusers' axes_dim (twice mrope_section)"),
        "mrope_interleaved": ("true|false", "Qwen3-VL's interleaved slots (slot j to axis j mod 3) or contiguous ones"),
        "axes_frequencies": ("shared|per-axis|strided", "one RoPE over the head (Qwen), one per axis (diffusers), or "
                                                        "one over the head dealt to the axes in turn (Pixtral)"),
        "base": ("B[,B...]", "the base (rope_theta), or one per axis"),
        "layout": ("half|interleaved", "a slot's features (j, j + R/2) or (2j, 2j + 1)"),
        "head_dim": ("N", "the head size the calls use (default: the preset's; rescales wan, cogvideox, "
                                    "hunyuan-dit, qwen2-vl-vision, rope-1d, pixtral-vision, llama4-vision, "
                                    "cosmos)"),
        "mrope_patch": ("T,H,W", "hidden-states signature: the patch of the video the module divides (default 1,1,1)"),
        "model_config": ("FILE", "a transformers config.json: its rope_parameters (rope_theta, mrope_section, "
                                 "mrope_interleaved), head size, spatial_merge_size and tokens_per_second, and the "
                                 "object --init config builds"),
        "spatial_merge_size": ("M", "mrope-positions: the m x m patches merged into one token (default 2)"),
        "temporal_interval": ("S", "mrope-positions: a video's temporal position step per temporal patch (default 1; "
                                   "Qwen2.5-VL: tokens_per_second x seconds per grid)"),
    },
    group="multi-axis rotary embeddings (--api mrope-cache | mrope-positions | mrope-apply)",
    title="Rotary embeddings on several axes (M-RoPE of Qwen2/2.5/3-VL and GLM-4V; FLUX, HunyuanVideo, Wan, "
          "CogVideoX)",
    page="docs/families/mrope.md",
    check_ids="Multi-axis rotary embeddings (S a slot: text:64, grid:TxHxW, crop:TxHxW, mixed, long): call, finite, "
              "formula, norm and identity at [S]; relative[axis=A] for each axis A; position ids (S text:8, "
              "image:TxHxW, video:TxHxW, image-video, two-images): call and formula at [S]; q and k rotated (S "
              "text:64, grid:1x6x10, mixed, long, each :T the dtype of x): call, finite, formula, norm, identity "
              "and passthrough at [S]. See "
              "posenc_spec.families.mrope.grid.",
    identify_keys=("signature", "init", "method", "kwargs", "head_dim", "mrope_patch", "model_config"),
    adapters=True,
    slips=SLIPS,
    aliases={"mrope_preset": "convention", "mrope_axes": "axes", "axes_theta": "base", "mrope_layout": "layout",
             "attention_head_dim": "head_dim", "mrope_config": "model_config"},
)
