"""Assertion helpers: each failure names the implementation, the size and the worst element."""

from __future__ import annotations

import numpy as np

from posenc_spec import checks
from posenc_spec.checks import CheckResult, Expectation


def assert_check(result: CheckResult, impl: str) -> None:
    assert result.passed, f"{impl}: {result.name} failed: {result.message}"


def assert_matches_formula(table, impl: str, exp: Expectation) -> None:
    """``table`` equals the formula element by element, within the per-element tolerance."""
    table = np.asarray(table)
    assert table.shape == exp.table.shape, f"{impl}: shape {table.shape}, expected {exp.table.shape}"
    assert_check(checks.check_finite(table), impl)
    assert_check(checks.check_formula(table, exp), impl)


def assert_within(actual, expected, bound, what: str) -> None:
    """Element-wise ``|actual - expected| <= bound``; the message shows the worst element."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    bound = np.broadcast_to(bound, expected.shape)
    error = np.abs(actual - expected)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero bound admits only a zero error
        ratio = np.where(np.isnan(error), np.inf, np.where(error == 0, 0.0, error / bound))
    if ratio.size and ratio.max() > 1:
        worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        raise AssertionError(
            f"{what}: {int((ratio > 1).sum())} of {ratio.size} out of bound; "
            f"worst at {list(map(int, worst))}: got {float(actual[worst])!r}, "
            f"expected {float(expected[worst])!r}, error {error[worst]:.3g} > bound {bound[worst]:.3g}"
        )
