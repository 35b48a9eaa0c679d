"""The checks of one cache on the oracle's own values (they pass) and on values with one thing
changed (the check that belongs to it fails)."""

from __future__ import annotations

import numpy as np

from posenc_spec.families.mrope import oracle, properties
from posenc_spec.families.mrope.conventions import PRESETS
from posenc_spec.families.mrope.properties import Cache

CONVENTION = PRESETS["flux"]
BASE = np.random.default_rng(7).integers(0, 64, size=(3, 16))


def _cache(positions, convention=CONVENTION, scale=1.0):
    cos, sin = oracle.cache(positions, convention)
    return Cache((scale * cos).astype(np.float32).astype(np.float64), (scale * sin).astype(np.float32)
                 .astype(np.float64), "float32")


def test_the_oracle_s_cache_passes_every_check():
    """formula, norm, identity and relative pass on the exact cache rounded to float32."""
    positions = np.concatenate([np.zeros((3, 1), dtype=np.int64), BASE], axis=1)
    cache = _cache(positions)
    assert properties.check_formula(cache, positions, CONVENTION).passed
    assert properties.check_norm(cache, positions, CONVENTION).passed
    assert properties.check_identity(cache, positions, CONVENTION).passed
    shifted = BASE.copy()
    shifted[1] += 4096
    assert properties.check_relative(_cache(BASE), _cache(shifted), BASE, shifted, 1, CONVENTION, "relative").passed


def test_a_scaled_cache_fails_norm():
    """cos and sin scaled by 1.001 are no rotation: norm fails."""
    assert not properties.check_norm(_cache(BASE, scale=1.001), BASE, CONVENTION).passed


def test_a_slot_moving_with_another_axis_fails_relative():
    """A cache whose h slots follow w's positions: moving w turns slots that are not w's, and relative says so."""
    wrong = np.array(BASE)
    shifted = BASE.copy()
    shifted[2] += 4096
    first = _cache(wrong[[0, 2, 2]])
    second = _cache(shifted[[0, 2, 2]])
    result = properties.check_relative(first, second, BASE, shifted, 2, CONVENTION, "relative[axis=w]")
    assert not result.passed and "moved although its axis did not" in result.message


def test_identity_is_skipped_without_a_token_at_the_origin():
    """A call with no token at the origin of every axis has no identity to judge."""
    positions = BASE + 1
    assert properties.check_identity(_cache(positions), positions, CONVENTION).status == "skipped"
