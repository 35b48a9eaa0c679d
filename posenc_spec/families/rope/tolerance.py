"""How far a correct rotary value may be from the exact one: one bound per element.

A cache element is ``A cos(theta)`` or ``A sin(theta)``, ``theta = p f'_i``. A correct
implementation forms ``f'`` and the angle in precision ``u_a``, holds positions in a
position dtype and stores the cache in ``u_o``. To first order (products of two relative
errors, below ``u_a**2``, are left out) it makes these errors:

R1. ``f'_i``, relative ``delta_i``. The base ``f_i = theta ** (-2i/r)``: the exponent's
    quotient, the pow and a reciprocal, ``(2 x_i + 3) u_a`` with ``x_i = (2i/r) |ln theta|``
    (terms 1 and 2 of :mod:`posenc_spec.families.sinusoidal.tolerance`). Each type adds its own operations:
    ``linear``, ``proportional``, ``longrope``: ``s`` (or ``ext_i``) rounded and one
    division (or product), ``+ 2 u_a``. ``dynamic``: ``q = s L'/L0 - (s - 1)`` is off by
    ``dq = u_a (4 s L'/L0 + 2 |s - 1| + q) / q`` relative, ``theta' = theta q**k`` (``k = r/(r-2)``)
    by ``dth = k dq + (k |ln q| + 4) u_a``; ``f'_i`` by the base term for ``theta'`` plus
    ``(2i/r) dth``. ``yarn`` and ``llama3`` blend ``f' = w a + (1 - w) b`` of ``a``, ``b`` (``f``
    and ``f/s``, off by ``da``, ``db``): ``|a - b| (dw + 2 u_a) + max(da, db) f' + 3 u_a f'``
    (two ``1 - w``, two products, a sum), where the weight ``w = n / D`` is off by
    ``dw = (dn + |w| dD) / |D| + u_a |w|``. yarn: ``n = i - low``, ``D = high - low``; ``low`` and
    ``high`` are exact when truncated (the bound assumes the implementation finds the same
    integers, as it does unless ``r ln(L0 / (2 pi beta)) / (2 ln theta)`` lies within a few
    ``u_a`` of one), else each off by ``u_a (3r / (2 |ln theta|) + (7 + 1/|ln theta|) e)`` with
    ``e = max(|low|, |high|)``: two logs, three roundings of ``L0 / (2 pi beta)``, three more;
    ``dn`` and ``dD`` add one rounding per operand. The clamp is exact outside ``[-dw, 1 + dw]``.
    llama3: ``w = sm``, ``n = L0 / lambda_i - low_freq_factor`` with ``lambda_i = 2 pi / f_i`` off by
    ``delta_f + 2 u_a``, ``D = high_freq_factor - low_freq_factor``; within ``dw`` of either
    end of the band an implementation may take the other branch, and as the formula is
    continuous there the blend's bound covers it.
R2. the position, ``delta_p``: integers are exact, and so are floats up to ``2**24``
    (float32) or ``2**53`` (float64); above, ``u`` for each float dtype the position passes
    through (its own, then the angle dtype). float16 and bfloat16 positions are not correct
    code: they collide above 2048 and 256.
R3. ``p * f'_i``: ``u_a``; the angle is off by ``(delta_i + delta_p + u_a) |theta|``.
R4. cos or sin: ``4 u_a`` (term 4 there).
R5. ``* A`` when the cache holds an ``A != 1``: ``A`` rounded to the angle dtype and the
    product, ``2 u_a``, plus ``14 u_a`` when ``A`` is derived from ``s`` (two logs, a quotient of
    two ``g``, a square root, counted generously): ``delta_A``.
R6. the output dtype: ``u_o |A|``.

    t_cache = |A| ((delta_i + delta_p + u_a) |theta| + 4 u_a + delta_A + u_o)

Returned by themselves (``fn(d) -> inv_freq`` or ``(inv_freq, A)``), ``f'`` is off by R1 and,
stored in a dtype ``u_o``, by R6's ``u_o`` more; ``A`` by R5 without the product: ``14 u_a``
when derived from ``s`` (its last rounding among them), else the rounding of the declared
``A`` (a float64, or 1) to the angle dtype, ``u_a``, nothing when that is float64:

    t_freq = f'_i (delta_i + u_o)        t_A = |A| delta_A'

Each adds the float64 oracle's own, ``f'_i delta_i`` and ``|A| delta_A'`` in float64.

Applying it as transformers does (cos and sin cast to x's dtype ``u_x``, then ``x cos +
rotate_half(x) sin`` in ``u_x``, stored in ``u_o``): with ``t`` the cache bound at
``u_o = u_x``, ``|cos|, |sin| <= |A| + t``, so each output of a pair ``(a, b)`` is off by

    t_apply = (|x_a| + |x_b|) (t + (2 u_x + u_o) (|A| + t))

(two products and a sum, then the store) and an unrotated feature by ``u_o |x|``. Both add
the float64 oracle's own bound, the same terms with every dtype float64. Near position 131072
the bound of a float32 cache is about 3e-2 for the highest frequencies, where transformers'
float32 code measures up to 8e-3; bfloat16 positions (from 257 on), an ``inv_freq`` rounded
to bfloat16 (from a few positions on) and float16 angles exceed it.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.families.rope import oracle as rope_oracle
from posenc_spec.tolerance import DEFAULT_ANGLE_DTYPE, UNIT_ROUNDOFF, dtype_name, name_among, unit_roundoff

ROPE_POSITION_DTYPES = ("int32", "int64", "float32", "float64")


_DERIVED_A_ROUNDINGS = 14  # R5


def rope_frequency_error(conv, head_dim, seq_len=None, angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """R1: the relative bound ``delta_i`` on each ``f'_i`` (0 on proportional's zero pairs)."""
    u = unit_roundoff(angle_dtype)
    kind, s, r = conv.rope_type, conv.scaling_factor(), conv.rotary_dim_for(head_dim)
    e = conv.exponents(head_dim)
    f, ln_theta = conv.theta ** -e, abs(np.log(conv.theta))
    base = (2 * e * ln_theta + 3) * u
    if kind in ("linear", "longrope"):
        return base + 2 * u
    if kind == "proportional":
        return np.concatenate([base + 2 * u, np.zeros(conv.num_pairs(head_dim) - e.size)])
    if kind == "dynamic":
        l0 = conv.original_length()
        stretch = s * max(seq_len or l0, l0) / l0
        q, k = stretch - (s - 1), r / (r - 2)
        dth = k * u * (4 * stretch + 2 * abs(s - 1) + q) / q + (k * abs(np.log(q)) + 4) * u
        return (2 * e * abs(np.log(conv.theta_dynamic(r, seq_len))) + 3) * u + e * dth
    if kind == "yarn":
        low, high = conv.yarn_range(r)
        edge = max(abs(low), abs(high))
        d_end = 0.0 if conv.param("truncate", True) else u * (3 * r / (2 * ln_theta) + (7 + 1 / ln_theta) * edge)
        n, span = np.arange(e.size) - low, high - low
        w = np.clip(n / span, 0.0, 1.0)
        dw = _quotient_error(n, span, d_end + u * (abs(low) + np.minimum(abs(n), abs(span))),
                             2 * d_end + u * (abs(high) + abs(low) + abs(span)), u)
        return _blend_error(f / s, f, w, dw, base + 2 * u, base, u)
    if kind == "llama3":
        l0, low_ff, high_ff = (conv.param(name) for name in
                               ("original_max_position_embeddings", "low_freq_factor", "high_freq_factor"))
        wavelength, d_wavelength = 2 * np.pi / f, base + 2 * u
        y = l0 / wavelength
        n, span = y - low_ff, high_ff - low_ff
        dw = _quotient_error(n, span, y * (d_wavelength + u) + u * (low_ff + np.minimum(abs(n), span)),
                             u * (high_ff + low_ff + span), u)
        in_band = (n / span >= -dw) & (n / span <= 1 + dw)
        blend = _blend_error(f, f / s, np.clip(n / span, 0.0, 1.0), dw, base, base + 2 * u, u)
        return np.where(in_band, blend, np.where(wavelength < l0 / high_ff, base, base + 2 * u))
    return base


def _quotient_error(n, span, dn, d_span, u):
    """The absolute error of ``w = n / span`` clamped to [0, 1]: ``(dn + |w| dD) / |D| + u |w|``."""
    w = np.minimum(abs(n / span), 1.0)
    return (dn + w * d_span) / abs(span) + u * w


def _blend_error(a, b, w, dw, da, db, u):
    """The relative error of ``w a + (1 - w) b`` (R1, yarn and llama3)."""
    blended = w * a + (1 - w) * b
    return (abs(a - b) * (dw + 2 * u) + np.maximum(da, db) * blended + 3 * u * blended) / blended


def rope_attention_factor_error(conv, dtype=DEFAULT_ANGLE_DTYPE) -> float:
    """Relative bound on ``A`` as computed: ``14 u`` when derived from ``s``, 0 when 1 or given."""
    if conv.rope_type not in ("yarn", "longrope") or conv.param("attention_factor") is not None:
        return 0.0
    return _DERIVED_A_ROUNDINGS * unit_roundoff(dtype)


def rope_frequency_tolerance(conv, head_dim, seq_len=None, angle_dtype=DEFAULT_ANGLE_DTYPE,
                             out_dtype=None) -> np.ndarray:
    """``t_freq``: the absolute bound on each ``f'_i`` computed in ``angle_dtype`` and stored in
    ``out_dtype`` (None: as computed), plus the float64 oracle's."""
    inv_freq, _ = conv.frequencies(head_dim, seq_len)
    stored = 0.0 if out_dtype is None else unit_roundoff(out_dtype)
    return inv_freq * (rope_frequency_error(conv, head_dim, seq_len, angle_dtype) + stored
                       + rope_frequency_error(conv, head_dim, seq_len, "float64"))


def _returned_factor_error(conv, dtype) -> float:
    """``delta_A'``: ``14 u`` when ``A`` is derived, else ``u`` for rounding the declared ``A`` to
    ``dtype`` (0 in float64)."""
    derived = rope_attention_factor_error(conv, dtype)
    if derived or dtype_name(dtype) == "float64":
        return derived
    return unit_roundoff(dtype)


def rope_attention_factor_tolerance(conv, angle_dtype=DEFAULT_ANGLE_DTYPE) -> float:
    """``t_A``: the absolute bound on an ``A`` returned beside the frequencies, computed in
    ``angle_dtype``, plus the float64 oracle's."""
    return abs(conv.attention_factor()) * (_returned_factor_error(conv, angle_dtype)
                                           + _returned_factor_error(conv, "float64"))


def _position_error(positions, position_dtype, angle_dtype) -> np.ndarray:
    """R2: ``delta_p`` per position."""
    position_name = name_among(position_dtype, ROPE_POSITION_DTYPES)
    if position_name is None:
        raise ValueError(f"position_dtype must be one of {', '.join(ROPE_POSITION_DTYPES)}, got {position_dtype!r}"
                         " (float16/bfloat16 positions collide above 2048/256: not correct code)")
    delta = np.zeros(positions.shape)
    for name in {position_name, dtype_name(angle_dtype)} & set(UNIT_ROUNDOFF):
        u = unit_roundoff(name)  # integers up to 1/u are exact: 2**24 in float32, 2**53 in float64
        delta += np.where(positions > 1 / u, u, 0.0)
    return delta


def rope_cache_bound(positions, conv, head_dim, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE, position_dtype="int64",
                     seq_len=None) -> np.ndarray:
    """``t_cache`` alone for the compact ``(len(positions), pairs)`` cos (and sin) cache:
    with every dtype float64 it is the float64 oracle's own bound."""
    p = rope_oracle.check_positions(positions)
    seq_len = rope_oracle.call_length(p, seq_len)
    theta, _, attention_factor = rope_oracle.angles(p, conv, head_dim, seq_len)
    u_a, u_o = unit_roundoff(angle_dtype), unit_roundoff(out_dtype)
    angle_error = (rope_frequency_error(conv, head_dim, seq_len, angle_dtype)[None, :]
                   + _position_error(p, position_dtype, angle_dtype)[:, None] + u_a)
    factor = abs(conv.cache_factor(attention_factor))
    delta_a = 0.0 if factor == 1 else 2 * u_a + rope_attention_factor_error(conv, angle_dtype)
    return factor * (angle_error * np.abs(theta) + 4 * u_a + delta_a + u_o)


def rope_cache_tolerance(positions, conv, head_dim, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE,
                         position_dtype="int64", seq_len=None) -> np.ndarray:
    """The bound for a cache computed in these dtypes, plus the float64 oracle's own.
    ``seq_len`` defaults to ``max(positions) + 1``; pass it when the positions are a sample."""
    return (rope_cache_bound(positions, conv, head_dim, out_dtype, angle_dtype, position_dtype, seq_len)
            + rope_cache_bound(positions, conv, head_dim, "float64", "float64", "int64", seq_len))


def rope_angle_bound(positions, conv, head_dim, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE, position_dtype="int64",
                     seq_len=None) -> np.ndarray:
    """R1-R3 and R6 for a cache of the angles ``p f'_i`` themselves (x-transformers,
    rotary-embedding-torch, Megatron): ``(delta_i + delta_p + u_a + u_o) |theta|``."""
    p = rope_oracle.check_positions(positions)
    seq_len = rope_oracle.call_length(p, seq_len)
    theta, _, _ = rope_oracle.angles(p, conv, head_dim, seq_len)
    relative = (rope_frequency_error(conv, head_dim, seq_len, angle_dtype)[None, :]
                + _position_error(p, position_dtype, angle_dtype)[:, None]
                + unit_roundoff(angle_dtype) + unit_roundoff(out_dtype))
    return relative * np.abs(theta)


def rope_angle_tolerance(positions, conv, head_dim, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE,
                         position_dtype="int64", seq_len=None) -> np.ndarray:
    """The bound for angles computed in these dtypes, plus the float64 oracle's own."""
    return (rope_angle_bound(positions, conv, head_dim, out_dtype, angle_dtype, position_dtype, seq_len)
            + rope_angle_bound(positions, conv, head_dim, "float64", "float64", "int64", seq_len))


def rope_apply_bound(x, positions, conv, head_dim, layout, x_dtype, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE,
                     position_dtype="int64", seq_len=None) -> np.ndarray:
    """``t_apply`` alone for each element of the rotated ``x`` (shape ``(..., seq, head_dim)``,
    holding the exact inputs); with every dtype float64, the float64 oracle's own bound."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    p = rope_oracle.check_positions(positions)
    seq_len = rope_oracle.call_length(p, seq_len)
    factor = abs(conv.cache_factor(conv.frequencies(head_dim, seq_len)[1]))
    columns = rope_oracle.columns_for(conv, head_dim, layout)
    t = rope_cache_bound(p, conv, head_dim, x_dtype, angle_dtype, position_dtype, seq_len)
    u_x, u_o = unit_roundoff(x_dtype), unit_roundoff(out_dtype)
    bound = u_o * x
    pair = (x[..., columns.a] + x[..., columns.b]) * (t + (2 * u_x + u_o) * (factor + t))
    bound[..., columns.a] = pair
    bound[..., columns.b] = pair
    return bound


def rope_apply_tolerance(x, positions, conv, head_dim, layout, x_dtype, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE,
                         position_dtype="int64", seq_len=None) -> np.ndarray:
    """The bound for ``x`` rotated in these dtypes, plus the float64 oracle's own."""
    return (rope_apply_bound(x, positions, conv, head_dim, layout, x_dtype, out_dtype, angle_dtype, position_dtype,
                             seq_len)
            + rope_apply_bound(x, positions, conv, head_dim, layout, "float64", "float64", "float64", "int64", seq_len))


def _with_table_bound(x, positions, conv, head_dim, layout, table_layout, x_dtype, out_dtype, angle_dtype,
                      seq_len=None):
    """:func:`rope_apply_bound`'s terms for an apply pairing as ``layout`` with cos and sin laid
    out as ``table_layout`` (:func:`~.oracle.apply_with_table`): each element sums its own
    feature and its ``layout`` partner, times the cache bound of the table column it reads."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    p = rope_oracle.check_positions(positions)
    seq_len = rope_oracle.call_length(p, seq_len)
    factor = abs(conv.cache_factor(conv.frequencies(head_dim, seq_len)[1]))
    columns = rope_oracle.columns_for(conv, head_dim, layout)
    block = np.sort(np.concatenate([columns.a, columns.b]))
    t = np.zeros((p.size, head_dim))
    t[:, block] = rope_oracle.expand(rope_cache_bound(p, conv, head_dim, x_dtype, angle_dtype, "int64", seq_len),
                                     table_layout)
    u_x, u_o = unit_roundoff(x_dtype), unit_roundoff(out_dtype)
    bound = u_o * x
    pair = x[..., columns.a] + x[..., columns.b]
    for side in (columns.a, columns.b):
        bound[..., side] = pair * (t[:, side] + (2 * u_x + u_o) * (factor + t[:, side]))
    return bound


def rope_apply_with_table_tolerance(x, positions, conv, head_dim, layout, table_layout, x_dtype, out_dtype,
                                    seq_len=None) -> np.ndarray:
    """The bound for :func:`~.oracle.apply_with_table` computed in these dtypes, plus the
    float64 oracle's own: :func:`rope_apply_tolerance`'s terms with each element's table
    column taken from ``table_layout`` (equal to it when the two layouts are)."""
    return (_with_table_bound(x, positions, conv, head_dim, layout, table_layout, x_dtype, out_dtype,
                              DEFAULT_ANGLE_DTYPE, seq_len)
            + _with_table_bound(x, positions, conv, head_dim, layout, table_layout, "float64", "float64", "float64",
                                seq_len))
