"""The gate's grid and engine: the grid tells every preset apart and reaches scale; check
ids are stable; reports hold exactly the planned ids; xfails excuse known deviations and
warn about the rest; the order of turns and the shards."""

from __future__ import annotations

import itertools
import types
from pathlib import Path

import numpy as np
import pytest

from posenc_spec import registry, results
from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import PRESETS
from posenc_spec.families.sinusoidal.grid import probes_for
from posenc_spec.families.sinusoidal.tolerance import table_tolerance
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import _turns, check_many, plan, shard
from posenc_spec.gate.options import run_options
from posenc_spec.gate.xfails import parse_xfails
from posenc_spec.tolerance import compare
from reference_impls.family import sinusoidal_encoding
from spec_tests.assertions import assert_fail_fast_agrees, check_named

HERE = Path(__file__).resolve()
SMALL = 64


def vaswani_zero_padded(n, d):
    return sinusoidal_encoding(n, d, "vaswani", dtype=np.float32, odd="zero-pad")


def all_zeros(n, d):
    return np.zeros((n, d), np.float32)


def all_halves(n, d):
    return np.full((n, d), 0.5, np.float32)


def vaswani_refusing_width_8(n, d):
    if d == 8:
        raise ValueError("width 8 is not supported")
    return sinusoidal_encoding(n, d, "vaswani", dtype=np.float32)


def concat_timesteps(timesteps, d):
    return sinusoidal_encoding(timesteps.double().numpy(), d, "concat", dtype=np.float32)


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
        assert not result.ok, f"{a} passes {b} at {probe.slot}: ratio {result.max_ratio:.3g}"


@pytest.mark.parametrize("api", ["table", "timesteps"])
def test_grid_reaches_scale_and_edges(api):
    """Tables reach 4096 positions (past float16's last integer), both APIs a width past 512
    (a channel index past 256); widths 2, odd 7 and 65, and one position are in; a cap bounds
    every length; --odd skip drops the odd calls."""
    probes = probes_for(api, 1000.0)
    assert max(p.width for p in probes) > 512
    assert api != "table" or max(p.length for p in probes) >= 4096
    ids = {p.check_id for p in probes}
    assert {"degenerate[d=2]", "degenerate[L=1]", "odd[7]", "odd[65]", "determinism"} <= ids
    assert max(p.length for p in probes_for(api, 1000.0, max_positions=300)) == 300
    assert not any(p.role == "odd" for p in probes_for(api, 1000.0, skip_odd=True))


def test_the_largest_calls_are_as_wide_as_their_bugs_need():
    """The longest table is 4096 x 64 (formula, finite, range); float-draws-x1024 calls 256
    draws at width 1024."""
    longest = max(probes_for("table", 1000.0), key=lambda probe: probe.length)
    assert (longest.slot, longest.length, longest.width) == ("4096x64", 4096, 64)
    assert longest.check_ids() == ["call[4096x64]", "finite[4096x64]", "formula[4096x64]", "range[4096x64]"]
    draws = {p.slot: p for p in probes_for("timesteps", 1000.0)}["float-draws-x1024"]
    assert (draws.length, draws.width) == (256, 1024)


@pytest.mark.parametrize("api", registry.apis())
@pytest.mark.parametrize("max_positions", [100, 9])
def test_check_ids_do_not_depend_on_the_grid_options(api, max_positions):
    """An xfails file or a dashboard keyed on check ids keeps working when the cap or t_max
    change: no id is renamed (a family may leave out a call longer than the cap, never
    rename one), and the tables' and timesteps' grids keep every id."""
    default = plan(declare({"target": "m:f", "api": api}))
    capped = plan(declare({"target": "m:f", "api": api, "max_positions": max_positions, "t_max": 5}))
    assert set(capped) <= set(default), sorted(set(capped) - set(default))
    assert len(set(default)) == len(default)
    if api in ("table", "timesteps"):
        assert capped == default


def test_the_repeat_starts_from_other_generator_states():
    """The determinism call repeats a size from the other random state: randomness shows."""
    for api in ("table", "timesteps"):
        probes = probes_for(api, 1000.0)
        repeat = next(p for p in probes if p.role == "repeat")
        first = next(p for p in probes if p.role == "table" and p.slot == repeat.repeats)
        assert (repeat.rng, first.rng) == ("b", "a") and (repeat.length, repeat.width) == (first.length, first.width)


def test_timesteps_are_seeded_and_in_range():
    """Timesteps are int64 and float32 values in [0, t_max], with both ends, the same every run."""
    for t_max in (1000.0, 1.0, 0.5):
        first, second = probes_for("timesteps", t_max), probes_for("timesteps", t_max)
        dtypes = set()
        for a, b in zip(first, second, strict=True):
            assert np.array_equal(a.timesteps, b.timesteps) and a.slot == b.slot
            values = a.timesteps.astype(np.float64)
            assert values.min() >= 0 and values.max() <= t_max, (a.slot, values.min(), values.max())
            dtypes.add(a.timesteps.dtype.name)
        assert dtypes == {"int64", "float32"}


def test_turns_group_modules_and_shards_partition():
    """Turns keep a module's targets together (one import per lane); shards partition the
    declarations and together hold each exactly once."""
    declarations = [declare({"target": target}) for target in ("a:f", "b:f", "a:g", "c:f", "b:g")]
    order = [index for index, _ in _turns(declarations)]
    assert order == [0, 2, 1, 4, 3]
    assert dict(_turns(declarations)) == {0: True, 2: True, 1: True, 4: True, 3: False}
    parts = [shard(list(range(5)), index, 3) for index in (1, 2, 3)]
    assert sorted(sum(parts, [])) == list(range(5)) and parts[0] == [0, 3]


@pytest.fixture(scope="module")
def reports():
    declarations = {
        "table": {"target": f"{HERE}:vaswani_zero_padded"},
        "timesteps": {"target": f"{HERE}:concat_timesteps", "convention": "concat", "api": "timesteps"},
        "xfail-odd": {"target": f"{HERE}:vaswani_zero_padded"},
        "xfail-cause": {"target": f"{HERE}:vaswani_refusing_width_8"},
    }
    made = {name: declare({**keys, "max_positions": SMALL}) for name, keys in declarations.items()}
    made["xfail-odd"] = _with_xfails(made["xfail-odd"], "odd[*]  # zero-padded on purpose\nformula[1x1]\ndeterminism\n")
    made["xfail-cause"] = _with_xfails(made["xfail-cause"], "call[50x8]\n")
    return dict(zip(made, check_many(made.values(), run_options(jobs=2)), strict=True))


def _with_xfails(declaration, text):
    import dataclasses

    return dataclasses.replace(declaration, xfails=parse_xfails(text, "known.txt"))


@pytest.mark.parametrize("name", ["table", "timesteps"])
def test_report_holds_exactly_the_plan(name, reports):
    """A report lists every planned check id once, in the planned order."""
    report = reports[name]
    assert [check.name for check in report.checks] == plan(report.declaration)


def test_without_xfails_odd_tables_fail(reports):
    """The zero-padded table under odd='error' fails exactly the two odd checks."""
    report = reports["table"]
    assert [check.name for check in report.failures()] == ["odd[7]", "odd[65]"]
    assert report.status == "does-not-conform"
    assert reports["timesteps"].conforms, reports["timesteps"].failures()[:3]


def test_xfails_excuse_and_warn(reports):
    """Matched failures are xfailed with their reason; an entry that matches no check, or
    whose check passed (xpassed), is warned about with its file and line."""
    report = reports["xfail-odd"]
    assert report.conforms and report.status == "conforms"
    assert [check.name for check in report.checks if check.status == "xfailed"] == ["odd[7]", "odd[65]"]
    assert report.result("odd[7]").message.startswith("known deviation (zero-padded on purpose): returned a 50x7")
    assert report.result("determinism").status == "xpassed"
    assert report.warnings == [
        "known.txt, line 3: 'determinism' passed at determinism: the known deviation is gone, remove the entry",
        "known.txt, line 2: 'formula[1x1]' matches no check of this run"]


def test_xfail_excuses_the_checks_its_failure_stopped(reports):
    """An excused call excuses the checks that could not run because of it, and only those."""
    report = reports["xfail-cause"]
    assert report.conforms, report.failures()[:3]
    excused = {check.name for check in report.checks if check.status == "xfailed"}
    assert {"call[50x8]", "formula[50x8]"} <= excused
    assert not any(name.endswith("[50x4]") for name in excused)


def test_a_rotary_declaration_is_not_judged_by_the_sinusoidal_vacuity_rule():
    """One position is too few to tell sinusoidal shifts apart, and the gate refuses such a
    table declaration; a rotary grid is fixed by head sizes and positions, so the same cap
    on a RoPE target is no reason to refuse it."""
    from posenc_spec.gate.errors import UsageError

    table = declare({"target": "a.b:c", "max_positions": 1})
    with pytest.raises(UsageError, match="cannot be checked at these options"):
        table.family.assert_checkable(table)
    rotary = declare({"target": "a.b:c", "api": "rope-apply", "max_positions": 1})
    rotary.family.assert_checkable(rotary)


def test_finished_slot_templates_are_collected(tmp_path):
    """After runs with two lanes, no process below the root template is left a zombie."""
    from posenc_spec.gate.child.limits import descendants
    from posenc_spec.gate.sandbox import root_template_pids

    target = tmp_path / "zero.py"
    target.write_text("import numpy as np\n\ndef table(n, d):\n    return np.zeros((n, d))\n")
    declarations = [declare({"target": f"{target}:table", "max_positions": 8, "odd": "skip"})] * 3
    for _ in range(3):
        check_many(declarations, run_options(jobs=2))
    roots = root_template_pids()
    assert roots, "no root template is running after the runs"
    states = {}
    for pid in (pid for root in roots for pid in descendants(root)):
        try:
            states[pid] = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
    assert "Z" not in states.values(), f"zombies below the root templates: {states}"


def test_assert_fail_fast_agrees_fails_on_a_verdict_or_a_failure_the_full_run_lacks():
    """The corpora's fail-fast helper can fail: a claimed pass of a wrong target, and a
    failure the full run does not have, are each an AssertionError naming the target."""
    wrong = {"wrong": declare({"target": "reference_impls.numpy_vectorized:positional_encoding",
                               "convention": "concat", "max_positions": 64})}
    full = check_named(wrong)["wrong"]
    claimed_pass = types.SimpleNamespace(conforms=True, failures=list)
    extra = types.SimpleNamespace(conforms=False, failures=lambda: [*full.failures(), results.skipped("made-up", "")])
    for fast, words in ((claimed_pass, "conforms=False in full, True"), (extra, "made-up")):
        with pytest.raises(AssertionError, match=words):
            assert_fail_fast_agrees({"wrong": fast}, wrong)
    assert_fail_fast_agrees({"wrong": full}, wrong)


@pytest.mark.parametrize(("target", "slip", "words"), [
    ("all_zeros", "values-all-zero", "is 0: the table is never filled"),
    ("all_halves", "values-constant", "is 0.5: the positions"),
])
def test_a_table_of_one_value_is_named(target, slip, words):
    """A table of zeros, or of one constant, gets the hint that says so (no key declares it)."""
    report = check_named({target: declare({"target": f"{HERE}:{target}", "max_positions": SMALL})})[target]
    assert [hint.slips for hint in report.hints] == [(slip,)], [hint.text() for hint in report.hints]
    assert words in report.hints[0].text() and not report.hints[0].declare, report.hints[0].text()
