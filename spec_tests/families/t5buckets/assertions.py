"""Assertion helpers of the T5-bucket tests: each failure names the function, the inputs and the values."""

from __future__ import annotations

import numpy as np

from posenc_spec.results import CheckResult


def assert_buckets_equal(got, expected, relative_positions, what: str) -> None:
    """Element-wise equal buckets; the message names the smallest relative position that differs."""
    got, expected, r = np.asarray(got), np.asarray(expected), np.asarray(relative_positions)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    differing = np.flatnonzero(got != expected)
    if differing.size:
        flat = int(differing[np.argmin(np.abs(r.flat[differing].astype(np.float64)))])
        raise AssertionError(f"{what}: {differing.size} of {got.size} buckets differ; the smallest: relative position "
                             f"{int(r.flat[flat])} got {got.flat[flat]}, expected {expected.flat[flat]}")


def assert_status(result: CheckResult, status: str, what: str, contains: str = "") -> None:
    """``result`` has ``status`` and, where given, its message says ``contains``."""
    assert result.status == status, f"{what}: {result.name} {result.status}, expected {status}: {result.message}"
    assert contains in result.message, f"{what}: {result.name}'s message lacks {contains!r}: {result.message}"
