"""The names an ALiBi declaration is made of (imports nothing: ``--help`` and the pytest
plugin read it without NumPy). What each key accepts: :mod:`.spec`."""

from posenc_spec.gate.family import FamilyKeys

PRESET_NAMES = ("paper", "bloom", "falcon", "mpt", "bidirectional", "fairseq", "labml", "geometric")
# The fields of the convention a declaration may override (.conventions.AlibiConvention), in
# the order they are listed, and the key of each: the field's name, but for the dtype the bias
# is computed in, a concept other families share (docs/keys.md).
CONVENTION_FIELDS = ("slope_rule", "alibi_bias_max", "alibi_heads", "bias_form", "bias_region", "query_positions",
                     "key_positions", "bias_dtype", "up_to_row_constant")
FIELD_KEYS = {field: {"bias_dtype": "compute_dtype"}.get(field, field) for field in CONVENTION_FIELDS}
CONVENTION_KEYS = tuple(FIELD_KEYS.values())
# The fields that describe the bias, not the slopes: the alibi-slopes API reads none of their keys.
BIAS_FIELDS = ("bias_form", "bias_region", "query_positions", "key_positions", "bias_dtype", "up_to_row_constant")
BIAS_KEYS = tuple(FIELD_KEYS[field] for field in BIAS_FIELDS)
SLOPES_API, BIAS_API = "alibi-slopes", "alibi-bias"

# The slips a hint names (posenc_spec.gate.identify.hint), in docs/checks.md's words.
SLIPS = {
    "alibi-geometric-slopes": "ALiBi slopes of one geometric sequence, `2 ** (-8 / n)`, for every head count",
    "alibi-slopes-reversed": "ALiBi slopes reversed across the heads",
    "alibi-slope-rule": "ALiBi slopes of another rule (the interleave taken wrong, heads counted from 0)",
    "alibi-bias-max": "ALiBi's `alibi_bias_max` (B) off",
    "alibi-bfloat16": "an ALiBi bias computed in bfloat16 whatever dtype is asked for",
    "alibi-low-precision-positions": "ALiBi positions rounded to the compute dtype before the product",
    "alibi-cache-corner": "an ALiBi bias cache sliced from the wrong corner when reused for decoding",
    "alibi-no-decode-bias": "no ALiBi bias at all in incremental decoding",
    "alibi-form": "another ALiBi bias form (sign, distance, causal or symmetric)",
    "alibi-queries-first": "ALiBi queries placed at the first positions, not the last",
    "alibi-padding": "the attention mask's padding not taken out of the ALiBi positions",
    "alibi-partial-heads": "partial ALiBi with the wrong heads or slopes",
    "alibi-float16-slopes": "ALiBi slopes kept in float16 (a float16 buffer) and the bias formed from them",
}

_HELP = {
    "convention": ("NAME", f"the declared ALiBi preset: {', '.join(PRESET_NAMES)} (default paper)"),
    "slope_rule": ("RULE", "paper (the interleave for head counts that are not powers of two) or geometric"),
    "alibi_bias_max": ("B", "the slopes' exponents reach B: 2 ** (-B h / n) (default 8; MPT's alibi_bias_max)"),
    "alibi_heads": ("K", "partial ALiBi: the first K heads take the slopes of K heads, the others add nothing"),
    "bias_form": ("FORM", "causal m (k - q), symmetric -m |k - q|, key m k (BLOOM) or key-last m (k - k_last) (MPT)"),
    "bias_region": ("causal|full", "judge the keys at or before each query (default) or every key"),
    "query_positions": ("last|first", "q_len queries over k_len keys are the last (default) or the first"),
    "key_positions": ("index|mask-cumsum", "key positions from the index, or BLOOM's (cumsum(mask) - 1) * mask"),
    "compute_dtype": ("DTYPE", "the dtype the bias is computed in, where the model was trained so (Falcon: bfloat16)"),
    "up_to_row_constant": ("true|false", "accept any constant per query row (the same attention after softmax)"),
    "num_heads": ("N", "the model's head count: the grid then calls only it (default: 28 counts from 1 to 128)"),
}

NAMES = FamilyKeys(
    name="alibi",
    noun="an ALiBi bias",
    apis=(SLOPES_API, BIAS_API),
    keys=("convention", *CONVENTION_KEYS, "num_heads"),
    signatures={SLOPES_API: ("heads",),
                BIAS_API: ("heads-length", "heads-length-max", "mask-heads-dtype", "heads-mask", "module-ij",
                           "module-scores")},
    sizes={SLOPES_API: ("num_heads", "alibi_bias_max"), BIAS_API: ("num_heads", "alibi_bias_max")},
    # What a call description may hand an ALiBi target (docs/declaring.md, "Call descriptions").
    roles={SLOPES_API: ("num_heads", "alibi_bias_max"),
           BIAS_API: ("num_heads", "query_length", "key_length", "attention_mask", "causal_mask", "scores", "dtype",
                      "alibi_bias_max")},
    # The signatures said as descriptions (module-ij and module-scores: adapters.py's own calls).
    presets={SLOPES_API: {"heads": "fn(num_heads)"},
             BIAS_API: {"heads-length": "fn(num_heads, key_length)",
                        "heads-length-max": "fn(num_heads, key_length, alibi_bias_max)",
                        "mask-heads-dtype": "fn(attention_mask, num_heads, dtype)",
                        "heads-mask": "fn(num_heads, causal_mask)"}},
        number_keys=("alibi_bias_max", "alibi_heads", "num_heads"),
    help=_HELP,
    group="ALiBi attention biases (--api alibi-slopes | alibi-bias)",
    identify_keys=("signature", "init", "method", "kwargs", "num_heads"),
    identify_help={"num_heads": ("N", "the model's head count: identify calls it beside its own counts")},
    adapters=True,
    slips=SLIPS,
    aliases={"alibi_convention": "convention", "bias_dtype": "compute_dtype", "attention_heads": "num_heads"},
    title="ALiBi attention biases (BLOOM, MPT, Falcon, x-transformers)",
    page="docs/families/alibi.md",
    check_ids="ALiBi biases (S a call's slot such as L=7, 8x8, p=31 or L=2050:float16, each the worst over the head "
              "counts that make it): call[S], finite[S], formula[S], linear[S], toeplitz[S], diagonal[S], "
              "equivalent[S], unbiased-heads[S] and decode[S] (a decoding step on the module of its prefill); ALiBi "
              "slopes: call, finite, formula and head-ratio at [h=1-128]. See posenc_spec.families.alibi.grid.",
)
