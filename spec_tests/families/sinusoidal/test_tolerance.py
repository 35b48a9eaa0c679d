"""The tolerance lets every correct table through and stops the classic numerical bugs."""

import math

import numpy as np
import pytest
import torch

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.tolerance import element_tolerance, table_tolerance
from posenc_spec.tolerance import unit_roundoff
from spec_tests.implementations import IMPLEMENTATIONS, by_dtype, ids

PAIRS = by_dtype(IMPLEMENTATIONS)


@pytest.mark.parametrize("width", [64, 1024])
@pytest.mark.parametrize("impl, dtype", PAIRS, ids=ids(PAIRS))
def test_correct_tables_pass_at_length_8192(impl, dtype, width):
    """Correct code in float64, float32, float16 and bfloat16 passes at L = 8192."""
    exp = checks.expectation(8192, width, impl.convention, dtype)
    result = checks.check_formula(impl.make(8192, width, dtype), exp)
    assert result.passed, f"{impl}[{dtype}] 8192x{width}: {result.message}"


def paper_table_with_log_base(num_positions, width, log_base, dtype):
    """The vectorised paper formula with ln(base) given as a number (a classic slip)."""
    position = torch.arange(num_positions, dtype=dtype)[:, None]
    angle = position * torch.exp(torch.arange(0, width, 2, dtype=dtype) * -(log_base / width))
    table = torch.zeros(num_positions, width, dtype=dtype)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table.to(torch.float64).numpy()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("num_positions", [2, 50])
def test_ln_10000_hard_coded_as_9_21_fails_at_small_sizes(dtype, num_positions):
    """ln(10000) = 9.2103...; writing 9.21 moves the angles by about 1e-5 at position 1."""
    exp = checks.expectation(num_positions, 512, "vaswani", str(dtype))
    assert checks.check_formula(paper_table_with_log_base(num_positions, 512, math.log(10000.0), dtype), exp).passed
    result = checks.check_formula(paper_table_with_log_base(num_positions, 512, 9.21, dtype), exp)
    assert not result.passed, f"9.21 for ln(10000) passed at {num_positions}x512: {result.message}"


@pytest.mark.parametrize("num_positions", [50, 300, 8192])
def test_float16_angle_arithmetic_fails(num_positions):
    """A float16 table whose angles are formed in float16 fails; the same table formed in
    float32 and rounded at the end passes."""
    exp = checks.expectation(num_positions, 512, "vaswani", "float16")
    half = paper_table_with_log_base(num_positions, 512, math.log(10000.0), torch.float16)
    result = checks.check_formula(half, exp)
    assert not result.passed, f"float16 arithmetic passed at {num_positions}x512: {result.message}"
    rounded = paper_table_with_log_base(num_positions, 512, math.log(10000.0), torch.float32)
    assert checks.check_formula(rounded.astype(np.float16), exp).passed


def test_one_bound_per_table_would_let_float16_arithmetic_through():
    """Why the bound is per element: ``eps * theta`` of the output dtype at the table's
    largest angle, applied to the whole table, accepts float16 angle arithmetic that the
    per-element bound rejects."""
    theta, log_omega = oracle.angles(50, 512)
    half = paper_table_with_log_base(50, 512, math.log(10000.0), torch.float16)
    error = np.abs(half - oracle.table(50, 512))
    per_table = np.finfo(np.float16).eps * np.abs(theta).max()
    assert error.max() <= per_table
    assert (error > element_tolerance(theta, log_omega, "float16")).any()


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_bound_grows_with_the_angle_and_never_drops_below_the_output_rounding(dtype):
    """The bound increases with |theta| and is at least the output dtype's rounding."""
    theta = np.array([0.0, 1.0, 10.0, 1000.0])
    bound = element_tolerance(theta, 0.0, dtype)
    assert np.all(np.diff(bound) > 0)
    assert bound[0] >= unit_roundoff(dtype)


@pytest.mark.parametrize("convention", ["vaswani", "tensor2tensor", "fairseq"])
@pytest.mark.parametrize("positions", [300, np.array([0.0, 7.5, 999.0, 3.25])], ids=["range", "timesteps"])
def test_cached_expectation_holds_the_tables_bound_bit_for_bit(convention, positions):
    """The expectation's bound, made from angles formed again over which it is written, is the
    table's bound of the tolerance module, element for element and bit for bit."""
    for dtype in ("float32", "float16"):
        exp = checks.expectation(positions, 64, convention, dtype, cached=False)
        expected = table_tolerance(positions, 64, convention, dtype)
        assert exp.tolerance.tobytes() == expected.tobytes(), f"{convention} {dtype}"
