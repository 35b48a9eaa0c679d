"""Seed 002's vectorised NumPy table, in float64."""

import numpy as np

from posenc_spec.families.sinusoidal.conventions import check_base, check_even_width, check_length


def positional_encoding(num_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The paper's table with the frequencies as ``exp(-2i ln(base) / d_model)``::

        PE[p, 2i]   = sin(p * exp(-2i ln(base) / d_model))
        PE[p, 2i+1] = cos(p * exp(-2i ln(base) / d_model))

    Returns a (num_positions, d_model) float64 array. ``d_model`` must be even, ``base``
    finite, positive and not 1; ``num_positions`` at most ``MAX_POSITIONS``.
    """
    num_positions = check_length(num_positions)
    d_model = check_even_width(d_model)
    base = check_base(base)
    positions = np.arange(num_positions)[:, np.newaxis]
    div_terms = np.exp(np.arange(0, d_model, 2) * -(np.log(base) / d_model))
    table = np.zeros((num_positions, d_model))
    table[:, 0::2] = np.sin(positions * div_terms)
    table[:, 1::2] = np.cos(positions * div_terms)
    return table
