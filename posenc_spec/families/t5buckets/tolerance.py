"""Where a correct implementation may land in a neighbouring bucket: the band, derived.

Real code does not compare powers: it computes the logarithmic position
``v = L ln(n/E) / ln(M/E)`` in floating point and truncates it (``.to(torch.long)``,
``astype(int32)``, ``as i32``). Where the exact ``v`` lies within the computation's rounding
of an integer ``k``, a correct float implementation may give bucket ``E + k - 1`` or
``E + k``; everywhere else it gives the exact bucket, and so must every implementation the
gate passes. The band is one number per distance, ``delta(n)``: the largest error of the
computed ``v``; a bucket is accepted when it lies between the buckets of ``v - delta`` and
``v + delta`` (``v`` being the float64 oracle's, whose own bound is added). It is zero
width wherever ``v`` is farther than ``delta`` from an integer: at T5's settings
(``M / E`` a power of two) every distance but three. There, ``v`` is *exactly* an integer at
distances 16, 32 and 64 (bidirectional: ``v = 2 log2(n/8)`` = 2, 4, 6) and the band admits
the bucket below too: float32 code lands on ``2.0``, ``4.0`` and ``6.0`` exactly on this
machine, but ``fl(ln 8) / fl(ln 16)`` need not be ``0.75`` where the logarithm is off by an
ulp. Causal T5 (``M / E = 8``, ``L = 16``) has no such distance below the saturating one.

The computation, as real code has it (u: the unit roundoff of the dtype the logarithm is
taken in):

1. the distance converted to that dtype: exact up to ``1/u`` (``2**24`` in float32), else a
   relative error ``u``: ``a_n = 0`` or 1;
2. ``n / E``: ``u`` relative; an implementation may add the dtype's epsilon (``2u``) to keep
   the logarithm off zero, as T5X does: ``2u`` relative more (the quotient is at least 1). So
   the argument is ``(n/E)(1 + alpha)``, ``|alpha| <= (a_n + 3) u``;
3. the logarithm: at most 4 ulp (``8u`` relative) of its value ``ln(n/E) = v l / L``, plus the
   argument's error, ``|alpha|``, absolute: ``eta = 8u v l / L + |alpha|``, with ``l = ln(M/E)``;
4. ``l`` itself: from a float64 ``math.log`` rounded to the dtype (``u``), or computed in the
   dtype (candle, numpy float32): ``M/E`` rounded (``u`` absolute in the log) and 4 ulp:
   ``gamma = 9u + u / l`` relative covers both;
5. the quotient and the product by ``L``: ``u`` each, relative;
6. where ``E`` is added before truncating (WavLM, ProphetNet): ``u (E + v)`` absolute.

So the computed ``w`` has ``|w - v| <= delta(n)``, the first-order sum times ``1 + 2S``, where
``S = |alpha| + 11u + gamma`` sums the relative errors multiplied together (for ``S <= 1/2`` a
product of factors ``1 + e_i`` is within ``S (1 + 2S)`` of 1)::

    delta(n) = (1 + 2S) * ( (L / l) * eta + v * (gamma + 2u) + u * (E + v) )

The truncation of ``w >= 0`` (the argument is at least 1, so ``w`` is never negative) then
lands in ``[floor(max(v - delta, 0)), floor(v + delta)]``, clamped to ``L - 1``. Distances
below ``E`` are compared as integers (``n < max_exact``) and have no band.

The dtypes: float32 (the default: every real implementation takes the logarithm in
float32; :data:`DEFAULT_LOG_DTYPE`), float64, and float16 for code that declares it. The
float16 band is wide: at ``n = M``, 0.09 of a bucket at T5's encoder settings and 0.18 at
its decoder's, and beyond half a bucket at WavLM's (0.91) and CPM-Ant's (1.4), where it is
refused (:func:`check_band`); it is defined only for ``max_distance`` up to float16's largest
finite value, 65504, beyond which the conversion overflows (a float16 path must saturate
first, and its buckets there are held exact). bfloat16 is refused: with 8 bits ``delta``
approaches a whole bucket even at T5's settings (0.83 at ``n = M``), and no bucket would be
decided. A float16 logarithm judged against the float32 band is the slip it is
(``meta_tests/corpus/t5buckets_wrong.py``).

Measured (``spec_tests/families/t5buckets/test_tolerance.py``, every distance up to ``4M``):
transformers' float32 ``w`` reaches 0.07 of ``delta`` at T5's settings and 0.14 at WavLM's;
the form that adds ``E`` first 0.37; T5X's, whose epsilon is a bias rather than a rounding,
0.50. The float64 oracle's ``v`` stays below 0.16 of its own bound.
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.tolerance import unit_roundoff

from . import oracle
from .conventions import BucketConvention

DEFAULT_LOG_DTYPE = "float32"
LOG_DTYPES = ("float64", "float32", "float16")
FLOAT16_MAX = 65504.0
REFUSED = {"bfloat16": "bfloat16's 8-bit significand cannot place a logarithmic bucket: its band spans "
                        "most of a bucket"}


def log_dtype_name(log_dtype) -> str:
    """``float32`` for ``np.float32``, ``torch.float32`` or ``"float32"``; a ``ValueError`` naming
    the choices for any dtype the band is not defined for."""
    name = str(log_dtype).removeprefix("torch.")
    if name not in LOG_DTYPES and name not in REFUSED:
        try:
            name = np.dtype(log_dtype).name
        except TypeError:
            pass
    if name in REFUSED:
        raise ValueError(f"log_dtype {name}: {REFUSED[name]}; choose one of {', '.join(LOG_DTYPES)}")
    if name not in LOG_DTYPES:
        raise ValueError(f"log_dtype must be one of {', '.join(LOG_DTYPES)}, got {log_dtype!r}")
    return name


def log_position_bound(n, convention: BucketConvention, log_dtype=DEFAULT_LOG_DTYPE) -> np.ndarray:
    """``delta(n)`` of the module docstring for distances ``n >= E`` (float64 array)."""
    name = log_dtype_name(log_dtype)
    u = unit_roundoff(name)
    n = np.asarray(n, dtype=np.float64)
    e, length = convention.max_exact, convention.log_buckets
    ell = math.log(convention.max_distance / e)
    v = np.maximum(oracle.log_position(np.maximum(n, e), convention), 0.0)
    alpha = (np.where(n > 1 / u, 1.0, 0.0) + 3) * u
    eta = 8 * u * v * ell / length + alpha
    gamma = 9 * u + u / ell
    second_order = 1 + 2 * (alpha + 11 * u + gamma)
    delta = second_order * (length / ell * eta + v * (gamma + 2 * u) + u * (e + v))
    if name == "float16":
        if convention.max_distance > FLOAT16_MAX:
            raise ValueError(f"log_dtype float16 holds distances up to {FLOAT16_MAX:g}; max_distance is "
                             f"{convention.max_distance}")
        delta = np.where(n > FLOAT16_MAX, 0.0, delta)  # saturated (n > M): a float16 path must clamp first
    return delta


def check_band(convention: BucketConvention, log_dtype=DEFAULT_LOG_DTYPE) -> str:
    """``log_dtype``'s name, if its band decides between two neighbours at most (``delta < 1/2``
    at ``n = M``, where ``v`` is largest below saturation); a ``ValueError`` saying how wide it is
    otherwise (float16 at WavLM's or CPM-Ant's settings)."""
    name = log_dtype_name(log_dtype)
    widest = float(log_position_bound(convention.max_distance, convention, name))
    if widest >= 0.5:
        raise ValueError(f"log_dtype {name} cannot place the buckets of {convention.name()}: its rounding reaches "
                         f"{widest:.2g} of a bucket at max_distance (below 0.5 decides between two neighbours)")
    return name


def bucket_band(relative_positions, convention: BucketConvention, log_dtype=DEFAULT_LOG_DTYPE):
    """``(low, high)``: the buckets a correct implementation computing its logarithm in
    ``log_dtype`` may return for each relative position (int64 arrays; equal where the band
    is zero width). The float64 oracle's own bound widens the band, so that the exact
    bucket always lies within it."""
    log_dtype = check_band(convention, log_dtype)
    n, first = oracle.distances(relative_positions, convention)
    e, length = convention.max_exact, convention.log_buckets
    small = n < e
    v = oracle.log_position(n, convention)
    width = log_position_bound(n, convention, log_dtype) + log_position_bound(n, convention, "float64")
    last = length - 1
    with np.errstate(invalid="ignore"):
        low = np.minimum(np.floor(np.maximum(v - width, 0.0)), last)
        high = np.minimum(np.floor(v + width), last)
    low = np.where(small, n.astype(np.float64), e + low)
    high = np.where(small, n.astype(np.float64), e + high)
    return first + low.astype(np.int64), first + high.astype(np.int64)
