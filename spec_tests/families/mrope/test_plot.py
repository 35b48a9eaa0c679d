"""The slot map ``plot`` draws, measured from caches: the declared map from the oracle's own caches,
and a swapped map from caches whose sections are swapped."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from posenc_spec.families.mrope import grid, oracle
from posenc_spec.families.mrope.conventions import PRESETS
from posenc_spec.families.mrope.plot import measured_slots
from posenc_spec.families.mrope.properties import Cache


def _calls(declared, computed):
    """The grid's table calls of ``declared``, answered with ``computed``'s float32 caches."""
    calls = []
    for probe in grid.probes_for(declared, "positions", declared.rotary_dim):
        if probe.role == "table":
            cos, sin = oracle.cache(probe.positions, computed)
            calls.append((probe, Cache(cos.astype(np.float32).astype(float), sin.astype(np.float32).astype(float),
                                       "float32")))
    return calls


@pytest.mark.parametrize("preset", ["qwen2-vl", "qwen3-vl", "flux", "hunyuan-dit", "rope-1d"])
def test_the_slot_map_of_the_oracle_is_the_declared_one(preset):
    """Each slot's measured axis is its declared axis, its frequency the declared one to 1e-3."""
    convention = PRESETS[preset]
    axes, frequencies, shared = measured_slots(_calls(convention, convention), convention)
    assert axes.tolist() == convention.slot_axes().tolist() and shared == 0
    assert np.allclose(frequencies, oracle.frequencies(convention), rtol=1e-3, atol=1e-9)


def test_swapped_sections_show_in_the_slot_map():
    """A cache with Qwen2-VL's sections swapped is drawn with the axes where the target has them."""
    declared = PRESETS["qwen2-vl"]
    swapped = dataclasses.replace(declared, sections=(24, 24, 16))
    axes, _, _ = measured_slots(_calls(declared, swapped), declared)
    assert axes.tolist() == swapped.slot_axes().tolist() != declared.slot_axes().tolist()
