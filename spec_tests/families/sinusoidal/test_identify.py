"""identify from tables alone: every preset and off-preset members come back in float64,
float32 and float16, fast frequencies included; a member fitted on some sizes is named only
if check's formula check passes it on others; tables that are not sinusoidal get "none"
with the nearest convention."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention
from posenc_spec.families.sinusoidal.fit import Sample, answer
from posenc_spec.families.sinusoidal.identify import FIT_LENGTH, FIT_WIDTHS, ODD_PROBE

POSITIONS = np.arange(FIT_LENGTH, dtype=np.float64)
ODD = type("OddProbe", (), {"width": ODD_PROBE[1], "length": ODD_PROBE[0], "timesteps": None, "slot": "fit-odd"})
MEMBERS = {
    **PRESETS,
    "vaswani base 500": get_convention("vaswani", base=500),
    "guided-diffusion scale 1000": get_convention("guided-diffusion", scale=1000),
    "tensor2tensor offset 3 scale 0.5": get_convention("tensor2tensor", offset=3, scale=0.5),
    "cos first shift 1": get_convention("tensor2tensor", first="cos"),
    "interleaved cos first": get_convention("vaswani", first="cos"),
    "highest frequency 3 rad per step": get_convention("vaswani", scale=3),
    "every frequency above a radian per step": get_convention("concat", base=2, scale=2.5),
}


def _samples(convention, dtype, positions=POSITIONS, widths=FIT_WIDTHS):
    return [Sample(oracle.table(positions, width, convention).astype(dtype).astype(np.float64),
                   np.dtype(dtype).name, positions) for width in widths]


class _Raised:
    status, ok, message = "raised", False, "raised ValueError: odd width"


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("member", MEMBERS)
def test_member_is_recovered(member, dtype):
    """Layout, first function, shift, base, offset and scale come back exactly."""
    convention = MEMBERS[member]
    found = answer(_samples(convention, dtype), _samples(convention, dtype, np.arange(300.0), (512,)), ODD, _Raised)
    expected = {**convention.as_dict(), "odd": "error"}
    assert found["convention"] == expected, f"{member} ({np.dtype(dtype).name}): {found['message']}"
    assert found["max_error_ratio"] <= 1.0, found["message"]


def test_timesteps_in_the_unit_interval_with_a_large_scale():
    """F5-TTS-style embeddings (t in [0, 1], scale 1000) are read from finely spread float timesteps."""
    convention = get_convention("tensor2tensor", scale=1000)
    steps = np.linspace(0, 1, 1024).astype(np.float32).astype(np.float64)
    found = answer(_samples(convention, np.float32, steps))
    assert found["name"] == convention.name() and found["convention"]["scale"] == 1000, found["message"]


def test_a_fit_that_fails_elsewhere_is_none_with_the_nearest():
    """Positions counted back from the end (p -> L - 1 - p) look like one offset at the fitted
    length and like another at every other length: check's formula check on a size it was
    not fitted on rejects it, so the answer is "none" naming the fitted member as nearest."""
    def reversed_table(length, width):
        return oracle.table(np.arange(length, dtype=np.float64)[::-1].copy(), width, "vaswani")

    fit_samples = [Sample(reversed_table(FIT_LENGTH, width), "float64", POSITIONS) for width in FIT_WIDTHS]
    assert answer(fit_samples)["convention"] is not None  # at one length it is a member (negative scale)
    validation = [Sample(reversed_table(300, 512), "float64", np.arange(300.0))]
    found = answer(fit_samples, validation)
    assert found["name"] == "none" and found["nearest"]["max_error_ratio"] > 1, found["message"]
    assert "fails check's formula check elsewhere" in found["message"]


@pytest.mark.parametrize("preset, odd", [("vaswani", "ceil"), ("concat", "zero-pad"), ("tensor2tensor", "zero-pad")])
def test_odd_width_behaviour(preset, odd):
    """The width-7 table tells zero-pad from ceil; the name stays the preset's."""
    length, width = ODD_PROBE
    convention = get_convention(preset, odd=odd)
    table = oracle.table(length, width, convention).astype(np.float32)
    outcome = type("Outcome", (), {"status": "ok", "ok": True, "message": "", "is_tuple": False,
                                   "arrays": [table], "table": table, "dtype": "float32"})
    found = answer(_samples(convention, np.float32), (), ODD, outcome)
    assert found["convention"]["odd"] == odd and found["name"] == preset, found["message"]


def test_random_table_is_none_with_the_nearest():
    """A table of random values fits nothing: "none", with the nearest convention and its ratio."""
    rng = np.random.default_rng(7)
    samples = [Sample(rng.uniform(-1, 1, size=(FIT_LENGTH, width)), "float64", POSITIONS) for width in FIT_WIDTHS]
    found = answer(samples)
    assert found["convention"] is None and found["name"] == "none"
    assert found["nearest"]["max_error_ratio"] > 1 and found["nearest"]["name"]
    assert found["message"].startswith("none: no member of the family fits; nearest ")


def test_hard_coded_log_base_is_seen():
    """A vaswani table with ln(10000) hard-coded as 9.21 (a real slip) is not vaswani: it is
    identified as the member with base e^9.21, closer to that than to 10000."""
    samples = []
    for width in FIT_WIDTHS:
        k = np.arange(width // 2)
        angle = POSITIONS[:, None] * np.exp(-2 * k * 9.21 / width)
        table = np.empty((FIT_LENGTH, width))
        table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
        samples.append(Sample(table.astype(np.float32).astype(np.float64), "float32", POSITIONS))
    found = answer(samples)
    assert found["name"] != "vaswani", found["message"]
    assert abs(found["convention"]["base"] - np.exp(9.21)) < abs(found["convention"]["base"] - 10000), found["message"]
