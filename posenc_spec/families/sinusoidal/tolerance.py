"""How far a correct sinusoidal table may be from the exact one: one bound per element.

Notation: ``u(dtype)`` is the unit roundoff (:func:`posenc_spec.tolerance.unit_roundoff`). For an element with
exact angle ``theta = scale * (p + offset) * omega_k`` and ``x_k = -ln omega_k =
e_k * ln(base)``, a correct implementation whose angle arithmetic is done in precision
``u_a`` and whose output is stored in precision ``u_o`` makes these errors:

1. forming ``x_k`` (a product and a quotient): at most ``2 u_a |x_k|`` absolute;
2. ``exp`` or ``pow`` to get ``omega_k``: that error becomes relative, plus one ulp
   (``2 u_a``): ``|d omega / omega| <= (2 |x_k| + 2) u_a``;
3. ``p + offset``, ``* scale``, ``* omega_k``: three roundings, ``3 u_a`` relative;

   so the angle is off by at most ``(2 |x_k| + 5) u_a |theta|``, and sin and cos, being
   1-Lipschitz, pass that to the value unchanged;
4. evaluating sin or cos of the rounded angle: at most 2 ulp of a value of size <= 1,
   ``4 u_a``;
5. rounding the value to the output dtype: at most ``u_o``.

    tolerance = u_a * ((2 |x_k| + 5) |theta| + 4) + u_o

The bound grows with each element's own angle: one bound per table, taken from its
largest angle, would be so loose at small angles that a float16 table computed in float16
arithmetic passes it. ``u_a`` is float32's by default whatever the output dtype, because
correct code commonly forms the angle in float32 even when it returns float64 (or
float16); pass ``angle_dtype=float64`` for a strict float64 check. Angle arithmetic in
float16 or bfloat16 is not correct code: above a few hundred positions it misplaces whole
periods.

At L = 8192 the bound is about 2.5e-3 for the highest frequency in float32; correct
float32 tables measure up to about 5e-4 there. At L = 2, hard-coding ``ln(10000)`` as
9.21 is off by about 1e-5 where the bound is below 5e-7.

A module that adds its table to ``x`` (``x + pe``, the ``adds-to-x`` signature) is judged
on what it adds: ``out - x``, taken exactly in float64, against the table. Beside the
table's own bound, the sum is rounded once to the output dtype, an error of at most
``u_o |x + pe|`` (:func:`addition_bound`); the table itself may be rounded to the output
dtype before the sum, which the table's bound already holds.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import Convention, get_convention
from posenc_spec.tolerance import DEFAULT_ANGLE_DTYPE, unit_roundoff


def angle_term(theta, log_omega, out=None) -> np.ndarray:
    """``(2 |x_k| + 5) |theta| + 4``: the part of the bound that the precisions multiply,
    written into ``out`` when given (``out=theta`` for a caller done with the angles)."""
    term = np.abs(theta, out=out)
    term *= 2 * np.abs(log_omega) + 5
    term += 4
    return term


def tolerance_from_term(term, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE, oracle_bound: bool = True,
                        out=None) -> np.ndarray:
    """``u_a * term + u_o``, plus the float64 oracle's own bound (the same with float64
    precisions) unless ``oracle_bound`` is False; written into ``out`` when given
    (``out=term`` for a caller done with the term)."""
    u_a, u_o = unit_roundoff(angle_dtype), unit_roundoff(out_dtype)
    if oracle_bound:
        u_a, u_o = u_a + unit_roundoff("float64"), u_o + unit_roundoff("float64")
    tolerance = np.multiply(term, u_a, out=out)  # then in place: one table-sized array, not two
    tolerance += u_o
    return tolerance


def element_tolerance(theta, log_omega, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """The bound of the module docstring, broadcast over ``theta`` (rows x columns)."""
    return tolerance_from_term(angle_term(theta, log_omega), out_dtype, angle_dtype, oracle_bound=False)


def table_tolerance(positions, width: int, convention: str | Convention, out_dtype,
                    angle_dtype=DEFAULT_ANGLE_DTYPE, degenerate_limit=False) -> np.ndarray:
    """The bound for every element of a table, plus the float64 oracle's own bound."""
    theta, log_omega = oracle.angles(positions, width, get_convention(convention), degenerate_limit)
    return tolerance_from_term(angle_term(theta, log_omega), out_dtype, angle_dtype)


def addition_bound(x, table, out_dtype) -> np.ndarray:
    """The error of storing ``x + table`` in ``out_dtype``: one rounding of the sum."""
    return unit_roundoff(out_dtype) * np.abs(np.asarray(x, np.float64) + np.asarray(table, np.float64))
