"""How far correct ALiBi slopes and biases may be from the exact ones: one bound per element.

Notation as in :mod:`posenc_spec.tolerance`: ``u(dtype)`` is the unit roundoff (2**-53
float64, 2**-24 float32, 2**-11 float16, 2**-8 bfloat16). A slope is ``m = 2 ** -e`` with
``e`` rational, and ``m = r ** a`` for the finest ratio ``r`` of its rule and an integer
power ``a`` (:mod:`.conventions`). Correct code forms slopes in float32 or wider (``u_s``:
float32's unless the convention's ``bias_dtype`` is float64) and the bias in the compute
dtype (``u_c``: ``bias_dtype``, float32 when undeclared), and stores it in ``u_o``.

Slopes
------

Correct code builds ``m`` in one of three ways; each one's relative error, to first order:

S1. a power of a rounded ratio, ``pow(r^, a)`` (BLOOM, Falcon, labml): ``r`` rounded is off
    by ``u_s`` (plus ``2 u_64`` when it comes from a float64 ``pow`` first), and raising it
    to the ``a``-th power multiplies that by ``a``; the ``pow`` itself is within one ulp,
    ``2 u_s``: ``(a + 2) u_s``.
S2. repeated products, ``start * ratio ** i`` or a cumulative product (the paper's code,
    x-transformers, keras-hub): ``a u_s`` from the rounded ratio and up to ``a - 1``
    roundings of the products: ``(2a - 1) u_s``.
S3. ``exp2(-e)``, ``1 / pow(2, e)`` or ``exp(-e ln 2)`` of a computed exponent (MPT, flex
    attention's ``exp2(-(h + 1) * 8 / H)``): ``e`` is a product and a quotient, off by
    ``2 u_s e``, which the exponential turns into ``2 ln2 e u_s`` relative; the exponential
    (``2 u_s``) and a reciprocal (``u_s``) add ``3 u_s``.

One bound covers all three::

    delta_s = (2 a + 2 ln2 e + 3) u_s

with ``a`` the power of the finest ratio (``2h`` for the first ``P`` heads of a count that is
not a power of two: an idiom may build them from either ratio, and the finer one's power is
the larger). A slope returned by itself in ``u_o`` is within ``m (delta_s + u_o)``. It grows
with the power: BLOOM-176B's 112 heads take powers up to 128 of ``2 ** (-1/16)``, so float32 slopes
are legitimately several ULPs off (transformers' are up to 7.1 ULP off, on head 104, the 81st
power, where the bound is 176 ``u_32`` with the bias's terms below: ratio 0.042; the largest
ratio of the 112 is 0.058).

A slope is worth the biases it makes: a slope returned by itself (``alibi-slopes``) is judged
by the bias it gives at the longest distance ``D`` a model uses (``max_positions - 1`` when
declared, else 8192, a context length models use), formed and stored in float32 (or the declared
``bias_dtype``): its error times ``D`` must be within that bias's bound at ``d = D``
(:func:`slope_tolerance`), whatever dtype it is returned in. Per unit of distance that is
``m (delta_s + 3 u_c + u_o)`` below 2**24 (the terms B1 to B4 at ``q = D``, ``k = 0``), so a
float32 slope passes and a slope rounded to float16 (``2**-11`` relative: 500 times float32's
terms) moves the bias far past it; only a slope float16 holds exactly (``2 ** -h``) passes.

Biases
------

An element is ``m d``, ``d`` the integer distance of the form between key position ``k``
and query position ``q`` (``d = k`` for the ``key`` form: no ``q``):

B1. the slope, rounded to the compute dtype when that is narrower than float32 (Falcon's
    ``slopes.bfloat16()``): ``delta_m = delta_s + u_c`` (``delta_s`` alone otherwise);
B2. the distance: integer arithmetic is exact, and so is an integer's conversion while
    ``|x| <= 1/u_c`` (2**24 float32, 2048 float16, 256 bfloat16); beyond, each position is
    rounded, ``rho(x) = u_c |x|``;
B3. the product, one rounding: ``u_c |m d|``. Correct code may instead subtract two
    products, ``m k - m q`` (a key-only row minus a per-query one): ``u_c (|m k| + |m q|)``
    for the products and ``u_c |m d|`` for the difference;
B4. the store in the output dtype: ``u_o |m d|``.

Summed, with the slope's error scaling the whole distance::

    t_bias = |m| ((delta_m + 2 u_c + u_o) |d| + u_c (|k| + |q|) + rho(k) + rho(q))

On the diagonal (``d = 0``) every correct idiom gives exactly 0 (``m * 0``, ``m k - m k``);
the ``diagonal`` property asks exactly that, where the bound alone would not. A declaration
``up_to_row_constant`` accepts any form ``m (d + c_i)`` whose per-row constant is within the
key span (the key-only forms: ``m q`` or ``m (q - k_last)``; labml's ``m (q + 1)``): its
elements are bounded by the same terms with ``|d|`` and ``|k| + |q|`` replaced by
``S = |q| + max |k| + 1`` (:func:`row_constant_tolerance`). The same bound holds wherever a
check accepts a row constant whatever the declaration (``equivalent``): a zero of the
oracle (``d = 0``) is then no zero of the computation, which rounds ``m (d + c)``, a number
as large as ``m S``; a bound of 0 there would fail a correct shifted bias by one rounding
(labml's ``m (k + 1)`` at key 0 is ``m`` rounded, 2**-53 relative from the oracle's slope).

Float16 and bfloat16 outputs are rounded from float32 arithmetic by correct code; arithmetic
in them is declared (``bias_dtype``) or wrong: a bfloat16 slope is off by up to 2**-9
relative, 2**15 times float32's unit. Every bound adds the float64 oracle's own, the same
terms with every dtype float64 (:func:`oracle_bound`).

Measured (``spec_tests/families/alibi/test_tolerance.py``): float32 slopes of 1 .. 128 heads
up to 0.16 of their bound; 128 heads' biases over 8193 keys 0.12 in float32, 0.43 as a
difference of products, 0.996 stored in float16 or bfloat16 (the store's rounding is then
the bound's main term, and round-to-nearest never exceeds it).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from posenc_spec.tolerance import dtype_name, row_blocks, unit_roundoff

from .conventions import AlibiConvention, get_convention
from .oracle import Positions, distances, slopes

DEFAULT_DTYPE = "float32"
DEFAULT_DISTANCE = 8192  # a context length models use (MPT-7B-8k's)
_NARROW = ("float16", "bfloat16")


def slope_dtype(convention: AlibiConvention) -> str:
    """The dtype correct code forms slopes in: float64 when declared, else float32."""
    return "float64" if convention.bias_dtype == "float64" else DEFAULT_DTYPE


def compute_dtype(convention: AlibiConvention) -> str:
    """The dtype the bias is formed in: the declared one, else float32."""
    return convention.bias_dtype or DEFAULT_DTYPE


def slope_coefficients(num_heads, convention: str | AlibiConvention = "paper") -> np.ndarray:
    """``2 a + 2 ln2 e + 3`` per head: ``delta_s`` in units of ``u_s`` (0 for a head without a bias)."""
    return np.array(_slope_coefficients(int(num_heads), get_convention(convention)))


@functools.lru_cache(maxsize=256)
def _slope_coefficients(num_heads: int, convention: AlibiConvention) -> tuple[float, ...]:
    # Once per head count and convention: every call of a run's grid bounds the same heads
    # (the exponents are exact fractions, slow to turn into floats).
    terms = convention.slope_terms(num_heads)
    coefficients = [2 * term.power + 2 * math.log(2) * float(term.exponent) + 3 for term in terms]
    return tuple(coefficients) + (0.0,) * (num_heads - len(terms))


def slope_error(num_heads, convention: str | AlibiConvention = "paper", dtype=None) -> np.ndarray:
    """``delta_s`` per head, slopes formed in ``dtype`` (default: :func:`slope_dtype`)."""
    conv = get_convention(convention)
    return slope_coefficients(num_heads, conv) * unit_roundoff(dtype or slope_dtype(conv))


def longest_distance(max_positions: int | None) -> int:
    """The longest distance a model uses: ``max_positions - 1`` when declared, else :data:`DEFAULT_DISTANCE`."""
    return DEFAULT_DISTANCE if max_positions is None else max(max_positions - 1, 1)


def slope_tolerance(num_heads, convention: str | AlibiConvention = "paper",
                    distance: int = DEFAULT_DISTANCE) -> np.ndarray:
    """The bound on each slope returned by itself: the bound of the causal bias it makes at
    ``distance`` (query ``distance``, key 0), stored in float32, plus the oracle's own, over
    ``distance``. The slope's own dtype does not widen it: a slope is worth the bias it makes."""
    conv = get_convention(convention).replace(bias_form="causal", bias_region="causal", key_positions="index",
                                              up_to_row_constant=False)
    farthest = Positions(np.array([distance], dtype=np.int64), np.zeros(1, dtype=np.int64), np.ones(1, dtype=bool))
    return bias_tolerance(num_heads, farthest, conv, DEFAULT_DTYPE)[:, 0, 0] / distance


def _rounded(values: np.ndarray, u: float) -> np.ndarray:
    """``rho``: ``u |x|`` where an integer ``x`` is beyond the dtype's exact range, else 0."""
    magnitude = np.abs(values).astype(np.float64)
    return np.where(magnitude > 1 / u, u * magnitude, 0.0)


def _bound_terms(num_heads, positions: Positions, conv: AlibiConvention, out_dtype, slope_u=None, compute_u=None,
                 row_constant=None) -> tuple:
    """:func:`bias_bound`'s factors: ``(per head, |d|, per element, m)`` with the bound
    ``m ((per head) |d| + per element)``."""
    row_constant = conv.up_to_row_constant if row_constant is None else row_constant
    u_s = unit_roundoff(slope_dtype(conv)) if slope_u is None else slope_u
    u_c = unit_roundoff(compute_dtype(conv)) if compute_u is None else compute_u
    u_o = unit_roundoff(out_dtype)
    delta_m = slope_coefficients(num_heads, conv) * u_s
    if compute_u is None and compute_dtype(conv) in _NARROW:
        delta_m = delta_m + u_c
    # The key form's arithmetic holds no query position (d = k).
    q = np.zeros(positions.queries.size) if conv.bias_form == "key" else positions.queries.astype(np.float64)
    k = positions.keys.astype(np.float64)
    if row_constant:
        span = np.broadcast_to(np.abs(q)[:, None] + np.abs(k).max(initial=0.0) + 1.0, positions.shape)
        size, sides, rho = span, span, _rounded(span, u_c)
    else:
        size = np.abs(distances(conv, positions)).astype(np.float64)
        sides = np.abs(q)[:, None] + np.abs(k)[None, :]
        rho = _rounded(q, u_c)[:, None] + _rounded(k, u_c)[None, :]
    # m ((delta_m + 2 u_c + u_o) |d| + u_c (|k| + |q|) + rho)
    return delta_m + 2 * u_c + u_o, size, u_c * sides + rho, np.abs(slopes(num_heads, conv))


def _bound_sum(num_heads, positions: Positions, terms: list[tuple]) -> np.ndarray:
    """The sum of the bounds whose :func:`_bound_terms` are ``terms``, in one array of the
    table's size, made a block of heads at a time (each block's temporaries stay in the
    processor's cache); each element summed in the order of ``terms``."""
    bound = np.empty((num_heads, *positions.shape))
    work = np.empty(0)
    for heads in row_blocks(bound.shape):
        block = bound[heads]
        for index, (per_head, size, per_element, m) in enumerate(terms):
            if index and work.size < block.size:
                work = np.empty(block.size)
            out = block if index == 0 else work[:block.size].reshape(block.shape)
            np.multiply(per_head[heads, None, None], size[None], out=out)
            out += per_element[None]
            out *= m[heads, None, None]
            if index:
                block += out
    return bound


def bias_bound(num_heads, positions: Positions, convention: str | AlibiConvention, out_dtype,
               slope_u=None, compute_u=None, row_constant=None) -> np.ndarray:
    """``t_bias`` alone for every element of the ``(heads, rows, keys)`` bias (unit roundoffs
    ``slope_u`` and ``compute_u`` override the convention's dtypes: float64 for the oracle;
    ``row_constant`` whether a constant per row within the key span is accepted, default
    the convention's ``up_to_row_constant``)."""
    conv = get_convention(convention)
    return _bound_sum(num_heads, positions, [_bound_terms(num_heads, positions, conv, out_dtype, slope_u, compute_u,
                                                          row_constant)])


def _oracle_terms(num_heads, positions: Positions, conv: AlibiConvention, row_constant=None) -> tuple:
    u = unit_roundoff("float64")
    return _bound_terms(num_heads, positions, conv, "float64", slope_u=u, compute_u=u, row_constant=row_constant)


def oracle_bound(num_heads, positions: Positions, convention: str | AlibiConvention, row_constant=None) -> np.ndarray:
    """The float64 oracle's own error: the same terms with every dtype float64."""
    return _bound_sum(num_heads, positions, [_oracle_terms(num_heads, positions, get_convention(convention),
                                                           row_constant)])


def bias_tolerance(num_heads, positions: Positions, convention: str | AlibiConvention = "paper",
                   out_dtype=DEFAULT_DTYPE) -> np.ndarray:
    """The bound for every element of a bias stored in ``out_dtype``, plus the oracle's own."""
    dtype_name(out_dtype)  # refuses a dtype without a tolerance, naming it
    conv = get_convention(convention)
    return _bound_sum(num_heads, positions, [_bound_terms(num_heads, positions, conv, out_dtype),
                                             _oracle_terms(num_heads, positions, conv)])


def row_constant_tolerance(num_heads, positions: Positions, convention: str | AlibiConvention = "paper",
                           out_dtype=DEFAULT_DTYPE) -> np.ndarray:
    """The bound of a bias computed as ``m (d + c)`` with any constant ``c`` per row within the
    key span (the span ``S`` above), plus the oracle's own: what a check that accepts a row
    constant allows, whatever the declaration. Never 0 for a biased head: ``S >= 1``."""
    dtype_name(out_dtype)
    conv = get_convention(convention)
    return _bound_sum(num_heads, positions, [_bound_terms(num_heads, positions, conv, out_dtype, row_constant=True),
                                             _oracle_terms(num_heads, positions, conv, row_constant=True)])
