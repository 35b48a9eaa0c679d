"""Seed 004's loop over dimension pairs, in float64."""

import numpy as np

from posenc_spec.families.sinusoidal.conventions import check_base, check_even_width, check_length


def positional_encoding(num_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The paper's table, one pair of columns at a time::

        PE[p, 2i]   = sin(p / base ** (2i / d_model))
        PE[p, 2i+1] = cos(p / base ** (2i / d_model))

    Returns a (num_positions, d_model) float64 array. ``d_model`` must be even, ``base``
    finite, positive and not 1; ``num_positions`` at most ``MAX_POSITIONS``.
    """
    num_positions = check_length(num_positions)
    d_model = check_even_width(d_model)
    base = check_base(base)
    table = np.zeros((num_positions, d_model))
    position = np.arange(num_positions, dtype=np.float64)
    for i in range(0, d_model, 2):  # i is 2k: the column of the sine
        denominator = base ** (i / d_model)
        table[:, i] = np.sin(position / denominator)
        table[:, i + 1] = np.cos(position / denominator)
    return table
