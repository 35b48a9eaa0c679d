"""The names a sinusoidal declaration is made of (imports nothing: ``--help`` and the
pytest plugin read it without NumPy). What each key accepts: :mod:`.spec`."""

from posenc_spec.gate.family import FamilyKeys

PRESET_NAMES = ("vaswani", "concat", "tensor2tensor", "fairseq", "guided-diffusion")
# The fields of a convention a declaration may override, in the order they are listed.
CONVENTION_KEYS = ("layout", "first", "freq_shift", "base", "offset", "scale")
_HELP = {"layout": "interleaved or concat", "first": "sin or cos", "freq_shift": "0 or 1",
         "base": "the base (> 1)", "offset": "the position of row 0", "scale": "the scale of the argument"}

# The slips a hint names (posenc_spec.gate.identify.hint), in docs/checks.md's words.
SLIPS = {
    "sin-cos-swapped": "sin and cos swapped",
    "exponent-i-over-d": "`i/d` written where the formula has `2i/d`",
    "denominator-half-dim-minus-one": "`half_dim - 1` where the declared convention has `half_dim` (`d/2`)",
    "denominator-half-dim": "`half_dim` where the declared convention has `half_dim - 1`",
    "denominator-d-minus-one": "`d - 1` where the formula has `d`",
    "exponent-over-length": "the exponent divided by the number of positions instead of the width",
    "precedence-half-dim-minus-one": "`log(base) / half_dim - 1` where `log(base) / (half_dim - 1)` belongs",
    "positions-float16": "positions formed in float16 (rounded)",
    "positions-bfloat16": "positions formed in bfloat16 (rounded)",
    "positions-reversed": "positions counted down from the end",
    "positions-linspace": "positions from linspace, spaced n/(n-1) apart",
    "positions-offset": "positions shifted (off by one)",
    "columns-reversed": "the columns in reverse order",
    "reshape-for-transpose": "a table built features by positions, reshaped where it is transposed",
    "one-function": "one function in both columns of each pair (sin where cos belongs, or the reverse)",
    "values-scaled": "every value multiplied by one factor (a scaling applied to the table)",
    "positions-clamped": "positions clamped to a buffer's last row",
    "positions-wrapped": "positions wrapped around a buffer's length",
    "layout": "interleaved and concatenated (`[sin | cos]`) columns mixed up",
    "base": "the base (theta) off",
    "log10-for-ln": "`log10` where the natural logarithm belongs",
    "log2-for-ln": "`log2` where the natural logarithm belongs",
    "angle-sign": "the angle's sign flipped",
    "scale": "the positions scaled",
    "scale-twice": "a scaling factor applied twice",
    "scale-dropped": "a scaling factor dropped",
    "exponent-column-index": "each column's own index in the exponent where its pair's belongs",
    "exponent-column-half-index": "each column j at `j/d` (the cosines at `(2i+1)/d`)",
    "exponent-sign-dropped": "the exponent's minus sign dropped (frequencies that grow)",
    "exponent-integer-division": "the exponent taken by integer division (every frequency 1)",
    "precedence-power": "`pos / base ** 2 * 2i / d` where `pos / base ** (2i / d)` belongs",
    "channel-index-uint8": "the pair index held in uint8 (wrapping at 256)",
    "angle-floored": "the angle rounded down to an integer (`//` where `/` belongs)",
    "channel-index-float16": "the pair index held in float16 before the exponent",
    "channel-index-bfloat16": "the pair index held in bfloat16 before the exponent",
    "frequencies-float16": "the frequencies rounded to float16 before the angle",
    "frequencies-bfloat16": "the frequencies rounded to bfloat16 before the angle",
    "output-float16": "the table stored in float16 and returned wider",
    "output-bfloat16": "the table stored in bfloat16 and returned wider",
    "angle-float16": "the angle formed in float16",
    "angle-bfloat16": "the angle formed in bfloat16",
    "arguments-swapped": "the arguments read in the other order (`fn(dim, num_positions)`)",
    "table-transposed": "the table returned transposed (features by positions)",
    "rows-extra": "rows besides the positions' (a cls or padding row)",
    "rows-missing": "the first or the last positions' rows left out",
    "rows-truncated": "the table cut at a buffer's length",
}

# The reference implementations posenc-spec ships (.references), as check --builtin declares them.
_REFERENCES = "posenc_spec.families.sinusoidal.references"
BUILTIN = (
    {"target": f"{_REFERENCES}.numpy_loop:positional_encoding", "convention": "vaswani"},
    {"target": f"{_REFERENCES}.numpy_vectorized:positional_encoding", "convention": "vaswani"},
    {"target": f"{_REFERENCES}.torch_impl:positional_encoding", "convention": "vaswani"},
    {"target": f"{_REFERENCES}.timestep:timestep_embedding", "api": "timesteps", "convention": "concat"},
)

NAMES = FamilyKeys(
    name="sinusoidal",
    noun="a sinusoidal table",
    apis=("table", "timesteps"),
    keys=("convention", *CONVENTION_KEYS, "odd"),
    signatures={"table": ("n-d", "adds-to-x"), "timesteps": ("t-d",)},
    sizes={"table": ("num_positions", "dim", "max_positions"),
           "timesteps": ("num_positions", "dim", "max_positions", "t_max")},
    # What a call description may hand a sinusoidal target (docs/declaring.md, "Call descriptions").
    roles={"table": ("num_positions", "dim", "positions", "max_positions"),
           "timesteps": ("timesteps", "num_positions", "dim", "max_positions", "t_max")},
    presets={"table": {"n-d": "fn(num_positions, dim)"}, "timesteps": {"t-d": "fn(timesteps, dim)"}},
    number_keys=("freq_shift", "base", "offset", "scale"),
    help={"convention": ("NAME", f"the declared preset: {', '.join(PRESET_NAMES)} (default vaswani)"),
          **{key: ("VALUE", f"override the preset's {key}: {text}") for key, text in _HELP.items()},
          "odd": ("VALUE", "odd widths: error (expect an exception; default), zero-pad, ceil, or skip (test none)")},
    group="sinusoidal tables and timestep embeddings (--api table | timesteps)",
    builtin=BUILTIN,
    title="Sinusoidal tables and diffusion timestep embeddings",
    page="docs/declaring.md#the-family-of-sinusoidal-conventions",
    x_layouts="the adds-to-x signature: sbd (default), bsd or sd",
    check_ids="Sinusoidal tables and timesteps (S names a slot of the grid such as 4096x64 or every-step-x128, "
              "the same whatever --max-positions or --t-max): call[S], finite[S], formula[S], range[S], pair-norm[S], "
              "row-norm[S], position-zero[S], frequencies[S], relative-offset[S], dot-product[S], degenerate[d=2], "
              "degenerate[L=1], odd[7], odd[65]; after the grid, at a size it never asks, the call sequences real "
              "code plays: grow[d=16] (tables), dtype-order[64x32] and memo[48x32] (timesteps). See "
              "posenc_spec.families.sinusoidal.grid and .sequences.",
    adapters=True,
    identify_keys=("signature", "init", "method", "kwargs", "x_layout"),
    slips=SLIPS,
)
