"""The reference implementations against their committed snapshots, bit for bit (see
``spec_tests/reference_snapshots.py`` for why 0 ULP and where that holds)."""

from __future__ import annotations

import pytest

from posenc_spec.environment import environment
from posenc_spec.gate.against import snapshot_requests
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import probes
from posenc_spec.regression.snapshot_reader import read_snapshot
from spec_tests.assertions import check_named
from spec_tests.reference_snapshots import FOLDER, MAX_POSITIONS, MAX_ULP, SNAPSHOTS


@pytest.fixture(scope="module")
def reports():
    declarations = {name: declare({"target": target, "against": str(FOLDER / name), "max_ulp": MAX_ULP})
                    for name, (target, _) in SNAPSHOTS.items()}
    return check_named(declarations)


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_reference_matches_its_snapshot(name, request):
    """Every recorded call returns the same bits (or raises the same exception type) today.
    The platform is checked first: where every test skips, the gate does not run."""
    recorded = read_snapshot(FOLDER / name).meta["environment"]["platform"]
    if recorded != environment()["platform"]:
        pytest.skip(f"{name} was recorded on {recorded}; this is {environment()['platform']}: record this "
                    "platform's with tox -e snapshots-regenerate and compare")
    result = request.getfixturevalue("reports")[name].result("regression")
    assert result.status == "passed", f"{SNAPSHOTS[name][0]}: {result.message}"


def test_snapshots_hold_the_grid_they_say():
    """Each committed snapshot holds its reference's API and every call the gate makes for
    it at the recorded cap, in the gate's order (11 for a table, 9 for timesteps)."""
    for name, (target, api) in SNAPSHOTS.items():
        snapshot = read_snapshot(FOLDER / name)
        assert (snapshot.meta["target"], snapshot.api) == (target, api), name
        requests = snapshot_requests(probes(declare({"target": target, "api": api, "max_positions": MAX_POSITIONS})))
        assert [call.label for call in snapshot.calls] == [request.label for request in requests], name
        assert any(call.raised for call in snapshot.calls), name
