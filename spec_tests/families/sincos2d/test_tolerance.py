"""The 2-D bound, exercised: correct float32 implementations (and float16/bfloat16 outputs
rounded once from float32) measure inside it at the largest grids that matter, and
arithmetic done in float16 or bfloat16 does not.

Measured on this machine (max error / bound; the test asserts < 1):

    convention      grid        D      float32   float16   bfloat16
    mae             256x256     64     0.13      0.50      0.50
    big-vision      2x1024      1024   0.35      0.50      0.50
    diffusers       256x256     64     0.12      0.50      0.50
    sd3             192x192     64     0.13      0.50      0.50
    detr            256x256     64     0.13      0.50      0.50

The same code with every operation in float16 (mae, detr) or bfloat16 (diffusers) measures
4.5, 3.9 and 2.8 times its bound on a 16x16 grid.
"""

import math

import pytest
import torch

from posenc_spec.families.sincos2d import oracle
from posenc_spec.families.sincos2d.conventions import PRESETS, Sincos2d
from posenc_spec.families.sincos2d.tolerance import grid_tolerance
from posenc_spec.tolerance import compare

SIZES = {"mae": (256, 256, 64), "big-vision": (2, 1024, 1024), "diffusers": (256, 256, 64),
         "sd3": (192, 192, 64), "detr": (256, 256, 64)}
OUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def torch_positions(length: int, conv: Sincos2d, dtype) -> torch.Tensor:
    """Each transform as its real code forms it, in ``dtype``."""
    i = torch.arange(length, dtype=dtype)
    if conv.position == "index":
        return (i + conv.offset) * conv.scale
    if conv.position == "relative":
        return i / (length / conv.base_size) / conv.interpolation_scale
    if conv.position == "crop":
        return (i + (conv.max_size - length) // 2) / (conv.max_size / conv.base_size) / conv.interpolation_scale
    return (i + 1 + conv.offset) / (length + conv.eps) * conv.scale


def torch_grid(height: int, width: int, dim: int, conv: Sincos2d, dtype) -> torch.Tensor:
    """A correct (H, W, D) grid with every operation in ``dtype``: omega as 1 / base ** e,
    outer products, [sin | cos] or interleaved per axis, halves in the declared order."""
    quarter = dim // 4
    halves = []
    for axis, length in ((conv.first, (height, width)[conv.first]), (1 - conv.first, (height, width)[1 - conv.first])):
        exponent = torch.arange(quarter, dtype=dtype) / (quarter - conv.freq_shift)
        omega = 1.0 / conv.axis_base(axis) ** exponent
        angles = torch.outer(torch_positions(length, conv, dtype), omega)
        if conv.pairing == "interleaved":
            values = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)
        else:
            values = torch.cat([angles.sin(), angles.cos()], dim=1)
        halves.append(values[:, None, :].expand(height, width, -1) if axis == 0 else
                      values[None, :, :].expand(height, width, -1))
    return torch.cat(halves, dim=-1)


def ratio(actual: torch.Tensor, conv: Sincos2d, out_dtype: str) -> float:
    height, width, dim = actual.shape
    exact = oracle.grid(height, width, dim, conv)
    bound = grid_tolerance(height, width, dim, conv, out_dtype)
    return compare(actual.to(torch.float64).numpy(), exact, bound).max_ratio


@pytest.mark.parametrize("name", SIZES)
def test_correct_tables_measure_inside_the_bound(name):
    """float32 arithmetic, stored in float32, float16 or bfloat16: every element within its bound
    (the ratios are the module docstring's table)."""
    conv = PRESETS[name]
    computed = torch_grid(*SIZES[name], conv, torch.float32)
    measured = {str(dtype).removeprefix("torch."): ratio(computed.to(dtype), conv, str(dtype).removeprefix("torch."))
                for dtype in OUT_DTYPES}
    assert max(measured.values()) < 1, f"{name} at {SIZES[name]}: {measured}"
    assert measured["float32"] > 0.01, f"{name}: a bound 100 times the error tests nothing: {measured}"


LOW_PRECISION = [("mae", torch.float16), ("detr", torch.float16), ("diffusers", torch.bfloat16)]


@pytest.mark.parametrize("name, dtype", LOW_PRECISION)
def test_low_precision_arithmetic_is_out_of_bound(name, dtype):
    """The same code with every operation in float16 or bfloat16 exceeds the bound of a table
    stored in that dtype, on a 16x16 grid already."""
    conv = PRESETS[name]
    computed = torch_grid(16, 16, 64, conv, dtype)
    assert ratio(computed, conv, str(dtype).removeprefix("torch.")) > 1


def test_bound_grows_with_the_angle():
    """The bound of an element is its own: at row 255 of an MAE grid it is over 30 times the
    bound at row 0, where only the sine/cosine and output roundings remain."""
    bound = grid_tolerance(256, 1, 8, PRESETS["mae"], "float32")
    assert bound[255, 0, 4] > 30 * bound[0, 0, 4]
    assert math.isclose(bound[0, 0, 4], 4 * 2.0**-24 + 2.0**-24 + 5 * 2.0**-53, rel_tol=1e-12)
