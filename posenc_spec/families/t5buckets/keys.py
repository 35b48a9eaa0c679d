"""The names a T5-bucket declaration is made of (imports nothing: ``--help`` and the pytest
plugin read it without NumPy). What each key accepts: :mod:`.spec`."""

from posenc_spec.gate.family import FamilyKeys

API = "t5-buckets"
PRESET_NAMES = ("t5-encoder", "t5-decoder", "wavlm", "layoutlm-2d", "cpmant", "gluonnlp-encoder")
SIGNATURES = ("static", "method", "table", "bias")
# The arguments a call hands over, each under its own name unless arg_names renames it.
ROLES = ("relative_position", "bidirectional", "num_buckets", "max_distance", "query_length", "key_length", "x")
# The keys that say how a target is called (identify reads them to call it; it finds the rest).
CALL_KEYS = ("signature", "init", "method", "kwargs", "arg_names", "query_positions", "bucket_embedding",
             "model_config")

# The slips a hint names (posenc_spec.gate.identify.hint), in docs/checks.md's words.
SLIPS = {
    "t5-halving-forgotten": "bidirectional's `num_buckets //= 2` forgotten (keys after the query from bucket "
                            "`num_buckets` on)",
    "t5-halved-causal": "`num_buckets //= 2` done for causal attention too",
    "t5-max-exact-before-halving": "`max_exact` taken from the count before the halving (no logarithmic buckets "
                                   "left)",
    "t5-sign-flipped": "the relative position's sign flipped (`query - memory` where `memory - query` is declared, "
                       "or the other way)",
    "t5-direction": "bidirectional and causal attention mixed up",
    "t5-missing-clamp": "the clamp to the direction's last bucket missing",
    "t5-clamp-full-count": "the clamp to `num_buckets - 1` of the whole count where the halved count's last "
                           "bucket belongs",
    "t5-log-float16": "the logarithm taken in float16",
    "t5-log-bfloat16": "the logarithm taken in bfloat16",
    "t5-int32-overflow": "the relative positions cast to int32 (wrapped around)",
    "t5-settings": "another `num_buckets` or `max_distance` than the declared one (hard-coded, or not passed on)",
    "t5-query-offset": "the queries placed at the first keys where they are the last, or the other way",
    "t5-rounding": "the logarithmic position rounded (`round`, or DeBERTa's `ceil`) where T5 truncates it",
    "t5-log-steps": "the logarithmic scale multiplied by another count than `num_buckets - max_exact`",
    "t5-log-of-distance": "`log(n) / log(max_distance)` where T5 takes the logarithms of ratios to `max_exact`",
    "t5-integer-division": "`n // max_exact` (integer division) before the logarithm",
    "t5-exact-region": "`max_exact = num_buckets // 4` of the whole count for causal attention, where half of "
                       "its count belongs",
    "t5-query-in-upper-half": "the query itself (relative position 0) in the upper half (`>= 0` where `> 0` "
                              "belongs)",
    "t5-causal-future-by-distance": "causal attention bucketing later keys by their distance where T5 puts them "
                                    "in bucket 0",
    "positions-offset": "positions shifted (off by one)",
}

NAMES = FamilyKeys(
    name="t5buckets",
    noun="T5 relative-position buckets",
    apis=(API,),
    keys=("convention", "bidirectional", "num_buckets", "max_distance", "relative_position", "compute_dtype",
          "arg_names", "query_positions", "bucket_embedding", "model_config"),
    signatures={API: SIGNATURES},
    sizes={API: ("num_buckets", "max_distance", "bidirectional", "causal", "query_length", "key_length",
                 "max_positions", "config")},
    number_keys=("num_buckets", "max_distance"),
    repeated=("arg_names",),
    flags={"arg_names": "--arg-name", "bucket_args": "--bucket-arg"},
    config_key="model_config",
    help={
        "convention": ("NAME", f"the declared preset: {', '.join(PRESET_NAMES)} (default t5-encoder)"),
        "bidirectional": ("true|false", "true for an encoder, false for a decoder's self-attention (overrides the "
                                        "preset)"),
        "num_buckets": ("N", "the buckets of both directions together (overrides the preset)"),
        "max_distance": ("M", "the distance from which every key shares its direction's last bucket (overrides the "
                              "preset)"),
        "relative_position": ("SIGN", "memory-minus-query (T5 and its copies; default) or query-minus-memory"),
        "compute_dtype": ("DTYPE", "the dtype the logarithm is taken in: float32 (default), float64 or float16"),
        "arg_names": ("ROLE=NAME", "the target's name for an argument (relative_position, bidirectional, "
                                     "num_buckets, max_distance, query_length, key_length, x); NAME causal passes "
                                     "the flag negated, an empty NAME passes nothing (repeatable)"),
        "query_positions": ("first|last", "table and bias signatures: the queries are the first keys (default) or "
                                          "the last ones"),
        "bucket_embedding": ("ATTR", "bias signature: the nn.Embedding the bias is looked up in"),
        "model_config": ("FILE", "a transformers config.json: its bucket settings, and the object --init config "
                                  "builds"),
    },
    group="T5 relative-position buckets (--api t5-buckets)",
    title="T5 relative-position buckets (T5 and its many copies)",
    page="docs/families/t5buckets.md",
    check_ids="T5 relative-position buckets (S a slot: int64, int32, int64:2d for a function of positions, QxK for "
              "a table or a bias; D int32 or int64): call, integer, range, formula, exact-small, halves, monotone and "
              "saturation at [S], relative-only at a table's [S]; call and formula at [extremes:D]; call[int-min:D] "
              "and int-min[D], -2**(b-1), where nearly every real implementation's abs() wraps: no difference of two "
              "positions, so noted, never failed; decode (a table or bias "
              "whose queries are the last keys: one query per step after a prefill, the module reused). See "
              "posenc_spec.families.t5buckets.grid.",
    identify_keys=("bidirectional", "num_buckets", "max_distance", *CALL_KEYS),
    identify_help={
        "bidirectional": ("true|false", "the setting a target that takes its settings is called with (default true)"),
        "num_buckets": ("N", "the setting a target that takes its settings is called with (default 32)"),
        "max_distance": ("M", "the setting a target that takes its settings is called with (default 128)"),
    },
    adapters=True,
    slips=SLIPS,
    aliases={"bucket_preset": "convention", "log_dtype": "compute_dtype", "bucket_args": "arg_names",
             "bucket_query_offset": "query_positions", "bucket_config": "model_config"},
    alias_values={"bucket_query_offset": {"start": "first", "end": "last"}},
)
