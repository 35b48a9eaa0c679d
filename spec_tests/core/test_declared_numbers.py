"""Numbers a declaration gives are finite float64s in range before anything is allocated or
computed from them: NaN, an integer past a float, a subnormal, a head size past the gate's
largest, a scale whose positions or angles overflow. Each is one usage error naming the key."""

from __future__ import annotations

import json

import pytest

from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError

TABLE = {"target": "pkg.mod:table"}
ROPE = {"target": "pkg.mod:cache", "api": "rope-cache"}
GRID = {"target": "pkg.mod:grid", "api": "sincos2d"}


@pytest.mark.parametrize(("keys", "named"), [
    ({**TABLE, "kwargs": {"x": float("nan")}}, "kwargs.x must be a finite number"),
    ({**TABLE, "kwargs": {"x": float("inf")}}, "kwargs.x must be a finite number"),
    ({**TABLE, "kwargs": {"x": 10**30}}, "kwargs.x must be an integer from"),
    ({**TABLE, "kwargs": {"x": 5e-324}}, "kwargs.x must be 0 or a number of magnitude at least"),
    ({**ROPE, "base": 10**400}, "base must be a finite number"),
    ({**ROPE, "rope_type": "linear", "rope_parameters": {"factor": 5e-324}}, "factor must be at least"),
    ({**GRID, "scale": 1e-320}, "scale must be a number of magnitude at least"),
    ({**GRID, "scale": 1e306}, "positions of a 4096-token axis are not finite"),
])
def test_a_number_no_table_can_be_judged_at_is_refused(keys, named):
    """The error is one line and names the key."""
    with pytest.raises(UsageError, match=named) as refused:
        declare(keys)
    assert "\n" not in str(refused.value)


def test_a_rope_config_head_size_is_bounded_before_anything_is_allocated(tmp_path):
    """A config.json's head_dim of 2**31 is refused, not turned into an 8 GiB table."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"head_dim": 2**31, "rope_theta": 10000}))
    with pytest.raises(UsageError, match="head_dim must be an integer from 2 to"):
        declare({**ROPE, "model_config": str(config)})


def test_a_linear_factor_whose_angles_overflow_is_refused():
    """A normal but tiny linear factor whose angles at the farthest position overflow is refused, not judged."""
    with pytest.raises(UsageError, match="not finite at head_dim"):
        declare({**ROPE, "rope_type": "linear", "rope_parameters": {"factor": 1e-305}})


def test_numbers_in_range_still_declare():
    """Large but finite values that real configs use are accepted."""
    assert declare({**ROPE, "base": 10**9}).spec.convention.theta == 1e9
    assert declare({**TABLE, "kwargs": {"x": -(2**63)}}).calling.kwargs == (("x", -(2**63)),)
