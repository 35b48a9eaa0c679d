"""The names a rotary declaration is made of (imports nothing: ``--help`` and the pytest
plugin read it without NumPy). What each key accepts: :mod:`posenc_spec.families.rope.spec`."""

from posenc_spec.gate.family import FamilyKeys

# The slips a hint names (posenc_spec.gate.identify.hint), in docs/checks.md's words.
SLIPS = {
    "sin-cos-swapped": "sin and cos swapped",
    "positions-offset": "positions shifted (off by one)",
    "positions-ignored": "the positions passed are ignored",
    "rope-layout": "rotate-half and interleaved pairs mixed up",
    "cache-layout": "the cache's half and interleaved column orders mixed up",
    "apply-pairing-mixed": "an apply pairing one way handed cos and sin laid out the other (rotate-half applied to "
                           "interleaved cos/sin, or the converse)",
    "theta": "the base (rope_theta) off",
    "angle-sign": "the angle's sign flipped",
    "scale-twice": "a scaling factor applied twice",
    "scaling-type-dropped": "the scaling type (rope_type) not applied",
    "scaling-factor": "the scaling factor off",
    "longrope-switch-late": "LongRoPE's long factors from one length late (a call of L0 + 1 positions given the "
                            "short ones)",
    "partial-rotary-ignored": "the partial rotary factor ignored",
    "exponent-over-head-dim": "the exponent divided by head_dim where the rotary size belongs",
    "exponent-over-rotary-dim": "the exponent divided by the rotary size where head_dim belongs",
    "attention-factor-missing": "the attention factor missing",
    "attention-factor-twice": "the attention factor applied twice",
    "attention-factor-cos-only": "the attention factor applied to cos only",
    "attention-factor": "the attention factor off",
}

NAMES = FamilyKeys(
    name="rope",
    noun="a rotary embedding",
    apis=("rope-freqs", "rope-cache", "rope-apply"),
    keys=("model_config", "base", "rope_type", "layer_type", "rope_parameters", "partial_rotary_factor",
          "rotary_dim", "rotary_features", "attention_factor", "layout", "cache_layout", "cache_form",
          "cache_call", "head_dim"),
    signatures={"rope-freqs": ("d",), "rope-cache": ("cache",),
                "rope-apply": ("x-positions", "q-k-cos-sin", "xq-xk-freqs-cis", "x-offset", "x-input-pos")},
    sizes={api: ("head_dim", "num_positions", "max_positions", "base", "rope_theta")
           for api in ("rope-freqs", "rope-cache", "rope-apply")},
    # What a call description may hand a rotary target (docs/declaring.md, "Call descriptions").
    roles={"rope-freqs": ("head_dim", "base", "max_positions"),
           "rope-cache": ("positions", "num_positions", "head_dim", "x", "dtype", "base", "max_positions"),
           "rope-apply": ("x", "q", "k", "positions", "cos", "sin", "freqs_cis", "head_dim", "dtype", "base",
                          "max_positions")},
    # The signatures said as descriptions (the others: adapters.py's own calls).
    presets={"rope-freqs": {"d": "fn(head_dim)"},
             "rope-apply": {"x-positions": "fn(x, positions)", "xq-xk-freqs-cis": "fn(q, k, freqs_cis)"}},
        number_keys=("base", "partial_rotary_factor", "rotary_dim", "head_dim"),
    repeated=("rope_parameters",),
    flags={"rope_parameters": "--rope-param"},
    config_key="model_config",
    help={
        "model_config": ("FILE", "a Hugging Face config.json stating the rotary convention (flags override it)"),
        "base": ("B", "the RoPE base, Hugging Face's rope_theta (default 10000)"),
        "rope_type": ("TYPE", "default, linear, dynamic, yarn, llama3, longrope or proportional"),
        "layer_type": ("NAME", "pick one entry of a per-layer-type rope_parameters (Gemma 3/4)"),
        "rope_parameters": ("KEY=VALUE", "a parameter of the rope type, Hugging Face's name, VALUE in JSON "
                                         "(repeatable)"),
        "partial_rotary_factor": ("F", "rotary_dim = int(head_dim * F) (default 1.0)"),
        "rotary_dim": ("N", "the rotated size itself (GPT-J, CodeGen)"),
        "rotary_features": ("first|last", "which features rotate (default first; DeepSeek-V3: last)"),
        "attention_factor": ("in-cache|separate", "A multiplies cos/sin (default) or is applied elsewhere"),
        "layout": ("half|interleaved", "pairs (i, i + r/2) (default) or (2i, 2i + 1)"),
        "cache_layout": ("half|interleaved|compact", "rope-cache: each of cos and sin (default half)"),
        "cache_form": ("FORM", "rope-cache: cos-sin (default), complex, angles, sin-cos-cat, cos-sin-cat or stacked"),
        "cache_call": ("CALL", "rope-cache: positions (default), batched, length or x-positions"),
        "head_dim": ("N", "the model's head size: the grid then uses only it"),
    },
    group="rotary embeddings (--api rope-freqs | rope-cache | rope-apply)",
    title="Rotary embeddings (RoPE), every Hugging Face rope type",
    page="docs/declaring.md#rotary-embeddings",
    x_layouts="rope-apply: bshd (default), bhsd, sbhd or thd",
    check_ids="Rotary embeddings (D a head size, S long or short, T the dtype of x): call, finite and formula at "
              "[d=D], [d=D:S] or [d=D:T]; attention-factor[d=D]; identity, prefix, passthrough, norm, relative and "
              "history at [d=D...]; after the grid (at a declared head_dim, before it), the call sequences real code "
              "plays: dtype-order, decode, offsets, grow, batch, rows and view at [d=D]. See "
              "posenc_spec.families.rope.grid and .sequences.",
    identify_keys=("head_dim", "layout", "cache_layout", "cache_form", "cache_call", "x_layout"),
    identify_help={
        "head_dim": ("N", "the model's head size: identify calls only it (default: 64 and 128)"),
        "layout": ("half|interleaved", "rope-apply: judge under this pairing (default: the pairing the calls "
                                            "show)"),
        "cache_layout": ("half|interleaved|compact", "rope-cache: each of cos and sin: half, interleaved or compact "
                                                     "(default: read from the columns)"),
    },
    adapters=True,
    slips=SLIPS,
    aliases={"rope_config": "model_config", "rope_theta": "base", "rope_layout": "layout"},
)
