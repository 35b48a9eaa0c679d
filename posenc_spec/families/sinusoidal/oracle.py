"""The expected table: exactly (mpmath) and fast (float64, with a stated error bound).

:func:`exact_values` evaluates the formula at 40 significant digits and rounds once to
float64, so its results are the correctly rounded values (for |values| far from 0 the
float64 spacing, 2**-53 relative, is the only error). It is slow: a few thousand
elements a second.

:func:`table` is the same formula in float64 NumPy (:func:`table_from_angles` of
:func:`angles`, for a caller that needs the angles too). Its error against the exact values is
at most :func:`posenc_spec.families.sinusoidal.tolerance.element_tolerance` with ``angle_dtype=float64``
and ``out_dtype=float64`` (``spec_tests/families/sinusoidal/test_oracle.py`` measures it against mpmath); at
L = 8192 that is a few 1e-12, far below any tolerance a float32 table is held to.
"""

from __future__ import annotations

import mpmath
import numpy as np

from posenc_spec.families.sinusoidal.conventions import Columns, Convention, get_convention

EXACT_DIGITS = 40


def angles(positions, width: int, convention: str | Convention = "vaswani", degenerate_limit=False):
    """``theta`` of every element (0 in a zero-padded column) and ``x = -ln omega`` per column."""
    conv = get_convention(convention)
    p = conv.positions(positions)
    columns = conv.columns(width)
    omega = conv.frequencies(width, degenerate_limit)
    column_omega = np.where(columns.is_zero, 0.0, omega[columns.pair])
    theta = conv.scale * (p + conv.offset)[:, None] * column_omega[None, :]
    log_omega = np.where(columns.is_zero, 0.0, -np.log(np.where(columns.is_zero, 1.0, column_omega)))
    return theta, log_omega


def table(positions, width: int, convention: str | Convention = "vaswani", degenerate_limit=False) -> np.ndarray:
    """The (len(positions), width) table in float64.

    ``positions`` is an int n (rows for positions 0 .. n-1, before the convention's
    offset) or a 1-D array of positions or timesteps::

        theta[p, j] = scale * (p + offset) * base ** -e_k       k = the pair of column j
        table[p, j] = first(theta) or second(theta), or 0 in a zero-padded column
    """
    conv = get_convention(convention)
    theta, _ = angles(positions, width, conv, degenerate_limit)
    return table_from_angles(theta, conv.columns(width), conv.first)


def table_from_angles(theta: np.ndarray, columns: Columns, first: str) -> np.ndarray:
    """The table of the angles ``theta`` (:func:`angles`): ``first(theta)`` in the columns
    ``columns`` says hold it, the other function in their partners, 0 in a zero-padded
    column. ``theta`` is only read, so that it can serve the tolerance as well."""
    sin_columns = (columns.is_first == (first == "sin")) & ~columns.is_zero
    cos_columns = ~sin_columns & ~columns.is_zero
    values = np.empty_like(theta)
    values[:, columns.is_zero] = 0.0
    for function, chosen in ((np.sin, sin_columns), (np.cos, cos_columns)):
        where = _as_slice(np.flatnonzero(chosen))
        if isinstance(where, slice):  # views of both: the values go straight into the table
            function(theta[:, where], out=values[:, where])
        else:
            values[:, where] = function(theta[:, where])
    return values


def _as_slice(indices: np.ndarray):
    """``indices`` as a slice when they are evenly spaced (every layout's are), else as they are."""
    if indices.size > 1 and np.all(np.diff(indices) == indices[1] - indices[0]):
        return slice(int(indices[0]), int(indices[-1]) + 1, int(indices[1] - indices[0]))
    return slice(int(indices[0]), int(indices[0]) + 1) if indices.size == 1 else indices


def exact_values(positions, width: int, convention: str | Convention = "vaswani", columns=None,
                 degenerate_limit=False) -> np.ndarray:
    """The correctly rounded float64 values at ``positions`` x ``columns`` (all columns by default).

    Every quantity is formed from the exact inputs: ``e_k`` as the exact rational
    ``k/(h-s)`` (or ``2k/d``), the base, offset, scale and positions as the exact binary
    values given.
    """
    conv = get_convention(convention)
    p = conv.positions(positions)
    layout = conv.columns(width)
    numerator, denominator = conv.exponent_step(width, degenerate_limit)
    column_index = np.arange(width) if columns is None else np.asarray(columns)
    out = np.empty((p.size, column_index.size))
    with mpmath.workdps(EXACT_DIGITS):
        base, scale, offset = mpmath.mpf(conv.base), mpmath.mpf(conv.scale), mpmath.mpf(conv.offset)
        omega = [base ** (-mpmath.mpf(numerator * k) / denominator) for k in range(conv.num_frequencies(width))]
        for jj, j in enumerate(column_index):
            k = layout.pair[j]
            if k < 0:
                out[:, jj] = 0.0
                continue
            use_sin = bool(layout.is_first[j]) == (conv.first == "sin")
            function = mpmath.sin if use_sin else mpmath.cos
            for i, position in enumerate(p):
                out[i, jj] = float(function(scale * (mpmath.mpf(float(position)) + offset) * omega[k]))
    return out
