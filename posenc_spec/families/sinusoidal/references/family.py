"""Every member of the family by convention: the function later code calls instead of
writing the formula again.

It is the float64 oracle (:func:`posenc_spec.families.sinusoidal.oracle.table`) rounded to a dtype, so tests
must never judge it against that oracle: they compare it with mpmath, closed forms and
the seed references instead.
"""

import numpy as np

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import (
    Convention,
    UndefinedWidthError,
    check_float_dtype,
    check_length,
    get_convention,
)

__all__ = ["sinusoidal_encoding", "UndefinedWidthError"]


def sinusoidal_encoding(positions, width: int, convention: str | Convention = "vaswani",
                        dtype=np.float64, **overrides) -> np.ndarray:
    """The table of ``convention`` (a preset name or a Convention, fields overridden by
    keyword) for ``positions`` (an int n for 0 .. n-1, or a 1-D array of positions or
    timesteps), computed in float64 and rounded once to ``dtype`` (a floating NumPy dtype)::

        theta[p, k] = scale * (p + offset) * base ** -(k / (h - freq_shift))
        columns     = first/second(theta) interleaved or concatenated, as the layout says

    Odd widths follow the convention's ``odd``; ``UndefinedWidthError`` (a ValueError)
    when the convention has no value at that width. A scalar ``positions`` must be an int
    up to ``MAX_POSITIONS``; a ``base`` override a finite real number (the convention
    then requires it above 1).
    """
    if np.ndim(positions) == 0:  # a length: refuse bool, floats and huge NumPy integers by name
        check_length(positions, "positions")
    check_float_dtype(dtype)
    conv = get_convention(convention, **overrides)
    return oracle.table(positions, width, conv).astype(dtype)
