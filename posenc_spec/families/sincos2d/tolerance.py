"""How far a correct 2-D table may be from the exact one: one bound per element.

Notation as in :mod:`posenc_spec.tolerance`: ``u(dtype)`` is the unit roundoff (2**-53
float64, 2**-24 float32, 2**-11 float16, 2**-8 bfloat16). An element is ``sin`` or ``cos``
of ``theta = p * omega_k``, with ``p`` one axis's transformed position and ``x_k = -ln
omega_k = e_k ln(base_axis)``. A correct implementation does its angle arithmetic in
precision ``u_a`` and stores its output in ``u_o``; it makes these errors:

1. forming ``x_k`` (the exponent ``k / (D/4 - s)``, a quotient, times ``ln base``): at most
   ``2 u_a |x_k|`` absolute;
2. ``exp``, or ``base ** e``, to one ulp (``2 u_a``), and the reciprocal or the division
   that turns it into ``omega_k`` or divides by it (``u_a``): ``omega_k`` is off by
   ``(2 |x_k| + 3) u_a`` relative;
3. the position: ``n_p u_a`` relative, ``n_p`` counting the roundings of the transform's
   constants and operations (:data:`POSITION_ROUNDINGS`; integers below 2**24 are exact):

   - ``index``, ``scale * (i + offset)``: offset and scale rounded, a sum, a product: 4;
   - ``relative``, ``i / (L / base_size) / interpolation_scale``: base_size and
     interpolation_scale rounded, a quotient, two divisions: 5;
   - ``crop``, the same with ``M`` for ``L`` after adding the crop's integer offset: 6;
   - ``normalized``, ``(i + 1 + offset) / (L + eps) * scale``: offset, eps and scale
     rounded, two sums, a quotient, a product: 7;

4. ``p * omega_k``: ``u_a``;

   so the angle is off by at most ``(2 |x_k| + 4 + n_p) u_a |theta|``, which sin and cos,
   being 1-Lipschitz, pass to the value unchanged;
5. evaluating sin or cos: at most 2 ulp of a value of size at most 1, ``4 u_a``;
6. rounding the value to the output dtype: ``u_o``.

    tolerance = u_a ((2 |x_k| + 4 + n_p) |theta| + 4) + u_o

An extra token's row is zero in every dtype: its bound is 0. Every bound adds the float64
oracle's own, the same formula with both precisions float64. ``u_a`` is float32's by
default whatever the output dtype (correct code forms the angle in float32 or float64 and
rounds once to float16 or bfloat16); float16 or bfloat16 angle arithmetic is not correct
code: DETR's normalized angles reach 2 pi, where one float16 rounding is off by 3e-3.

At a 256 x 256 grid of index positions the float32 bound of the highest frequency is about
1.2e-4 at the last row; correct float32 tables measure 0.12 to 0.35 of their bound
(``spec_tests/families/sincos2d/test_tolerance.py`` lists the ratios). In float16 and
bfloat16 the output rounding dominates (about 4.9e-4 and 3.9e-3): correct tables measure
half of it, and the same code computed in float16 or bfloat16 three to five times it.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.tolerance import unit_roundoff

from . import oracle
from .conventions import Sincos2d

DEFAULT_ANGLE_DTYPE = "float32"
POSITION_ROUNDINGS = {"index": 4, "relative": 5, "crop": 6, "normalized": 7}
OMEGA_ROUNDINGS = 3  # term 2: exp or pow to one ulp (2), a reciprocal or division (1)
PRODUCT_ROUNDINGS = 1  # term 4
FUNCTION_ROUNDINGS = 4  # term 5: 2 ulp of sin or cos


def angle_bound(theta, x, position: str, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """The bound of the module docstring for values at angles ``theta`` of frequencies
    ``omega = exp(-x)``, positions formed by the ``position`` transform."""
    relative = 2 * np.abs(x) + OMEGA_ROUNDINGS + PRODUCT_ROUNDINGS + POSITION_ROUNDINGS[position]
    return unit_roundoff(angle_dtype) * (relative * np.abs(theta) + FUNCTION_ROUNDINGS) + unit_roundoff(out_dtype)


def element_bound(height: int, width: int, dim: int, conv: Sincos2d, out_dtype,
                  angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """The bound of the module docstring for every element of the ``(H, W, D)`` grid, alone
    (with both dtypes float64 it is the float64 oracle's own bound)."""
    theta, x = oracle.angle_grid(height, width, dim, conv)
    return angle_bound(theta, x, conv.position, out_dtype, angle_dtype)


def grid_tolerance(height: int, width: int, dim: int, conv: Sincos2d, out_dtype,
                   angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """The ``(H, W, D)`` bound a correct table computed in these dtypes meets, plus the float64 oracle's."""
    return (element_bound(height, width, dim, conv, out_dtype, angle_dtype)
            + element_bound(height, width, dim, conv, "float64", "float64"))


def table_tolerance(height: int, width: int, dim: int, conv: Sincos2d, out_dtype,
                    angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """:func:`grid_tolerance` in the declared output layout; 0 on the extra tokens' rows."""
    return conv.arrange(grid_tolerance(height, width, dim, conv, out_dtype, angle_dtype))
