"""Rotary declarations no table can be judged against: a factor so small that every rotated
pair's float32 angle is uncertain by more than 2 rad from position 1 on (a cache of cos 1 and
sin 0 would pass every check), and a dynamic factor whose base overflows float64 arithmetic
(an internal error before). Each is one usage error naming the convention; the conventions
real configs use still declare."""

from __future__ import annotations

import pytest

from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError

CACHE = {"target": "pkg.mod:cache", "api": "rope-cache"}


@pytest.mark.parametrize(("rope_type", "parameters"), [
    ("linear", {"factor": 1e-300}),
    ("linear", {"factor": 1e-12}),
    ("yarn", {"factor": 1e-300, "original_max_position_embeddings": 4096}),
])
def test_a_factor_that_leaves_every_angle_unresolved_is_refused(rope_type, parameters):
    """Every rotated pair's angle bound at position 1 reaches 2 rad: refused in one line."""
    with pytest.raises(UsageError, match="any cos and sin would pass") as refused:
        declare({**CACHE, "rope_type": rope_type, "rope_parameters": parameters})
    assert len(str(refused.value).splitlines()) == 1


def test_a_dynamic_base_past_float64_is_refused():
    """A dynamic factor whose theta' overflows Python's float power is a usage error."""
    with pytest.raises(UsageError, match="not finite at head_dim"):
        declare({**CACHE, "rope_type": "dynamic",
                 "rope_parameters": {"factor": 1e300, "original_max_position_embeddings": 2}})


@pytest.mark.parametrize(("rope_type", "parameters"), [
    ("linear", {"factor": 1e-4}),
    ("yarn", {"factor": 40.0, "original_max_position_embeddings": 4096}),
    ("llama3", {"factor": 1e-300, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}),
    ("dynamic", {"factor": 1e6, "original_max_position_embeddings": 2048}),
    ("proportional", {"partial_rotary_factor": 1e-300}),
])
def test_a_convention_with_a_resolved_pair_still_declares(rope_type, parameters):
    """A pair whose angle is resolved (llama3 keeps its high frequencies; nothing rotates
    under a zero partial factor, which the identity judges) leaves the declaration valid."""
    declared = declare({**CACHE, "rope_type": rope_type, "rope_parameters": parameters})
    assert declared.spec.convention.rope_type == rope_type
