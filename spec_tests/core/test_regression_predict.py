"""The portable prediction of a table of sines and cosines: accurate, and computed from nothing a CPU
or a NumPy build decides (the bits it gives are checked on every read of a snapshot, the
committed ones included, under every CPU capability in spec_tests/families/sinusoidal/test_reference_snapshots.py)."""

from __future__ import annotations

import mpmath
import numpy as np
import torch

from posenc_spec.regression.predict import BLOCK, Prediction, fit, rows_of, sin_cos


def _interleaved_paper_columns(width: int) -> list[tuple[str, np.ndarray]]:
    """One way to make ``width`` columns: sin, cos pairs at the paper's frequencies."""
    return [("sc" * (width // 2), np.repeat(10000.0 ** (-np.arange(0, width, 2) / width), 2))]


def _exact(theta, function) -> np.ndarray:
    with mpmath.workdps(40):
        return np.array([float(function(mpmath.mpf(float(t)))) for t in theta])


def test_sin_cos_is_within_an_ulp_and_mostly_correctly_rounded():
    """Over the angles of tables up to 4096 positions and a few huge ones: within 1 ULP of
    the exact value, correctly rounded for at least 97% (exact=False: within 2 ULP)."""
    rng = np.random.default_rng(11)
    theta = np.concatenate([rng.integers(0, 4096, 1500) * 10000.0 ** -rng.uniform(0, 1, 1500),
                            rng.uniform(-1e5, 1e5, 300), [0.0, -0.0, 1e-300, np.pi / 4]])
    for cosine, function in ((False, mpmath.sin), (True, mpmath.cos)):
        exact = _exact(theta, function)
        for precise, most_ulp in ((True, 1), (False, 2)):
            got = sin_cos(theta, cosine, exact=precise)
            steps = np.abs(got - exact) / np.spacing(np.abs(exact))
            assert steps.max() <= most_ulp, f"cos={cosine} exact={precise}: {steps.max()} ULP"
        rounded = np.mean(sin_cos(theta, cosine) == exact)
        assert rounded >= 0.97, f"cos={cosine}: {rounded:.3f} correctly rounded"


def test_sin_cos_does_not_depend_on_how_the_angles_are_cut():
    """A block boundary, a slice, a broadcast choice of function: the same bits element by
    element; NaN for angles that are not finite."""
    theta = np.linspace(-50.0, 3000.0, BLOCK + 1001)
    choice = np.arange(theta.size) % 3 == 0
    whole = sin_cos(theta, choice)
    assert np.array_equal(whole[BLOCK - 7:BLOCK + 9], sin_cos(theta[BLOCK - 7:BLOCK + 9], choice[BLOCK - 7:BLOCK + 9]))
    assert np.array_equal(whole[~choice], sin_cos(theta[~choice], False))
    assert np.isnan(sin_cos(np.array([np.nan, np.inf, -np.inf]), False)).all()


def test_fit_finds_how_a_float32_table_was_formed():
    """torch's float32 recipe (positions times exp of a float32 exponent): the fit finds a
    float32 product, and its prediction matches at least 90% of the elements exactly."""
    positions = torch.arange(1024, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, 256, 2, dtype=torch.float32) * -(np.log(10000.0) / 256))
    table = torch.zeros(1024, 256)
    table[:, 0::2], table[:, 1::2] = torch.sin(positions * div_term), torch.cos(positions * div_term)
    table = table.numpy()
    prediction, offset = fit(table, np.arange(1024.0), _interleaved_paper_columns)
    assert (prediction.angle_dtype, prediction.operation, prediction.functions, offset) == (
        "float32", "mul", "sc" * 128, 0.0)
    assert np.mean(prediction.values("float32") == table) >= 0.9


def test_a_table_of_no_member_is_not_predicted():
    """Random values near the range of a sine follow no way of making the columns."""
    values = np.random.default_rng(3).uniform(-1, 1, (64, 16)).astype(np.float32)
    assert fit(values, np.arange(64.0), _interleaved_paper_columns) is None


def test_a_zero_column_and_non_finite_angles_are_predicted_as_zero():
    """Zero columns (zero-pad) and angles that overflow predict 0, whose bits every CPU agrees on."""
    prediction = Prediction(rows_of(np.array([0.0, 1.0, 1e308])), np.array([1.0, 1e10, 1.0]), "s0c", "float64", "mul")
    values = prediction.values("float64")
    assert values[:, 1].tolist() == [0.0, 0.0, 0.0] and values[2, 0] == 0.0 and values[0, 2] == 1.0
