"""The element bounds the gate uses, formed in place in one array (:mod:`.tolerance`), are the
derived ``t_bias`` to the last bit: written out term by term here as the module docstring
states it, over every call geometry of the grid, for each bias form and compute dtype."""

import numpy as np
import pytest

from posenc_spec.families.alibi import oracle
from posenc_spec.families.alibi.conventions import get_convention
from posenc_spec.families.alibi.grid import LEFT_PADDED, SIGNATURES, WITH_HOLE, calls
from posenc_spec.families.alibi.judge import positions_of
from posenc_spec.families.alibi.tolerance import (
    bias_tolerance,
    compute_dtype,
    row_constant_tolerance,
    slope_coefficients,
    slope_dtype,
)
from posenc_spec.tolerance import unit_roundoff

CONVENTIONS = ("paper", "bloom", "falcon", "mpt", "bidirectional", "labml")
OUT_DTYPES = ("float32", "bfloat16")
HEADS = (1, 12, 71)  # every call geometry of the grid's deep head counts; 112 and 128 only add heads


def _term_by_term(num_heads, positions, conv, out_dtype, u_s, u_c, narrow_slope, row_constant):
    """``t_bias`` as the docstring derives it, in fresh arrays."""
    u_o = unit_roundoff(out_dtype)
    delta_m = slope_coefficients(num_heads, conv) * u_s + (u_c if narrow_slope else 0.0)
    q = np.zeros(positions.queries.size) if conv.bias_form == "key" else positions.queries.astype(np.float64)
    k = positions.keys.astype(np.float64)

    def rho(values):
        return np.where(np.abs(values) > 1 / u_c, u_c * np.abs(values), 0.0)

    if row_constant:
        span = np.broadcast_to(np.abs(q)[:, None] + np.abs(k).max(initial=0.0) + 1.0, positions.shape)
        size, sides, rounded = span, span, rho(span)
    else:
        size = np.abs(oracle.distances(conv, positions)).astype(np.float64)
        sides = np.abs(q)[:, None] + np.abs(k)[None, :]
        rounded = rho(q)[:, None] + rho(k)[None, :]
    m = np.abs(oracle.slopes(num_heads, conv))[:, None, None]
    return m * ((delta_m + 2 * u_c + u_o)[:, None, None] * size[None] + (u_c * sides + rounded)[None])


def _derived(num_heads, positions, conv, out_dtype, row_constant):
    """The target's bound plus the float64 oracle's."""
    u64 = unit_roundoff("float64")
    narrow = compute_dtype(conv) in ("float16", "bfloat16")
    target = _term_by_term(num_heads, positions, conv, out_dtype, unit_roundoff(slope_dtype(conv)),
                           unit_roundoff(compute_dtype(conv)), narrow, row_constant)
    return target + _term_by_term(num_heads, positions, conv, "float64", u64, u64, False, row_constant)


def _geometries(conv):
    """Every distinct call geometry the grid makes under ``conv`` (its masks among them), at :data:`HEADS`."""
    seen = {}
    signatures = [s for s in SIGNATURES if s != "heads" and (conv.key_only or s != "mask-heads-dtype")]
    for signature in signatures:
        for heads in HEADS:
            for call in calls(signature, heads, conv):
                seen.setdefault((heads, call.q_len, call.k_len, call.mask), call)
    return list(seen.values())


@pytest.mark.parametrize("name", CONVENTIONS)
def test_in_place_bound_is_the_derived_bound_bit_for_bit(name):
    """bias_tolerance and row_constant_tolerance equal the derived terms exactly at every grid call."""
    conv = get_convention(name)
    geometries = _geometries(conv)
    assert {LEFT_PADDED, WITH_HOLE} <= {call.mask for call in geometries} or not conv.key_only
    for call in geometries:
        positions = positions_of(call, conv)
        for out_dtype in OUT_DTYPES:
            made = bias_tolerance(call.num_heads, positions, conv, out_dtype)
            derived = _derived(call.num_heads, positions, conv, out_dtype, conv.up_to_row_constant)
            assert np.array_equal(made, derived), (name, call.size, out_dtype)
            shifted = row_constant_tolerance(call.num_heads, positions, conv, out_dtype)
            assert np.array_equal(shifted, _derived(call.num_heads, positions, conv, out_dtype, True)), \
                (name, call.size, out_dtype)
