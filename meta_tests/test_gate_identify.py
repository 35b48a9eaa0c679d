"""identify from tables alone: every preset and off-preset members are recovered in float64,
float32 and float16; tables that are not sinusoidal get "none" with the nearest convention."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_spec import oracle
from posenc_spec.conventions import PRESETS, get_convention
from posenc_spec.gate.identify import ODD_PROBE, PROBE_LENGTH, PROBE_WIDTHS, identify_tables

POSITIONS = np.arange(PROBE_LENGTH, dtype=np.float64)
MEMBERS = {
    **PRESETS,
    "vaswani base 500": get_convention("vaswani", base=500),
    "guided-diffusion scale 1000": get_convention("guided-diffusion", scale=1000),
    "tensor2tensor offset 3 scale 0.5": get_convention("tensor2tensor", offset=3, scale=0.5),
    "cos first shift 1": get_convention("tensor2tensor", first="cos"),
    "interleaved cos first": get_convention("vaswani", first="cos"),
}


def _tables(convention, dtype):
    return [(oracle.table(POSITIONS, width, convention).astype(dtype), np.dtype(dtype).name, POSITIONS)
            for width in PROBE_WIDTHS]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("member", MEMBERS)
def test_member_is_recovered(member, dtype):
    """Layout, first function, shift, base, offset and scale come back exactly."""
    convention = MEMBERS[member]
    answer = identify_tables(_tables(convention, dtype), odd=("raised", "raised ValueError"))
    assert answer["convention"] == convention.as_dict(), f"{member} ({np.dtype(dtype).name}): {answer['message']}"
    expected_name = member if member in PRESETS else convention.name()
    assert answer["name"] == expected_name and answer["max_error_ratio"] <= 1.0, answer["message"]


@pytest.mark.parametrize("preset, odd", [("vaswani", "ceil"), ("concat", "zero-pad"), ("tensor2tensor", "zero-pad")])
def test_odd_width_behaviour(preset, odd):
    """The width-7 table tells zero-pad from ceil; the name stays the preset's."""
    length, width = ODD_PROBE
    positions = np.arange(length, dtype=np.float64)
    convention = get_convention(preset, odd=odd)
    odd_table = oracle.table(positions, width, convention).astype(np.float32)
    answer = identify_tables(_tables(convention, np.float32), odd=("table", odd_table, "float32", positions))
    assert answer["convention"]["odd"] == odd and answer["name"] == preset, answer["message"]


def test_unknown_odd_behaviour_is_left_open():
    """An odd-width table that matches neither zero-pad nor ceil leaves odd unidentified."""
    length, width = ODD_PROBE
    positions = np.arange(length, dtype=np.float64)
    odd_table = np.zeros((length, width))
    answer = identify_tables(_tables(PRESETS["vaswani"], np.float32), odd=("table", odd_table, "float64", positions))
    assert answer["name"] == "vaswani" and answer["convention"]["odd"] is None
    assert "matches neither zero-pad nor ceil" in answer["message"]


def test_random_table_is_none_with_the_nearest():
    """A table of random values fits nothing: "none", with the nearest convention and its ratio."""
    rng = np.random.default_rng(7)
    tables = [(rng.uniform(-1, 1, size=(PROBE_LENGTH, width)), "float64", POSITIONS) for width in PROBE_WIDTHS]
    answer = identify_tables(tables)
    assert answer["convention"] is None and answer["name"] == "none"
    assert answer["nearest"]["max_error_ratio"] > 1 and answer["nearest"]["name"]
    assert answer["max_error_ratio"] == answer["nearest"]["max_error_ratio"]
    assert answer["message"].startswith("none: no member of the family fits; nearest ")


def test_hard_coded_log_base_is_seen():
    """A vaswani table with ln(10000) hard-coded as 9.21 (a real slip) is not vaswani: it is
    identified as the member with base e^9.21, closer to that than to 10000."""
    tables = []
    for width in PROBE_WIDTHS:
        k = np.arange(width // 2)
        angle = POSITIONS[:, None] * np.exp(-2 * k * 9.21 / width)
        table = np.empty((PROBE_LENGTH, width))
        table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
        tables.append((table.astype(np.float32), "float32", POSITIONS))
    answer = identify_tables(tables)
    assert answer["presets"]["vaswani"] > 1 and answer["name"] != "vaswani", answer["message"]
    base = answer["convention"]["base"]
    assert abs(base - np.exp(9.21)) < abs(base - 10000), answer["message"]
