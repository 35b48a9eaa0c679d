"""How far a correct table may be from the exact one: one bound per element.

Notation: ``u(dtype)`` is the unit roundoff (half the spacing of floats just above 1:
2**-53 float64, 2**-24 float32, 2**-11 float16, 2**-8 bfloat16). For an element with
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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import oracle
from .conventions import Convention, get_convention

DEFAULT_ANGLE_DTYPE = "float32"

_UNIT_ROUNDOFF = {
    "float64": 2.0**-53,
    "float32": 2.0**-24,
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
}


def dtype_name(dtype) -> str:
    """``'float32'`` for np.float32, torch.float32, 'float32', np.dtype('float32') alike."""
    name = str(dtype).removeprefix("torch.")
    if name not in _UNIT_ROUNDOFF:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            pass
    if name not in _UNIT_ROUNDOFF:
        raise ValueError(f"no tolerance is defined for dtype {dtype!r}; "
                         f"floating dtypes only: {', '.join(_UNIT_ROUNDOFF)}")
    return name


def unit_roundoff(dtype) -> float:
    return _UNIT_ROUNDOFF[dtype_name(dtype)]


def angle_term(theta, log_omega) -> np.ndarray:
    """``(2 |x_k| + 5) |theta| + 4``: the part of the bound that the precisions multiply."""
    term = np.abs(theta)
    term *= 2 * np.abs(log_omega) + 5
    term += 4
    return term


def tolerance_from_term(term, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE, oracle_bound: bool = True) -> np.ndarray:
    """``u_a * term + u_o``, plus the float64 oracle's own bound (the same with float64
    precisions) unless ``oracle_bound`` is False."""
    u_a, u_o = unit_roundoff(angle_dtype), unit_roundoff(out_dtype)
    if oracle_bound:
        u_a, u_o = u_a + _UNIT_ROUNDOFF["float64"], u_o + _UNIT_ROUNDOFF["float64"]
    return u_a * term + u_o


def element_tolerance(theta, log_omega, out_dtype, angle_dtype=DEFAULT_ANGLE_DTYPE) -> np.ndarray:
    """The bound of the module docstring, broadcast over ``theta`` (rows x columns)."""
    return tolerance_from_term(angle_term(theta, log_omega), out_dtype, angle_dtype, oracle_bound=False)


def table_tolerance(positions, width: int, convention: str | Convention, out_dtype,
                    angle_dtype=DEFAULT_ANGLE_DTYPE, degenerate_limit=False) -> np.ndarray:
    """The bound for every element of a table, plus the float64 oracle's own bound."""
    theta, log_omega = oracle.angles(positions, width, get_convention(convention), degenerate_limit)
    return tolerance_from_term(angle_term(theta, log_omega), out_dtype, angle_dtype)


@dataclass(frozen=True)
class Comparison:
    """``actual`` against ``expected`` element by element; ``ok`` when every error is within
    bound. The ``worst_*`` fields all describe one element, the one with the largest
    error/tolerance ratio; ``max_error`` is the largest error anywhere (another element,
    when a small bound makes a smaller error the worse one)."""

    max_ratio: float  # max of error / tolerance; <= 1 passes
    worst_index: tuple
    worst_actual: float
    worst_expected: float
    worst_error: float
    worst_tolerance: float
    max_error: float
    num_failing: int
    shape: tuple

    @property
    def ok(self) -> bool:
        return self.max_ratio <= 1.0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 0

    def describe(self) -> str:
        if self.size == 0:
            return "empty table"
        where = ", ".join(str(i) for i in self.worst_index)
        return (
            f"{self.num_failing} of {self.size} elements out of bound; worst at [{where}]: "
            f"got {self.worst_actual:.9g}, expected {self.worst_expected:.9g}, "
            f"error {self.worst_error:.3g} vs tolerance {self.worst_tolerance:.3g} (ratio {self.max_ratio:.3g})"
        )


def ratios(error: np.ndarray, tolerance) -> np.ndarray:
    """``error / tolerance`` with the rules every comparison shares: NaN errors are infinite,
    and a zero bound admits only a zero error (0/0 is ratio 0). ``error`` is overwritten."""
    nan = np.isnan(error)
    if nan.any():
        error[nan] = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.divide(error, tolerance)
    undefined = np.isnan(ratio)
    if undefined.any():
        ratio[undefined] = 0.0
    return ratio


def compare(actual, expected, tolerance) -> Comparison:
    """Element-wise comparison; NaN counts as an infinite error."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), expected.shape)
    if actual.shape != expected.shape:
        raise ValueError(f"shape {actual.shape} differs from the expected {expected.shape}")
    if actual.size == 0:
        return Comparison(0.0, (), np.nan, np.nan, 0.0, np.nan, 0.0, 0, actual.shape)
    # In place: the gate compares 4096 x 1024 tables per target.
    error = np.subtract(actual, expected)
    np.abs(error, out=error)
    ratio = ratios(error, tolerance)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return Comparison(
        max_ratio=float(ratio[worst]),
        worst_index=tuple(int(i) for i in worst),
        worst_actual=float(actual[worst]),
        worst_expected=float(expected[worst]),
        worst_error=float(error[worst]),
        worst_tolerance=float(tolerance[worst]),
        max_error=float(error.max()),
        num_failing=int(np.count_nonzero(ratio > 1.0)),
        shape=tuple(actual.shape),
    )
