"""The slot map of each preset against the real code's own split of the head, and the checks a
convention's fields are held to."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from posenc_spec.families.mrope.conventions import PRESETS, MropeConvention, at_head_dim, grid_positions


def test_qwen3_interleave_gives_each_axis_its_section():
    """Qwen3-VL's interleave: h at 1, 4, .. below 3 x 20, w at 2, 5, .., t the rest: 24, 20, 20 slots."""
    owner = PRESETS["qwen3-vl"].slot_axes()
    assert np.bincount(owner).tolist() == [24, 20, 20]
    assert owner[1:60:3].tolist() == [1] * 20 and owner[2:60:3].tolist() == [2] * 20 and (owner[60:] == 0).all()


@pytest.mark.parametrize("head_dim", [64, 96, 128, 130])
def test_rescaled_presets_rotate_the_whole_head(head_dim):
    """Wan and CogVideoX split any head they take: their slots fill it (Wan: t gets what h and w leave)."""
    wan = at_head_dim("wan", head_dim)
    assert wan.rotary_dim == head_dim and wan.sections[1] == wan.sections[2] == head_dim // 6
    if head_dim % 8 == 0:
        assert at_head_dim("cogvideox", head_dim).rotary_dim == head_dim


def test_shared_and_per_axis_frequencies_differ_as_the_code_does():
    """Shared: one exponent ladder over the head; per-axis: each axis's ladder restarts at 0."""
    shared, per_axis = PRESETS["qwen2-vl"], dataclasses.replace(PRESETS["qwen2-vl"], frequencies="per-axis")
    assert np.allclose(shared.slot_exponents(), np.arange(64) / 64)
    assert per_axis.slot_exponents()[[0, 16, 40]].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("fields", [
    {"sections": (16, 24)}, {"axes": ("t", "t", "w")}, {"axes": ("t", "x", "w")}, {"theta": (1.0,)},
    {"theta": (1e4, 1e6, 1e6)}, {"interleaved": True, "frequencies": "per-axis"}, {"layout": "diagonal"},
    {"interleaved": True, "sections": (2, 30, 32)},
])
def test_inconsistent_fields_are_refused(fields):
    """A convention that cannot be real code raises ValueError: sections per axis, distinct named axes,
    one theta for shared frequencies, interleaved slots that fit the head."""
    with pytest.raises(ValueError):
        dataclasses.replace(PRESETS["qwen2-vl"], **fields)


def test_grid_positions_are_row_major_and_cropped_as_linspace_without_endpoint():
    """t slowest, w fastest; a crop (start, stop) gives start + i (stop - start) / n."""
    positions = grid_positions(("t", "h", "w"), (2, 2, 3), {"w": (1.0, 4.0)})
    assert positions[:, 4].tolist() == [0, 1, 2] and positions[:, 6].tolist() == [1, 0, 1]
    assert np.allclose(np.unique(positions[2]), np.linspace(1, 4, 3, endpoint=False))


def test_every_preset_names_itself():
    """Each preset is a member that names itself; Qwen2.5-VL's cache is Qwen2-VL's (only its position ids differ)."""
    said = {name: convention.name() for name, convention in PRESETS.items()}
    assert all(isinstance(convention, MropeConvention) for convention in PRESETS.values())
    assert {name: name_said for name, name_said in said.items() if name != name_said} == {"qwen2.5-vl": "qwen2-vl"}
