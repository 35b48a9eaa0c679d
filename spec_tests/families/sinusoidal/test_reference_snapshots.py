"""The reference implementations against their committed snapshots, here and under every CPU
capability this machine has (see ``spec_tests/reference_snapshots.py`` for what moves
where), and a default-grid snapshot of each small enough to commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from posenc_spec.environment import cpu_flags, numeric_environment, torch_cpu_capability
from posenc_spec.gate import against
from posenc_spec.gate.against import snapshot_requests
from posenc_spec.gate.calls import Outcome
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import probes
from posenc_spec.regression import Snapshot, snapshot_meta, write_snapshot
from posenc_spec.regression.snapshot_reader import read_snapshot
from spec_tests.assertions import check_named
from spec_tests.reference_snapshots import FOLDER, MAX_POSITIONS, SNAPSHOTS

ROOT = FOLDER.parent.parent
MAX_COMMITTED_BYTES = 2**20  # the size a snapshot must stay within to be committed


def _declarations() -> dict:
    return {name: declare({"target": target, "convention": convention, "against": str(FOLDER / name),
                           "max_positions": MAX_POSITIONS})
            for name, (target, _, convention) in SNAPSHOTS.items()}


@pytest.fixture(scope="module")
def reports():
    return check_named(_declarations())


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_reference_matches_its_snapshot(name, reports):
    """Every recorded call returns what it returned when recorded: the same bits in the same
    numeric environment, within the convention's tolerance in another."""
    result = reports[name].result("regression")
    assert result.status == "passed", f"{SNAPSHOTS[name][0]}: {result.message}"


def _variants() -> dict[str, dict[str, str]]:
    """The environments to check in: each torch capability this CPU runs, and NumPy without
    the SIMD paths it dispatches to here."""
    best = torch_cpu_capability(cpu_flags(), os.uname().machine, None)
    capabilities = {"default": 0, "avx2": 1, "avx512": 2}
    variants = {f"ATEN_CPU_CAPABILITY={name}": {"ATEN_CPU_CAPABILITY": name}
                for name, rank in capabilities.items() if best is not None and rank <= capabilities[best]}
    dispatched = (numeric_environment()["numpy_simd"] or {}).get("dispatched")
    if dispatched:
        variants["NPY_DISABLE_CPU_FEATURES"] = {"NPY_DISABLE_CPU_FEATURES": " ".join(dispatched)}
    return variants


# Run in a fresh process, where torch and NumPy choose their kernels as they import: the
# check of the four snapshots (JSON on stdout), then the capability the snapshot would
# record and, with a second argument, torch's own (it costs an import of torch).
_CHILD = """
import sys
from posenc_spec.cli import main
from posenc_spec.environment import numeric_environment
status = main(["check", "--config", sys.argv[1], "-j", "1", "--json", "-"])
derived = numeric_environment()["torch_cpu_capability"]
if len(sys.argv) > 2:
    import torch
    reported = torch.backends.cpu.get_cpu_capability().lower()
else:
    reported = derived
print(status, reported, derived, file=sys.stderr)
"""


@pytest.mark.parametrize("variant", list(_variants()))
def test_snapshots_hold_under_every_cpu_capability(variant, tmp_path):
    """Under each of torch's CPU capabilities and without NumPy's dispatched SIMD, the four
    snapshots pass (bit for bit where the environment is the recorded one, else within the
    tolerance); under an overriding capability, the one a snapshot would record is the one
    torch reports (without an override, test_regression_environment checks it in-process)."""
    config = tmp_path / "gate.toml"
    config.write_text("".join(f'[[targets]]\ntarget = "{target}"\nconvention = "{convention}"\n'
                              f'against = "{FOLDER / name}"\nmax_positions = {MAX_POSITIONS}\n\n'
                              for name, (target, _, convention) in SNAPSHOTS.items()))
    overrides = _variants()[variant]
    ask_torch = ["torch"] if "ATEN_CPU_CAPABILITY" in overrides else []
    done = subprocess.run([sys.executable, "-c", _CHILD, str(config), *ask_torch], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **overrides, "PYTHONPATH": str(ROOT)}, timeout=120)
    status, reported, derived = done.stderr.split()[-3:]
    assert (status, derived) == ("0", reported), f"{variant}: exit {status}, torch {reported}, derived {derived}"
    for target in json.loads(done.stdout)["targets"]:
        check = next(check for check in target["checks"] if check["id"] == "regression")
        assert check["status"] == "passed", f"{variant}: {target['target']}: {check['reason']}"


def test_snapshots_hold_the_grid_they_say():
    """Each committed snapshot holds its reference's API and every call the gate makes for
    it at the recorded cap, in the gate's order (11 for a table, 9 for timesteps)."""
    for name, (target, api, _) in SNAPSHOTS.items():
        snapshot = read_snapshot(FOLDER / name)
        assert (snapshot.meta["target"], snapshot.api) == (target, api), name
        requests = snapshot_requests(probes(declare({"target": target, "api": api, "max_positions": MAX_POSITIONS})))
        assert [call.label for call in snapshot.calls] == [request.label for request in requests], name
        assert any(call.raised for call in snapshot.calls), name


def _run_in_process(function, request):
    """One call of a grid made here, as the sealed child would return it."""
    import torch

    args = [arg if isinstance(arg, int) else torch.from_numpy(arg.values) for arg in request.args]
    try:
        value = function(*args)
    except Exception as error:  # noqa: BLE001 - recorded as raising, as the gate records it
        return Outcome("raised", str(error), exception=type(error).__name__)
    value = value.numpy() if isinstance(value, torch.Tensor) else value
    return Outcome("ok", "", [value], [value.dtype.name], ["numpy"])


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_a_default_grid_snapshot_is_small_enough_to_commit(name, tmp_path):
    """The full default grid of each reference (up to 4096 positions), recorded exactly, takes at
    most a MiB (17.8 MiB for torch's float32 table stored as plain bits, compressed)."""
    import importlib

    target, api, _ = SNAPSHOTS[name]
    module, _, attribute = target.partition(":")
    function = getattr(importlib.import_module(module), attribute)
    requests = snapshot_requests(probes(declare({"target": target, "api": api})))
    calls = tuple(against.record(request, _run_in_process(function, request)) for request in requests)
    path = write_snapshot(tmp_path / name, Snapshot(snapshot_meta(target, api), calls))
    read = read_snapshot(path)
    elements = sum(out.values.size for call in calls for out in call.outputs or ())
    assert all(a == b for a, b in zip(read.calls, calls, strict=True)), f"{name}: not exact"
    assert path.stat().st_size <= MAX_COMMITTED_BYTES, (
        f"{name}: {path.stat().st_size} bytes for {elements} elements, more than {MAX_COMMITTED_BYTES}")
