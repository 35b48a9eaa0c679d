"""Seed 000's torch table, in any floating dtype, on any device."""

import math

import torch

from posenc_spec.families.sinusoidal.conventions import check_base, check_even_width, check_float_dtype, check_length


def positional_encoding(num_positions: int, d_model: int, base: float = 10000.0,
                        dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
    """The paper's table as a torch tensor::

        div_term[i]  = exp(-2i ln(base) / d_model)
        PE[p, 2i]    = sin(p * div_term[i])
        PE[p, 2i+1]  = cos(p * div_term[i])

    The angle is formed in float32 (float64 when ``dtype`` is float64) and only the
    result is cast: float16 or bfloat16 arithmetic on the angle would misplace whole
    periods beyond a few hundred positions. ``d_model`` must be even, ``base`` finite,
    positive and not 1, ``dtype`` a floating torch.dtype; ``num_positions`` at most
    ``MAX_POSITIONS``.
    """
    num_positions = check_length(num_positions)
    d_model = check_even_width(d_model)
    base = check_base(base)
    check_float_dtype(dtype, library="torch")
    work = torch.float64 if dtype == torch.float64 else torch.float32
    position = torch.arange(num_positions, dtype=work, device=device)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=work, device=device) * -(math.log(base) / d_model))
    table = torch.zeros((num_positions, d_model), dtype=work, device=device)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table.to(dtype)
