"""The oracle against mpmath, and the derived bound against correct float32 code: met everywhere on
the grid, yet tight enough that a small slip leaves it."""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
import torch

from posenc_spec.families.mrope import oracle
from posenc_spec.families.mrope.conventions import PRESETS
from posenc_spec.families.mrope.tolerance import cache_tolerance
from spec_tests.assertions import assert_within

SEED = 20260905


def _positions(convention, count=200, top=32767):
    return np.random.default_rng(SEED).integers(0, top, size=(len(convention.axes), count), endpoint=True)


def _float32_cache(positions, convention):
    """cos and sin as correct float32 code computes them: theta ** -e in float32, the product, cos."""
    e = torch.tensor(convention.slot_exponents(), dtype=torch.float32)
    theta = torch.tensor(convention.slot_theta(), dtype=torch.float32)
    angles = torch.tensor(positions, dtype=torch.float32)[convention.slot_axes()].T * (1.0 / theta ** e)
    return angles.cos().double().numpy(), angles.sin().double().numpy()


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_oracle_angles_match_mpmath(preset):
    """Every slot's angle at large positions agrees with 40-digit arithmetic to float64's own rounding."""
    convention = PRESETS[preset]
    positions = _positions(convention, 8)
    got = oracle.angles(positions, convention)
    with mpmath.workdps(40):
        for token in range(positions.shape[1]):
            for slot, (axis, e, theta) in enumerate(zip(convention.slot_axes(), convention.slot_exponents(),
                                                        convention.slot_theta(), strict=True)):
                exact = mpmath.mpf(int(positions[axis, token])) * mpmath.power(theta, -mpmath.mpf(e))
                assert abs(got[token, slot] - float(exact)) <= 2 * 2.0**-53 * abs(float(exact))


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_correct_float32_code_meets_the_bound(preset):
    """A float32 cache at positions up to 32767 is within the derived bound at every token and slot."""
    convention = PRESETS[preset]
    positions = _positions(convention)
    cos, sin = _float32_cache(positions, convention)
    exact_cos, exact_sin = oracle.compact(positions, convention)
    bound = cache_tolerance(positions, convention, "float32")
    assert_within(cos, exact_cos, bound, f"{preset} cos")
    assert_within(sin, exact_sin, bound, f"{preset} sin")


def test_a_theta_off_by_one_part_in_ten_thousand_leaves_the_bound():
    """The bound is no blanket: Qwen2-VL's float32 cache at theta 1e6 (1 + 1e-4) fails it."""
    convention = PRESETS["qwen2-vl"]
    positions = _positions(convention)
    cos, _ = _float32_cache(positions, dataclasses.replace(convention, theta=(1e6 * (1 + 1e-4),)))
    exact, _ = oracle.compact(positions, convention)
    assert (np.abs(cos - exact) > cache_tolerance(positions, convention, "float32")).any()


def test_apply_rotates_each_slot_pair_and_keeps_norms():
    """oracle.apply turns each slot's two features by its angle: the pair's length is kept, position 0 is identity."""
    convention = PRESETS["qwen3-vl"]
    x = np.random.default_rng(SEED).standard_normal((5, 128))
    positions = np.stack([np.arange(5)] * 3)
    rotated = oracle.apply(x, positions, convention)
    a, b = convention.columns()
    assert np.allclose(rotated[0], x[0])
    assert np.allclose(rotated[:, a] ** 2 + rotated[:, b] ** 2, x[:, a] ** 2 + x[:, b] ** 2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_storage_is_bounded_but_half_precision_angles_are_not(dtype):
    """A float32 cache stored in float16 or bfloat16 meets the bound of that output dtype; the same
    angles formed in that dtype (positions and frequencies rounded first) do not."""
    convention = PRESETS["qwen2-vl"]
    positions = _positions(convention, 64, 4096)
    half = getattr(torch, dtype)
    cos, _ = _float32_cache(positions, convention)
    stored = torch.from_numpy(cos).to(half).double().numpy()
    exact, _ = oracle.compact(positions, convention)
    bound = cache_tolerance(positions, convention, dtype)
    assert_within(stored, exact, bound, f"float32 cos stored in {dtype}")
    e = torch.tensor(convention.slot_exponents(), dtype=torch.float32)
    inv_freq = (1.0 / torch.tensor(convention.slot_theta(), dtype=torch.float32) ** e).to(half)
    angles = torch.tensor(positions, dtype=half)[convention.slot_axes()].T * inv_freq
    assert (np.abs(angles.float().cos().double().numpy() - exact) > bound).any()
