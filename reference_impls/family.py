"""Every member of the family by convention: the function later code calls instead of
writing the formula again."""

import numpy as np

from posenc_spec import oracle
from posenc_spec.conventions import Convention, UndefinedWidthError, get_convention

__all__ = ["sinusoidal_encoding", "UndefinedWidthError"]


def sinusoidal_encoding(positions, width: int, convention: str | Convention = "vaswani",
                        dtype=np.float64, **overrides) -> np.ndarray:
    """The table of ``convention`` (a preset name or a Convention, fields overridden by
    keyword) for ``positions`` (an int n for 0 .. n-1, or a 1-D array of positions or
    timesteps), computed in float64 and rounded once to ``dtype`` (a NumPy dtype)::

        theta[p, k] = scale * (p + offset) * base ** -(k / (h - freq_shift))
        columns     = first/second(theta) interleaved or concatenated, as the layout says

    Odd widths follow the convention's ``odd``; ``UndefinedWidthError`` (a ValueError)
    when the convention has no value at that width.
    """
    conv = get_convention(convention, **overrides)
    return oracle.table(positions, width, conv).astype(dtype)
