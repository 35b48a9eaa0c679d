"""The gate's grid and engine: the grid tells every preset apart and reaches scale; reports
hold exactly the planned check ids; xfails excuse known deviations and warn about the rest."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from posenc_spec import oracle
from posenc_spec.conventions import PRESETS
from posenc_spec.gate import GateSpec, check_many, exit_status, session
from posenc_spec.gate.grid import probes_for
from posenc_spec.tolerance import compare, table_tolerance
from reference_impls.family import sinusoidal_encoding

HERE = Path(__file__).resolve()
SMALL = 64


def vaswani_zero_padded(n, d):
    return sinusoidal_encoding(n, d, "vaswani", dtype=np.float32, odd="zero-pad")


def vaswani_refusing_width_8(n, d):
    if d == 8:
        raise ValueError("width 8 is not supported")
    return sinusoidal_encoding(n, d, "vaswani", dtype=np.float32)


def concat_timesteps(timesteps, d):
    return sinusoidal_encoding(timesteps.numpy(), d, "concat", dtype=np.float32)


@pytest.mark.parametrize("api, t_max", [("table", 1000.0), ("timesteps", 1000.0), ("timesteps", 1.0)])
def test_first_call_tells_every_preset_apart(api, t_max):
    """At the first size of the grid (50 positions, width 8) every preset's float32 table
    fails every other preset's formula check (for timesteps in [0, 1] too)."""
    probe = probes_for(api, t_max)[0]
    assert (probe.length, probe.width) == (50, 8)
    for a, b in itertools.permutations(PRESETS, 2):
        table = oracle.table(probe.positions, probe.width, a).astype(np.float32)
        bound = table_tolerance(probe.positions, probe.width, b, "float32")
        result = compare(table, oracle.table(probe.positions, probe.width, b), bound)
        assert not result.ok, f"{a} passes {b} at {probe.label}: ratio {result.max_ratio:.3g}"


@pytest.mark.parametrize("api", ["table", "timesteps"])
def test_grid_reaches_scale_and_edges(api):
    """Lengths reach 4096 and widths 1024; widths 2, odd 7 and 65, and one position are in;
    a cap bounds every length; --odd skip drops the odd calls."""
    probes = probes_for(api, 1000.0)
    assert max(p.length for p in probes) >= 4096 and max(p.width for p in probes) >= 1024
    ids = {p.check_id for p in probes}
    assert {"degenerate[d=2]", "degenerate[L=1]", "odd[7]", "odd[65]", "determinism"} <= ids
    assert max(p.length for p in probes_for(api, 1000.0, max_positions=300)) == 300
    assert not any(p.role == "odd" for p in probes_for(api, 1000.0, skip_odd=True))


def test_timesteps_are_seeded_and_in_range():
    """Timesteps are int64 and float32 values in [0, t_max], with both ends, the same every run."""
    for t_max in (1000.0, 1.0, 0.5):
        first, second = probes_for("timesteps", t_max), probes_for("timesteps", t_max)
        dtypes = set()
        for a, b in zip(first, second, strict=True):
            assert np.array_equal(a.timesteps, b.timesteps) and a.label == b.label
            values = a.timesteps.astype(np.float64)
            assert values.min() >= 0 and values.max() <= t_max, (a.label, values.min(), values.max())
            dtypes.add(a.timesteps.dtype.name)
        assert dtypes == {"int64", "float32"}
        float_probe = next(p for p in first if p.timesteps.dtype == np.float32)
        assert float_probe.timesteps.max() == np.float32(t_max) or float_probe.timesteps.max() < t_max


@pytest.fixture(scope="module")
def reports():
    vaswani = PRESETS["vaswani"]
    specs = {
        "table": GateSpec(f"{HERE}:vaswani_zero_padded", vaswani, max_positions=SMALL),
        "timesteps": GateSpec(f"{HERE}:concat_timesteps", PRESETS["concat"], api="timesteps", max_positions=SMALL),
        "xfail-odd": GateSpec(f"{HERE}:vaswani_zero_padded", vaswani, max_positions=SMALL,
                              xfails=frozenset({"odd[7]", "odd[65]", "formula[1x1]", "determinism"})),
        "xfail-cause": GateSpec(f"{HERE}:vaswani_refusing_width_8", vaswani, max_positions=SMALL,
                                xfails=frozenset({"call[50x8]"})),
    }
    with session():
        return dict(zip(specs, check_many(specs.values()), strict=True))


@pytest.mark.parametrize("name", ["table", "timesteps"])
def test_report_holds_exactly_the_plan(name, reports):
    """A report lists every planned check id once, in the planned order."""
    report = reports[name]
    spec = GateSpec(report.target, report.convention, api=report.api, max_positions=SMALL)
    assert [check.name for check in report.checks] == spec.plan()
    assert len(set(spec.plan())) == len(spec.plan())


def test_without_xfails_odd_tables_fail(reports):
    """The zero-padded table under odd='error' fails exactly the two odd checks (exit 1)."""
    report = reports["table"]
    assert [check.name for check in report.failures()] == ["odd[7]", "odd[65]"]
    assert exit_status([report]) == 1
    assert reports["timesteps"].conforms, reports["timesteps"].failures()[:3]


def test_xfails_excuse_and_warn(reports):
    """Listed failures are excused (exit 0, marked in the message); a listed id that matches no
    check, or that passed, is warned about."""
    report = reports["xfail-odd"]
    assert report.conforms and report.excused == {"odd[7]", "odd[65]"}
    assert report.result("odd[7]").message.startswith("[xfail] returned a 50x7 table")
    assert report.warnings == ["xfails entry 'determinism' passed: the known deviation is gone, remove the entry",
                               "xfails entry 'formula[1x1]' matches no check of this run"]
    assert exit_status([report]) == 0


def test_xfail_excuses_the_checks_its_failure_stopped(reports):
    """An excused call excuses the checks that could not run because of it, and only those."""
    report = reports["xfail-cause"]
    assert report.conforms, report.failures()[:3]
    assert "formula[50x8]" in report.excused and "call[50x8]" in report.excused
    assert not any(name.endswith("[50x4]") for name in report.excused)


def test_gate_spec_validation():
    """GateSpec refuses a bad API, t_max, cap, xfails or timeout, and takes a preset by name."""
    assert GateSpec("m:f", "concat").convention == PRESETS["concat"]
    for fields, words in [({"api": "batch"}, "api must be one of"), ({"t_max": float("nan")}, "t_max must be"),
                          ({"max_positions": 0}, "max_positions must be"), ({"timeout": 0}, "timeout must be"),
                          ({"xfails": "odd[7]"}, "xfails must be a collection")]:
        with pytest.raises((ValueError, TypeError), match=words.replace("[", r"\[")):
            GateSpec("m:f", "vaswani", **fields)
