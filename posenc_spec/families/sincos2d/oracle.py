"""The expected 2-D table: exactly (mpmath) and fast (float64, with a stated error bound).

The table is separable: each element is sin or cos of one axis's angle ``p_axis(i) omega_k``.
Both paths compute each axis's 1-D table once (``L x D/2``, in the declared pairing) and
assemble the ``(H, W, D)`` grid from the two (:func:`assemble`), so the exact path costs
``(H + W) D/2`` mpmath evaluations, not ``H W D``.

:func:`exact_grid` evaluates every angle at 40 significant digits from the exact inputs
(the position parameters and bases as the binary numbers given, ``k / (D/4 - s)`` as an exact
rational) and rounds each value once to float64: the correctly rounded table.

:func:`grid` is the same formula in float64 NumPy. Its error against the exact values is at
most :func:`~posenc_spec.families.sincos2d.tolerance.element_bound` with every dtype float64
(``spec_tests/families/sincos2d/test_oracle.py`` measures it); for a 256 x 256 grid of index
positions that is below 1e-13.
"""

from __future__ import annotations

import mpmath
import numpy as np

from .conventions import Sincos2d

EXACT_DIGITS = 40


def axis_angles(length: int, width: int, conv: Sincos2d, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, x)`` of one axis in float64: ``theta[i, k] = p(i) omega_k`` for its ``length``
    positions and ``D/4`` frequencies, ``x_k = -ln omega_k``."""
    omega = conv.frequencies(width, axis)
    return conv.positions(length)[:, None] * omega[None, :], -np.log(omega)


def axis_values(positions: np.ndarray, width: int, conv: Sincos2d, axis: int) -> tuple[np.ndarray, np.ndarray,
                                                                                       np.ndarray]:
    """``(values, angles, x)`` of one axis's 1-D table ``(L, D/2)`` in float64, in the declared
    pairing and function order, at the given ``positions`` (``x = -ln omega`` of each column)."""
    omega = conv.frequencies(width, axis)
    columns = conv.axis_convention(axis).columns(width // 2)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * omega[None, columns.pair]
    sine = conv.is_sine(columns)
    return np.where(sine[None, :], np.sin(angles), np.cos(angles)), angles, -np.log(omega)[columns.pair]


def axis_table(length: int, width: int, conv: Sincos2d, axis: int) -> np.ndarray:
    """One axis's 1-D table ``(length, D/2)`` in float64, in the declared pairing."""
    return axis_values(conv.positions(length), width, conv, axis)[0]


def assemble(per_axis: tuple[np.ndarray, np.ndarray], width: int, conv: Sincos2d, by_pair: bool = False) -> np.ndarray:
    """The ``(H, W, D)`` grid from the row axis's and the column axis's per-axis arrays:
    ``(L, D/2)`` 1-D tables, or ``(L, D/4)`` per-pair arrays when ``by_pair`` (angles, for the bound)."""
    columns = conv.columns(width)
    height, grid_width = per_axis[0].shape[0], per_axis[1].shape[0]
    out = np.empty((height, grid_width, width), dtype=np.result_type(*per_axis))
    pick = columns.pair if by_pair else columns.half_column
    for axis, values in enumerate(per_axis):
        where = np.flatnonzero(columns.axis == axis)
        chosen = values[:, pick[where]]
        out[:, :, where] = chosen[:, None, :] if axis == 0 else chosen[None, :, :]
    return out


def grid(height: int, width: int, dim: int, conv: Sincos2d) -> np.ndarray:
    """The ``(H, W, D)`` grid in float64: ``grid[r, c]`` is the embedding of row ``r``, column ``c``."""
    height, width = conv.check_grid(height, width)
    return assemble((axis_table(height, dim, conv, 0), axis_table(width, dim, conv, 1)), dim, conv)


def table(height: int, width: int, dim: int, conv: Sincos2d) -> np.ndarray:
    """The table in the declared output layout (tokens with the extra rows, channels first, or the grid)."""
    return conv.arrange(grid(height, width, dim, conv))


def angle_grid(height: int, width: int, dim: int, conv: Sincos2d) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, x)``: the ``(H, W, D)`` angles in float64 and each column's ``x = -ln omega``, for the bound."""
    height, width = conv.check_grid(height, width)
    (row_theta, row_x), (col_theta, col_x) = axis_angles(height, dim, conv, 0), axis_angles(width, dim, conv, 1)
    columns = conv.columns(dim)
    return (assemble((row_theta, col_theta), dim, conv, by_pair=True),
            np.where(columns.axis == 0, row_x[columns.pair], col_x[columns.pair]))


def exact_axis_table(length: int, width: int, conv: Sincos2d, axis: int) -> np.ndarray:
    """One axis's 1-D table ``(length, D/2)``, each value correctly rounded to float64."""
    half = conv.check_width(width) // 2
    one_d = conv.axis_convention(axis)
    numerator, denominator = one_d.exponent_step(half)
    columns = one_d.columns(half)
    out = np.empty((length, half))
    with mpmath.workdps(EXACT_DIGITS):
        base = mpmath.mpf(conv.axis_base(axis))
        omega = [base ** (-mpmath.mpf(numerator * k) / denominator) for k in range(half // 2)]
        sine = conv.is_sine(columns)
        for i, p in enumerate(conv.exact_positions(length, mpmath)):
            for j in range(half):
                angle = p * omega[columns.pair[j]]
                out[i, j] = float(mpmath.sin(angle) if sine[j] else mpmath.cos(angle))
    return out


def exact_grid(height: int, width: int, dim: int, conv: Sincos2d) -> np.ndarray:
    """The correctly rounded ``(H, W, D)`` grid (see the module docstring)."""
    height, width = conv.check_grid(height, width)
    return assemble((exact_axis_table(height, dim, conv, 0), exact_axis_table(width, dim, conv, 1)), dim, conv)


def exact_table(height: int, width: int, dim: int, conv: Sincos2d) -> np.ndarray:
    """:func:`exact_grid` in the declared output layout."""
    return conv.arrange(exact_grid(height, width, dim, conv))
