"""Where each pair lives, and the expected rotary values: exactly (mpmath) and fast (float64).

A pair ``i`` with angle ``p f'_i`` rotates features ``a_i`` and ``b_i`` of a head::

    x'_a = A (x_a cos(p f'_i) - x_b sin(p f'_i))
    x'_b = A (x_b cos(p f'_i) + x_a sin(p f'_i))

``half`` (GPT-NeoX, transformers) pairs ``(i, i + r/2)``; ``interleaved`` (RoFormer, GPT-J,
Meta's reference) pairs ``(2i, 2i + 1)``; the rotated block is the first ``r`` features or
the last ``r`` (``rotary_features``), the rest pass through. Everything that needs the
layout asks :func:`pair_columns`.

:func:`exact_frequencies` and :func:`exact_cache_values` evaluate the formulas of
:mod:`posenc_spec.families.rope.conventions` at 40 significant digits from the exact inputs and
round once to float64. The float64 paths (:func:`cache`, :func:`apply`) are off those
values by at most :func:`posenc_spec.families.rope.tolerance.rope_cache_bound` (and ``rope_apply_bound``)
with every dtype float64: ``((2 x_i + 4) |p f'_i| + 5) 2**-53`` with ``x_i = (2i/r) ln theta``
for the default type, up to 1e-10 near position 131072 (``spec_tests/families/rope/test_oracle.py``
measures it against mpmath for every type). They are vectorised: the cache of 131072
positions x 64 pairs takes about half a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np

from posenc_spec.families.rope.conventions import ROTARY_FEATURES, RopeConvention

EXACT_DIGITS = 40
LAYOUTS = ("half", "interleaved")


@dataclass(frozen=True)
class PairColumns:
    """Feature ``a[i]`` and ``b[i]`` of pair ``i``; ``passthrough``: the unrotated features."""

    a: np.ndarray
    b: np.ndarray
    passthrough: np.ndarray


def check_layout(layout) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    return layout


def pair_columns(head_dim: int, rotary_dim: int, layout: str = "half", rotary_features: str = "first") -> PairColumns:
    """The feature indices of every pair of a ``head_dim`` head rotating ``rotary_dim`` features."""
    check_layout(layout)
    if rotary_features not in ROTARY_FEATURES:
        raise ValueError(f"rotary_features must be one of {', '.join(ROTARY_FEATURES)}; got {rotary_features!r}")
    if rotary_dim % 2 or not 2 <= rotary_dim <= head_dim:
        raise ValueError(f"rotary_dim must be even and in [2, head_dim={head_dim}], got {rotary_dim}")
    start = 0 if rotary_features == "first" else head_dim - rotary_dim
    i = np.arange(rotary_dim // 2)
    a, b = (i, i + rotary_dim // 2) if layout == "half" else (2 * i, 2 * i + 1)
    rotated = np.arange(start, start + rotary_dim)
    return PairColumns(start + a, start + b, np.setdiff1d(np.arange(head_dim), rotated))


def columns_for(conv: RopeConvention, head_dim: int, layout: str = "half") -> PairColumns:
    return pair_columns(head_dim, conv.rotary_dim_for(head_dim), layout, conv.rotary_features)


def check_positions(positions) -> np.ndarray:
    """Positions as int64: ``0 .. n-1`` for an int n, else the given 1-D non-negative integers."""
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        if positions < 0:
            raise ValueError(f"positions must be >= 0, got {positions}")
        return np.arange(positions, dtype=np.int64)
    values = np.asarray(positions)
    if values.ndim != 1:
        raise ValueError(f"positions must be an int or a 1-D array, got shape {values.shape}")
    if values.size and (values.dtype.kind not in "iuf" or not np.all(np.isfinite(values))
                        or np.any(values != np.round(values)) or values.min() < 0):
        raise ValueError(f"positions must be non-negative integers, got {values[:5]}")
    return values.astype(np.int64)


def call_length(positions, seq_len=None) -> int | None:
    """``seq_len`` if given, else ``max(positions) + 1`` (``None`` for no positions)."""
    p = check_positions(positions)
    if seq_len is not None:
        return seq_len
    return int(p.max()) + 1 if p.size else None


def angles(positions, conv: RopeConvention, head_dim: int, seq_len=None):
    """``(theta, f', A)`` in float64: ``theta = p f'_i`` for every position (rows) and pair."""
    p = check_positions(positions)
    inv_freq, attention_factor = conv.frequencies(head_dim, call_length(p, seq_len))
    return p[:, None].astype(np.float64) * inv_freq[None, :], inv_freq, attention_factor


def cache(positions, conv: RopeConvention, head_dim: int, seq_len=None) -> tuple[np.ndarray, np.ndarray]:
    """The compact ``(cos, sin)``, each ``(len(positions), pairs)``, times ``A`` when it is in-cache.

    ``seq_len`` defaults to ``max(positions) + 1``; pass it when the positions are a sample
    of a longer call (dynamic and longrope depend on it).
    """
    theta, _, attention_factor = angles(positions, conv, head_dim, seq_len)
    factor = conv.cache_factor(attention_factor)
    return factor * np.cos(theta), factor * np.sin(theta)


def expand(compact: np.ndarray, layout: str) -> np.ndarray:
    """A compact ``(L, pairs)`` array in the ``(L, r)`` form of a layout: ``[c | c]`` for
    ``half`` (transformers' ``cat(freqs, freqs)``), ``c0 c0 c1 c1 ...`` for ``interleaved``."""
    check_layout(layout)
    compact = np.asarray(compact)
    return np.concatenate([compact, compact], axis=-1) if layout == "half" else np.repeat(compact, 2, axis=-1)


def apply(x, positions, conv: RopeConvention, head_dim: int, layout: str = "half", seq_len=None) -> np.ndarray:
    """``x`` of shape ``(..., seq, head_dim)`` rotated in float64, row ``j`` at ``positions[j]``;
    features beyond the rotated block pass unchanged."""
    x = np.asarray(x, dtype=np.float64)
    p = check_positions(positions)
    if x.ndim < 2 or x.shape[-1] != head_dim or x.shape[-2] != p.size:
        raise ValueError(f"x must have shape (..., {p.size}, {head_dim}), got {x.shape}")
    columns = columns_for(conv, head_dim, layout)
    cos, sin = cache(p, conv, head_dim, seq_len)
    xa, xb = x[..., columns.a], x[..., columns.b]
    out = x.copy()
    out[..., columns.a] = xa * cos - xb * sin
    out[..., columns.b] = xb * cos + xa * sin
    return out


def apply_with_table(x, positions, conv: RopeConvention, head_dim: int, layout: str, table_layout: str,
                     seq_len=None) -> np.ndarray:
    """``x`` rotated by an apply that pairs features as ``layout`` while its cos and sin are
    laid out as ``table_layout`` (:func:`expand`): ``x cos + rotate(x) sin`` with each
    feature's own column of the table. With the two layouts equal this is :func:`apply`; with
    them different it is no rotation (a pair's two features turn by different angles), the
    value a rotate-half apply computes from interleaved cos and sin, or the converse."""
    x = np.asarray(x, dtype=np.float64)
    p = check_positions(positions)
    columns = columns_for(conv, head_dim, layout)
    block = np.sort(np.concatenate([columns.a, columns.b]))
    cos, sin = np.zeros((p.size, head_dim)), np.zeros((p.size, head_dim))
    compact_cos, compact_sin = cache(p, conv, head_dim, seq_len)
    cos[:, block], sin[:, block] = expand(compact_cos, table_layout), expand(compact_sin, table_layout)
    xa, xb = x[..., columns.a], x[..., columns.b]
    out = x.copy()
    out[..., columns.a] = xa * cos[:, columns.a] - xb * sin[:, columns.a]
    out[..., columns.b] = xb * cos[:, columns.b] + xa * sin[:, columns.b]
    return out

# -- exact values (mpmath) ----------------------------------------------------------


def _exact_scale(conv: RopeConvention):
    factor = conv.param("factor")
    if factor is not None:
        return mpmath.mpf(factor)
    if conv.rope_type in ("yarn", "longrope"):
        return mpmath.mpf(conv.max_position_embeddings) / conv.param("original_max_position_embeddings")
    return mpmath.mpf(1)


def _exact_attention_factor(conv: RopeConvention, s):
    if conv.param("attention_factor") is not None:
        return mpmath.mpf(conv.param("attention_factor"))
    if conv.rope_type == "longrope":
        return mpmath.sqrt(1 + mpmath.log(s) / mpmath.log(conv.param("original_max_position_embeddings"))) \
            if s > 1 else mpmath.mpf(1)
    if conv.rope_type != "yarn":
        return mpmath.mpf(1)

    def g(m):
        return mpmath.mpf("0.1") * mpmath.mpf(m) * mpmath.log(s) + 1 if s > 1 else mpmath.mpf(1)

    mscale, mscale_all_dim = conv.param("mscale"), conv.param("mscale_all_dim")
    return g(mscale) / g(mscale_all_dim) if mscale and mscale_all_dim else g(1)


def _exact_yarn_ramp(conv: RopeConvention, r: int, pairs: int):
    l0, theta = conv.param("original_max_position_embeddings"), mpmath.mpf(conv.theta)

    def correction(beta):
        return r * mpmath.log(l0 / (2 * mpmath.pi * mpmath.mpf(beta))) / (2 * mpmath.log(theta))

    low, high = correction(conv.param("beta_fast", 32)), correction(conv.param("beta_slow", 1))
    if conv.param("truncate", True):
        low, high = mpmath.floor(low), mpmath.ceil(high)
    low, high = max(low, 0), min(high, r - 1)
    if low == high:
        high += mpmath.mpf("0.001")
    return [min(max((i - low) / (high - low), 0), 1) for i in range(pairs)]


def exact_frequencies_mp(conv: RopeConvention, head_dim: int, seq_len=None):
    """``(f', A)`` as mpmath numbers at the working precision (see :func:`exact_frequencies`)."""
    r, pairs, rotated = conv.rotary_dim_for(head_dim), conv.num_pairs(head_dim), conv.rotated_pairs(head_dim)
    kind, s, theta = conv.rope_type, _exact_scale(conv), mpmath.mpf(conv.theta)
    if kind == "dynamic":
        if r <= 2:
            raise ValueError(f"dynamic needs a rotary size > 2 (its exponent is r/(r-2)), got {r}")
        l0 = conv.original_length()
        longest = max(seq_len or l0, l0)
        theta = theta * (s * longest / l0 - (s - 1)) ** (mpmath.mpf(r) / (r - 2))
    f = [theta ** (-mpmath.mpf(2 * i) / r) for i in range(rotated)]
    if kind in ("linear", "proportional"):
        f = [value / s for value in f] + [mpmath.mpf(0)] * (pairs - rotated)
    elif kind == "llama3":
        l0, low_ff, high_ff = (mpmath.mpf(conv.param(name)) for name in
                               ("original_max_position_embeddings", "low_freq_factor", "high_freq_factor"))
        scaled = []
        for value in f:
            wavelength = 2 * mpmath.pi / value
            smooth = (l0 / wavelength - low_ff) / (high_ff - low_ff)
            scaled.append(value if wavelength < l0 / high_ff else value / s if wavelength > l0 / low_ff
                          else (1 - smooth) * value / s + smooth * value)
        f = scaled
    elif kind == "longrope":
        f = [value / mpmath.mpf(ext) for value, ext in zip(f, conv.longrope_factors(head_dim, seq_len), strict=True)]
    elif kind == "yarn":
        f = [value * (1 - ramp) + value / s * ramp for value, ramp in zip(f, _exact_yarn_ramp(conv, r, pairs),
                                                                          strict=True)]
    return f, _exact_attention_factor(conv, s)


def exact_frequencies(conv: RopeConvention, head_dim: int, seq_len=None) -> tuple[np.ndarray, float]:
    """``(f', A)`` from the formulas at 40 digits, each rounded once to float64.

    Every input enters as its exact binary value; the decimal constants of the formulas
    (yarn's 0.1 and 0.001) as the decimals they are. No library RoPE code is called.
    """
    with mpmath.workdps(EXACT_DIGITS):
        f, attention_factor = exact_frequencies_mp(conv, head_dim, seq_len)
        return np.array([float(value) for value in f]), float(attention_factor)


def exact_cache_values(positions, pair_indices, conv: RopeConvention, head_dim: int,
                       seq_len=None) -> tuple[np.ndarray, np.ndarray]:
    """Correctly rounded float64 ``(cos, sin)`` (times ``A`` in-cache) at ``positions`` x
    ``pair_indices``; ``seq_len`` defaults to ``max(positions) + 1``."""
    p = check_positions(positions)
    pair_indices = np.asarray(pair_indices, dtype=np.int64)
    cos, sin = np.empty((p.size, pair_indices.size)), np.empty((p.size, pair_indices.size))
    with mpmath.workdps(EXACT_DIGITS):
        f, attention_factor = exact_frequencies_mp(conv, head_dim, call_length(p, seq_len))
        factor = conv.cache_factor(attention_factor)  # A itself (an mpf, exact) in-cache, else 1
        for row, position in enumerate(p):
            for column, pair in enumerate(pair_indices):
                angle = int(position) * f[pair]
                cos[row, column] = float(factor * mpmath.cos(angle))
                sin[row, column] = float(factor * mpmath.sin(angle))
    return cos, sin
