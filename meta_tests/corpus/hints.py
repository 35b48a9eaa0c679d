"""The hint each wrong corpus entry must get: the slip planted in it (an id of
:data:`posenc_spec.gate.identify.hint.SLIPS`), or the reason why the calls the gate makes
in every run mode cannot show it, where the hint must stay silent (a false hint is a false
alarm). Every wrong entry is listed: a new entry says here what its hint is.
"""

from __future__ import annotations

# The reasons an entry gets no hint.
NOT_A_MEMBER = "the tables are no variant of the declaration (not a member of the family, nor one slip from it)"
NOT_VALUES = "no check of the values fails: the failed check's own reason says what is wrong"
LOW_PRECISION = "arithmetic in a narrow type beyond the positions: too many ways to round to recognise reliably"
NOISE = "noise, clipping or a changed shape: no variant of the declaration explains it"
TWO_SLIPS = "two slips at once that no variant combines"

SINUSOIDAL: dict[str, str] = {
    "swapped_sin_cos": "sin-cos-swapped",
    "sin_in_both_columns": "one-function",
    "flip_applied_to_cos_first": "sin-cos-swapped",
    "flip_reverses_columns": TWO_SLIPS,  # reversed columns and the other function first
    "exponent_pair_over_d": "exponent-i-over-d",
    "exponent_column_index": "exponent-column-index",
    "exponent_doubled_in_loop": "exponent-column-index",  # 4k/d and (4k+2)/d: 2j/d
    "cos_exponent_2i_plus_1": "exponent-column-half-index",
    "exponent_over_length": "exponent-over-length",
    "t2t_without_shift": "denominator-half-dim",  # named beside base 1000: one width cannot tell them apart
    "shift_one_where_zero": "denominator-half-dim-minus-one",
    "base_1000": "base",
    "log10_for_ln": "log10-for-ln",
    "log2_for_ln": "log2-for-ln",
    "ln_base_as_9_21": "base",
    "ln_base_as_9_2103": "base",
    "base_10000_5": "base",
    "positive_exponent": "exponent-sign-dropped",  # frequencies that grow
    "negated_angle": "angle-sign",
    "integer_exponent_division": "exponent-integer-division",  # every frequency 1
    "floor_divided_angle": "angle-floored",
    "precedence_power": "precedence-power",
    # From width 20 on, log(base) / half_dim - 1 is negative: frequencies that grow, a base below 1 that no
    # member has, so no variant fits the whole grid (the narrow widths alone showed the slip); the timesteps'
    # frequencies overflow to NaN, which the plain hint names.
    "precedence_half_dim_minus_one": "values-nan",
    "positions_from_one": "positions-offset",
    "fairseq_starts_at_padding_idx": "positions-offset",
    "fairseq_without_offset": "positions-offset",
    "linspace_positions": "positions-linspace",
    "reversed_positions": "positions-reversed",
    "positions_clamped_512": "positions-clamped",
    "positions_wrap_2048": "positions-wrapped",
    "buffer_truncates_silently": "rows-truncated",  # a 2048-row buffer: longer calls return its rows alone
    "stack_on_wrong_dim": "layout",
    "reshape_instead_of_transpose": "reshape-for-transpose",
    "interleave_with_wrong_view": NOT_A_MEMBER,
    "extra_batch_axis": NOT_VALUES,  # call: a wrong shape
    "rows_from_batch_axis": "positions-clamped",  # every row is position 0's
    "first_timestep_for_batch": NOT_A_MEMBER,  # one timestep for every row
    "float16_positions": "positions-float16",
    "bfloat16_positions": "positions-bfloat16",
    "bfloat16_timesteps": "positions-bfloat16",
    "float16_angle": "angle-float16",
    "bfloat16_frequencies": "frequencies-bfloat16",
    "float16_timestep_angle": "angle-float16",
    "bfloat16_beyond_cache": "positions-bfloat16",
    "bfloat16_channel_index": "channel-index-bfloat16",
    "channel_index_uint8": "channel-index-uint8",
    "odd_drops_column": NOT_VALUES,  # odd widths
    "odd_d_plus_one_columns": NOT_VALUES,
    "odd_pads_sequence_axis": NOT_VALUES,
    "odd_pads_first_column": NOT_VALUES,
    "odd_ceil_with_even_width": NOT_VALUES,
    "diffusers_nan_at_d2": NOT_VALUES,  # degenerate
    "whisper_nan_at_d2": NOT_VALUES,
    "dropout_left_on": NOISE,
    "gaussian_jitter": NOISE,
    "clipped_to_0_999": NOISE,
    "scaled_by_sqrt_d": "values-scaled",
    "rows_normalised": "values-scaled",
    "timesteps_normalised": "scale",
    "scale_applied_twice": "scale-twice",
    "timesteps_truncated": NOISE,  # timesteps truncated to integers
    "epsilon_in_denominator": NOT_A_MEMBER,  # the epsilon is another base at each width: no one base fits the grid
    "leaves_default_dtype_float64": NOT_VALUES,  # global-state
    "cache_keyed_by_length": NOT_VALUES,  # call
    "scales_timesteps_in_place": NOT_VALUES,
    "reseeds_global_rng": NOT_VALUES,
}

ROPE: dict[str, str] = {
    "positions_arange_bfloat16": "positions-bfloat16",
    "cache_in_activation_dtype": "values-nan",  # positions and inv_freq in float16: angles past 65504 are inf
    "matmul_under_bf16_autocast": LOW_PRECISION,
    "mistral_regenerates_in_bfloat16": LOW_PRECISION,
    "angles_cached_in_float16": "values-nan",  # the float16 angle table is inf past 65504
    "inv_freq_downcast_to_bfloat16": NOT_VALUES,  # call: bfloat16 frequencies
    "apply_angles_in_query_dtype": "values-nan",  # float16 q: positions times inv_freq past 65504 are inf
    "cache_leaves_default_dtype_float64": NOT_VALUES,  # global-state
    "interleaved_flag_ignored": "rope-layout",
    "meta_rotation_on_hf_layout": "rope-layout",
    "wrong_inverse_permutation": NOT_A_MEMBER,  # a pairing neither half nor interleaved
    "meta_order_cache_for_half_model": "cache-layout",
    "rotate_half_on_heads_axis": NOT_A_MEMBER,  # heads mixed
    "sin_cos_swapped": "sin-cos-swapped",
    "rotation_sign_flipped": "angle-sign",
    "positions_start_at_one": "positions-offset",
    "exponent_over_head_dim": "exponent-over-head-dim",
    "partial_rotary_factor_dropped": "partial-rotary-ignored",
    "apply_ignores_position_ids": "positions-ignored",
    "proportional_exponent_over_rotated_size": "exponent-over-rotary-dim",
    "dynamic_ntk_built_once": NOT_A_MEMBER,  # one fixed base: no theta under the declared dynamic type fits the grid
    "dynamic_base_not_scaled_back": NOT_VALUES,  # history
    "dynamic_cache_extended_row_by_row": NOT_A_MEMBER,  # rows of several bases
    "dynamic_ntk_below_trained_length": "values-nan",  # finite fails: a negative base to a fractional power
    "attention_factor_on_cos_only": "attention-factor-cos-only",
    "yarn_mscale_defaults_collapse": "attention-factor-missing",
    "yarn_mscale_ratio_ignored": "attention-factor",
    "yarn_mscale_applied_twice": "attention-factor-twice",
    "yarn_attention_factor_logged_again": "attention-factor",
    "yarn_explicit_attention_factor_ignored": "attention-factor",
    "yarn_factor_from_length_ratio": "scaling-factor",
    "longrope_short_factor_unused": "scaling-factor",  # long_factor at every length: declaring it so conforms
    "longrope_factor_by_any_position": "longrope-switch-late",
    "llama3_scaling_never_applied": "scaling-type-dropped",
}
