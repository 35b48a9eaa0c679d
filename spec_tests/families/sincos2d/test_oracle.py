"""The 2-D oracles: the exact one against elements written out by hand and against an
independent per-element loop, the float64 one against the exact one within its own bound."""

import math

import numpy as np
import pytest

from posenc_spec.families.sincos2d import oracle
from posenc_spec.families.sincos2d.conventions import PRESETS, Sincos2d
from posenc_spec.families.sincos2d.tolerance import element_bound
from spec_tests.assertions import assert_within


def test_elements_written_out():
    """MAE's token (row 1, column 2) of a 2x3 grid at D = 8: [sin 2, sin 0.01*2, cos 2, cos 0.02 |
    sin 1, ...]; DETR's channels 0 and 1 at (0, 0) are sin and cos of the row's 2 pi * 1 / (2 + 1e-6)."""
    got = oracle.exact_table(2, 3, 8, PRESETS["mae"])[5]
    want = [math.sin(2), math.sin(0.02), math.cos(2), math.cos(0.02),
            math.sin(1), math.sin(0.01), math.cos(1), math.cos(0.01)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-16)
    detr = oracle.exact_table(2, 3, 8, PRESETS["detr"])
    assert detr.shape == (8, 2, 3)
    row = 2 * math.pi / (2 + 1e-6)
    np.testing.assert_allclose(detr[:, 0, 0][:2], [math.sin(row), math.cos(row)],
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(detr[4, 0, 2], math.sin(2 * math.pi * 3 / (3 + 1e-6)), rtol=0, atol=1e-15)


def independent(height, width, dim, conv: Sincos2d) -> np.ndarray:
    """The grid element by element with Python's math, from the module docstring's formula
    (no NumPy layout helper, no mpmath)."""
    quarter = dim // 4
    out = np.empty((height, width, dim))
    for r in range(height):
        for c in range(width):
            halves = []
            for axis in (conv.first, 1 - conv.first):
                length, index = (height, r) if axis == 0 else (width, c)
                p = float(conv.positions(length)[index])
                base = conv.row_base if axis == 0 else conv.col_base
                angles = [p * base ** (-k / (quarter - conv.freq_shift)) for k in range(quarter)]
                if conv.pairing == "interleaved":
                    halves.append([f(a) for a in angles for f in (math.sin, math.cos)])
                else:
                    halves.append([math.sin(a) for a in angles] + [math.cos(a) for a in angles])
            if conv.grouping == "by-function":
                a, b = halves
                halves = [a[:quarter] + b[:quarter], a[quarter:] + b[quarter:]]
            out[r, c] = halves[0] + halves[1]
    return out


CASES = {**PRESETS, "by-function": Sincos2d(grouping="by-function"),
         "per-axis-bases": Sincos2d(row_base=100.0, col_base=7.5, pairing="interleaved", freq_shift=1)}


@pytest.mark.parametrize("name", CASES)
def test_exact_grid_matches_an_independent_loop(name):
    """The exact grid agrees with a per-element loop in float64 math on a 3x5 grid at D = 16,
    within the float64 bound."""
    conv = CASES[name]
    exact = oracle.exact_grid(3, 5, 16, conv)
    assert_within(independent(3, 5, 16, conv), exact, 2 * element_bound(3, 5, 16, conv, "float64", "float64"),
                  f"independent loop vs exact, {name}")


@pytest.mark.parametrize("name", CASES)
def test_float64_grid_within_its_bound_of_the_exact_one(name):
    """The float64 oracle is within its own bound (every dtype float64) of the correctly rounded
    grid, on a 7x12 grid at D = 32 (9x13 cropped under SD3)."""
    conv = CASES[name]
    exact = oracle.exact_grid(7, 12, 32, conv)
    bound = element_bound(7, 12, 32, conv, "float64", "float64")
    assert_within(oracle.grid(7, 12, 32, conv), exact, bound, f"float64 oracle, {name}")


def test_float64_bound_is_tight_enough_to_matter():
    """Measured on a 64x64 MAE grid at D = 64 (the largest exact grid the test affords): the
    float64 oracle's error uses under a fifth of its bound (0.14), and the bound itself stays below
    1e-13 (about 3e-14 at row 63)."""
    conv = PRESETS["mae"]
    exact = oracle.exact_grid(64, 64, 64, conv)
    bound = element_bound(64, 64, 64, conv, "float64", "float64")
    error = np.abs(oracle.grid(64, 64, 64, conv) - exact)
    assert bound.max() < 1e-13, bound.max()
    assert (error / bound).max() < 0.2, (error / bound).max()
