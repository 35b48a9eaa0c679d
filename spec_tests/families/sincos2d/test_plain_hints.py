"""Hints for plain causes in 2-D sincos tables: a table returned in another output layout is
named with the key that declares it (and that key applied conforms); angles formed in float16
are named where they are large enough to tell, a table stored in float16 and returned in
float32 by its values, and noise of float16's size is not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posenc_spec.families.sincos2d import oracle
from posenc_spec.families.sincos2d.conventions import PRESETS
from posenc_spec.families.sincos2d.slips import narrow_angles, narrow_output
from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named

HERE = Path(__file__).resolve()
MAE = PRESETS["mae"]
GRIDS = ((128, 96, 16), (64, 128, 32))  # angles 0.1 p up to 12.7: float16 neighbours 8e-3 apart tell


def mae_channels_last(height, width, dim):
    return oracle.grid(height, width, dim, MAE).astype(np.float32)


def test_another_output_layout_is_named_with_its_key():
    """MAE's (H, W, D) grid declared as tokens: the hint names the layout and gives
    output_layout = "grid", and the target declared so conforms."""
    keys = {"target": f"{HERE}:mae_channels_last", "api": "sincos2d", "convention": "mae"}
    report = check_named({"grid": declare(keys)})["grid"]
    assert [hint.slips for hint in report.hints] == [("output-layout",)], [hint.text() for hint in report.hints]
    assert report.hints[0].declare == (("output_layout", "grid"),), report.hints[0].text()
    advised = check_named({"advised": declare({**keys, **dict(report.hints[0].declare)})})["advised"]
    assert advised.conforms, [(check.name, check.message) for check in advised.failures()[:3]]


def _angle_in_float16(height, width, dim):
    theta, _ = oracle.angle_grid(height, width, dim, MAE)
    exact = oracle.grid(height, width, dim, MAE)
    rounded = theta.astype(np.float16).astype(np.float64)
    sine = np.abs(np.sin(theta) - exact) <= np.abs(np.cos(theta) - exact)
    return np.where(sine, np.sin(rounded), np.cos(rounded)).astype(np.float16)


def _stored_in_float16(height, width, dim):
    return oracle.grid(height, width, dim, MAE).astype(np.float16)


def _noise_of_float16_size(height, width, dim):
    noise = np.random.default_rng(dim).normal(0.0, 2.0**-11, (height, width, dim))
    return (oracle.grid(height, width, dim, MAE) + noise).astype(np.float16)


@pytest.mark.parametrize(("make", "returned", "slips"), [
    (_angle_in_float16, "float16", ("angle-float16",)),
    (_angle_in_float16, "float32", ("angle-float16",)),
    (_stored_in_float16, "float32", ("output-float16",)),
    (_noise_of_float16_size, "float16", None),
    (_noise_of_float16_size, "float32", None),
], ids=["angle in float16", "angle in float16, returned in float32", "stored in float16, returned in float32",
        "noise of that size", "noise of that size in float16 numbers, returned in float32"])
def test_float16_arithmetic_is_named_and_noise_is_not(make, returned, slips):
    """Tables whose angles were rounded to float16 (sines in float16) name the angle, returned in
    either type; the declared table rounded to float16 once and returned in float32 names the
    output; noise of float16's size, which neither explains (held in float16 numbers or not),
    names none."""
    kept = [(h, w, d, MAE.arrange(make(h, w, d)).astype(np.float64), returned) for h, w, d in GRIDS]
    found = narrow_output(MAE, kept) or narrow_angles(MAE, kept)
    assert (found[0] if found else None) == slips, found
