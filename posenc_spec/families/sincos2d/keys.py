"""The names a 2-D sincos declaration is made of (imports nothing: ``--help`` and the pytest
plugin read it without NumPy). What each key accepts: :mod:`.spec`; what each means:
:mod:`.conventions`; how each signature is called: :mod:`.calls`."""

from posenc_spec.gate.family import FamilyKeys

API = "sincos2d"
PRESET_NAMES = ("mae", "mae-cls", "transformers", "diffusers", "sd3", "detr", "deformable-detr", "dab-detr",
                "big-vision", "moco-v3")
# Each declaration key and the field of posenc_spec.families.sincos2d.conventions.Sincos2d it
# sets (base sets both bases), in the order --help lists them.
FIELDS = {
    "first_axis": "first_axis", "grouping": "grouping", "layout": "pairing", "first": "first_function",
    "freq_shift": "freq_shift", "base": "base", "row_base": "row_base", "col_base": "col_base",
    "position_transform": "position", "offset": "offset", "scale": "scale", "base_size": "base_size",
    "interpolation_scale": "interpolation_scale", "pos_embed_max_size": "max_size", "position_eps": "eps",
    "extra_tokens": "extra_tokens", "token_order": "token_order", "output_layout": "output_layout",
}
# How the call is made besides the convention: what a feature map, a mask or a sample the gate
# hands a module looks like, and the dtype handed to a target that takes one.
CALL_KEYS = ("in_channels", "patch_size", "call_dtype")
SIGNATURES = ("h-w-dim", "w-h-dim", "dim-size", "dim-pair", "shape-dim", "shape-device-dtype",
              "w-h-device-dtype", "x", "mask", "nested-tensor", "adds-to-patches")
# The sizes "{name}" in init and kwargs stands for, per call.
SIZES = ("height", "width", "dim", "half_dim", "sample_height", "sample_width", "patch_size", "in_channels",
         "max_positions")

_HELP = {
    "convention": ("NAME", f"the declared preset: {', '.join(PRESET_NAMES)} (default mae)"),
    "first_axis": ("row|col", "the coordinate whose half comes first"),
    "grouping": ("by-axis|by-function", "[A | B], each half a 1-D table, or [sin A | sin B | cos A | cos B]"),
    "layout": ("concat|interleaved", "each half's [sin ... | cos ...] or sin0 cos0 sin1 cos1 ..."),
    "first": ("sin|cos", "the function of each pair that comes first (default sin; diffusers' flip_sin_to_cos: "
                         "cos)"),
    "freq_shift": ("0|1", "the exponent's denominator: 0 for D/4, 1 for D/4 - 1 (big_vision)"),
    "base": ("B", "the base (temperature) of both axes (> 1)"),
    "row_base": ("B", "the row axis's base alone"),
    "col_base": ("B", "the column axis's base alone"),
    "position_transform": ("NAME", "index, relative (diffusers), crop (SD3) or normalized (DETR)"),
    "offset": ("X", "index: p = scale (i + offset); normalized: (i + 1 + offset) / (L + eps) scale"),
    "scale": ("X", "the positions' factor (index 1, normalized 2 pi)"),
    "base_size": ("N", "relative and crop: the grid size the positions stretch to (diffusers' base_size)"),
    "interpolation_scale": ("X", "relative and crop: diffusers' interpolation_scale"),
    "pos_embed_max_size": ("M", "crop: the side of the table the grid is cut from (required)"),
    "position_eps": ("X", "normalized: the eps added to the length (default 1e-6)"),
    "extra_tokens": ("N", "zero rows before the grid's tokens (a class token: 1)"),
    "token_order": ("ORDER", "row-major (row outer; default) or column-major"),
    "output_layout": ("LAYOUT", "tokens (N, D; default), channels-first (D, H, W) or grid (H, W, D)"),
    "in_channels": ("C", "channels of the feature map or sample handed to a module (default 1)"),
    "patch_size": ("P", "adds-to-patches: the sample is H*P x W*P (default 1)"),
    "call_dtype": ("DTYPE", "the torch dtype handed to a target that takes one: float32 (default), float64, "
                            "float16 or bfloat16"),
}

# The slips a hint names (posenc_spec.gate.identify.hint), in docs/families/sincos2d.md's words.
SLIPS = {
    "axes-swapped": "the row and column coordinates in each other's half (meshgrid's argument order)",
    "flatten-transposed": "tokens flattened column by column where rows come first (or the reverse)",
    "grouping": "per-axis blocks and grouping by function (`[sin A | sin B | cos A | cos B]`) mixed up",
    "layout": "interleaved and concatenated (`[sin | cos]`) columns mixed up",
    "sin-cos-swapped": "sin and cos swapped",
    "denominator-quarter-dim-minus-one": "`D/4 - 1` where the declared convention has `D/4`",
    "denominator-quarter-dim": "`D/4` where the declared convention has `D/4 - 1`",
    "base": "the base (theta) off",
    "bases-crossed": "the row's and the column's bases (temperatures) crossed",
    "normalised-by-other-axis": "an axis's positions normalised by the other axis's length",
    "scale-twice": "a scaling factor applied twice",
    "scale-dropped": "a scaling factor dropped",
    "positions-offset": "positions shifted (off by one)",
    "positions-linspace": "positions from linspace, spaced n/(n-1) apart",
    "positions-unnormalised": "positions left as counts where they are declared normalised (normalize=False)",
    "crop-not-centred": "the crop of the max-size table not centred",
    "positions-float16": "positions formed in float16 (rounded)",
    "positions-bfloat16": "positions formed in bfloat16 (rounded)",
    "extra-tokens-appended": "the extra tokens' rows after the grid's instead of before them",
    "extra-tokens-count": "another number of extra token rows (a class token's) than the declared `extra_tokens`",
    "output-layout": "the table returned in another layout (tokens, channels first or last) than declared",
    "output-float16": "the table stored in float16 and returned wider",
    "output-bfloat16": "the table stored in bfloat16 and returned wider",
    "angle-float16": "the angle formed in float16",
    "angle-bfloat16": "the angle formed in bfloat16",
}

NAMES = FamilyKeys(
    name="sincos2d",
    noun="a 2-D sincos table",
    apis=(API,),
    keys=("convention", *FIELDS, *CALL_KEYS),
    signatures={API: SIGNATURES},
    sizes={API: SIZES},
    number_keys=("freq_shift", "base", "row_base", "col_base", "offset", "scale",
                 "base_size", "interpolation_scale", "pos_embed_max_size", "position_eps", "extra_tokens",
                 "in_channels", "patch_size"),
    help=_HELP,
    group=f"2-D sincos tables for patch grids (--api {API})",
    adapters=True,
    slips=SLIPS,
    aliases={"grid_convention": "convention", "pairing": "layout", "grid_freq_shift": "freq_shift",
             "grid_base": "base", "position_offset": "offset", "position_scale": "scale"},
    title="2-D sinusoidal tables for patch grids (MAE, ViT, DiT, SD3, DETR)",
    page="docs/families/sincos2d.md",
    check_ids="2-D sincos tables (H x W a grid, D a width): call, finite, shape, formula, extra-tokens, separable, "
              "axis-order, axis-member, positions and pair-norm at [HxW:d=D]; indivisible[d=D] for widths not a "
              "multiple of 4 and undefined[d=4] under freq_shift 1 (the call must raise); determinism. See "
              "posenc_spec.families.sincos2d.grid.",
)
