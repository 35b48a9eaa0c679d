"""The reference implementations against their committed snapshots, bit for bit (see
``spec_tests/reference_snapshots.py`` for why 0 ULP and where that holds)."""

from __future__ import annotations

import pytest

from posenc_spec.environment import environment
from posenc_spec.gate.declaration import declare
from posenc_spec.regression.snapshot_reader import read_snapshot
from spec_tests.assertions import check_named
from spec_tests.reference_snapshots import FOLDER, MAX_ULP, SNAPSHOTS


@pytest.fixture(scope="module")
def reports():
    declarations = {name: declare({"target": target, "against": str(FOLDER / name), "max_ulp": MAX_ULP})
                    for name, (target, _) in SNAPSHOTS.items()}
    return check_named(declarations)


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_reference_matches_its_snapshot(name, reports):
    """Every recorded call returns the same bits (or raises the same exception type) today."""
    recorded = read_snapshot(FOLDER / name).meta["environment"]["platform"]
    if recorded != environment()["platform"]:
        pytest.skip(f"{name} was recorded on {recorded}; this is {environment()['platform']}: record this "
                    "platform's with tox -e snapshots-regenerate and compare")
    result = reports[name].result("regression")
    assert result.status == "passed", f"{SNAPSHOTS[name][0]}: {result.message}"


def test_snapshots_hold_the_grid_they_say():
    """Each committed snapshot holds its reference's API and every slot of the capped grid."""
    for name, (target, api) in SNAPSHOTS.items():
        snapshot = read_snapshot(FOLDER / name)
        assert (snapshot.meta["target"], snapshot.api) == (target, api), name
        assert len(snapshot.calls) >= 9 and any(call.raised for call in snapshot.calls), name
