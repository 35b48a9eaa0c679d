"""Hints from the tables alone: each slip of docs/checks.md's list that the corpora do not plant is
named from tables made by the oracle (``d - 1`` denominators, theta off, a scaling factor
applied twice), ambiguity at one width names every possible cause, and tables no slip
explains (noise, rows that repeat one row) get no hint. Then the hint as each report gives it,
and the TOML and flags it writes."""

from __future__ import annotations

import tomllib
from xml.etree import ElementTree

import jsonschema
import numpy as np
import pytest

from meta_tests.corpus.rope_registry import cache_outcome
from meta_tests.hostile import report_json
from meta_tests.reports import gate_report
from posenc_spec.families.rope import grid
from posenc_spec.families.rope import oracle as rope_oracle
from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.slips import diagnose as diagnose_rope
from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import get_convention
from posenc_spec.families.sinusoidal.fit import Sample
from posenc_spec.families.sinusoidal.slips import Table, diagnose
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.identify import toml_text
from posenc_spec.gate.identify.hint import SLIPS, Hint
from posenc_spec.gate.output import annotations, json_report, junit
from posenc_spec.gate.output.text import summary_lines
from posenc_spec.results import CheckResult

SIZES = ((50, 8), (128, 64))


def _tables(make, sizes=SIZES, failed=True):
    """Tables of ``make(positions, width)`` at ``sizes``, float64, each marked as failing."""
    found = []
    for length, width in sizes:
        positions = np.arange(length, dtype=np.float64)
        found.append(Table(f"{length}x{width}", Sample(make(positions, width), "float64", positions), length, failed))
    return found


def _slips(hints) -> list[str]:
    return [slip for hint in hints for slip in hint.slips]


def test_d_minus_one_denominator_is_named_across_widths():
    """``2i/(d-1)`` for ``2i/d`` is no member of the family (its base changes with the width):
    the hint names it, and no key (nothing declares it)."""
    def d_minus_one(positions, width):
        return oracle.table(positions, width, get_convention("vaswani", base=10000.0 ** (width / (width - 1))))

    hints = diagnose(get_convention("vaswani"), "table", _tables(d_minus_one))
    assert _slips(hints) == ["denominator-d-minus-one"] and not hints[0].declare, [h.text() for h in hints]


def test_one_width_names_each_cause_it_cannot_tell_apart():
    """At width 8 alone, ``half_dim`` (shift 0) and base 1000 under shift 1 make the same
    frequencies: the hint names both; a second width names the shift alone."""
    def shift_zero(positions, width):
        return oracle.table(positions, width, "concat")

    declared = get_convention("tensor2tensor")
    alone = diagnose(declared, "table", _tables(shift_zero, sizes=((50, 8),)))
    assert set(_slips(alone)) == {"denominator-half-dim", "base"} and "base 1000" in alone[0].text(), alone
    both = diagnose(declared, "table", _tables(shift_zero))
    assert _slips(both) == ["denominator-half-dim"] and both[0].flags == "--freq-shift 0", both


@pytest.mark.parametrize("make", [
    lambda positions, width: np.random.default_rng(width).uniform(-1, 1, (positions.size, width)),
    lambda positions, width: np.tile(oracle.table(np.zeros(1), width, "vaswani"), (positions.size, 1)),
], ids=["random values", "every row position 0's, timesteps"])
def test_no_hint_without_an_explanation(make):
    """Random values, and timesteps whose rows all repeat one row (a member whose angles turn
    by whole turns between rows fits them, but that is no evidence): no hint."""
    assert diagnose(get_convention("tensor2tensor"), "timesteps", _tables(make)) == []


def test_no_hint_when_nothing_failed():
    """Hints are for failures: tables that pass get none, whatever they are."""
    tables = _tables(lambda positions, width: oracle.table(positions, width, "vaswani"), failed=False)
    assert diagnose(get_convention("vaswani"), "table", tables) == []


def _rope_calls(spec, made: RopeConvention, api="rope-cache"):
    probes = [probe for probe in grid.probes_for(spec, api) if probe.role == "table"]
    return [(probe, cache_outcome(*rope_oracle.cache(probe.positions, made, probe.head_dim))) for probe in probes]


@pytest.mark.parametrize(("declared", "made", "slip", "flags"), [
    (RopeConvention(theta=500000.0), RopeConvention(), "theta", "--base 10000"),
    (RopeConvention("linear", params={"factor": 2.0}), RopeConvention("linear", params={"factor": 4.0}),
     "scale-twice", "--rope-param factor=4"),
], ids=["theta off", "linear factor applied twice"])
def test_rope_slips_the_corpus_does_not_plant(declared, made, slip, flags):
    """A cache made with theta 10000 where 500000 is declared, and one scaled by factor 4 where
    linear factor 2 is declared: each hint names the slip and the flags that declare it."""
    spec = declare({"target": "m:f", "api": "rope-cache", "rope_theta": declared.theta,
                    "rope_type": declared.rope_type, "rope_parameters": declared.params_dict()}).spec
    calls = _rope_calls(spec, made)
    statuses = {f"formula[{probe.slot}]": "failed" for probe, _ in calls}
    hints = diagnose_rope(spec, "rope-cache", calls, statuses)
    assert _slips(hints) == [slip] and hints[0].flags == flags, [hint.text() for hint in hints]


HINT = Hint(("layout",), "the columns are concat where interleaved is declared", (("layout", "concat"),))


def _hinted_report():
    report = gate_report([CheckResult("formula[50x8]", "failed", "400 of 400 out of bound")])
    report.hints = [HINT]
    return report


def test_every_report_gives_the_same_hint():
    """The text summary (its keys spelled as the declaration was: TOML keys here), the JSON
    report (valid under the shipped schema), the JUnit failure and its suite's properties, and
    a GitHub notice all carry the hint's text, flags and keys."""
    text = HINT.text()
    assert text.endswith('declare --layout concat (layout = "concat") (slip: layout)'), text
    assert '  hint: the columns are concat where interleaved is declared; if that is intended, declare layout = ' \
           '"concat" (slip: layout)' in summary_lines(_hinted_report())
    data = report_json([_hinted_report()])
    jsonschema.validate(data, json_report.schema())
    assert data["targets"][0]["hints"] == [{"slips": ["layout"], "text": text, "flags": "--layout concat",
                                            "keys": 'layout = "concat"', "keywords": "layout='concat'",
                                            "declare": {"layout": "concat"}}]
    suite = ElementTree.fromstring(junit.junit_xml(data)).find("testsuite")
    assert suite.find("testcase/failure").text.splitlines()[-1] == f"hint: {text}"
    assert [prop.get("value") for prop in suite.iter("property") if prop.get("name") == "hint"] == [text]
    notices = [line for line in annotations.github_annotations(data) if line.startswith("::notice")]
    assert len(notices) == 1 and "posenc-spec hint" in notices[0], notices


def test_every_wrong_corpus_entry_says_what_its_hint_is():
    """meta_tests/corpus/hints.py lists each wrong entry of both corpora once: its planted slip
    (a slip a hint names), or why it gets no hint."""
    from meta_tests.corpus import WRONG
    from meta_tests.corpus import hints as expected
    from meta_tests.corpus.rope_registry import ROPE_WRONG

    for listed, entries in ((expected.SINUSOIDAL, WRONG), (expected.ROPE, ROPE_WRONG)):
        assert sorted(listed) == sorted(entry.id for entry in entries)
        reasons = {expected.NOT_A_MEMBER, expected.NOT_VALUES, expected.LOW_PRECISION, expected.NOISE,
                   expected.TWO_SLIPS}
        assert all(value in SLIPS or value in reasons for value in listed.values()), listed


def test_every_slip_is_in_the_docs_in_its_words():
    """docs/checks.md's list of the slips a hint names holds each id with the words the code uses."""
    from pathlib import Path

    checks = (Path(__file__).resolve().parents[3] / "docs" / "checks.md").read_text(encoding="utf-8")
    listed = checks.split("## The slips a hint names", 1)[1].split("\n## ", 1)[0]
    missing = [slip for slip, words in SLIPS.items() if f"`{slip}`: {words}" not in listed]
    assert not missing, f"docs/checks.md lacks these slips (as `id`: words): {missing}"


@pytest.mark.parametrize("value", ['a "quoted" \\ path\n\x01\x7f é', 3, 2.0, 1e-7, -0.5, True, [1.0, 2.5],
                                   {"factor": 8.0, "truncate": False}])
def test_toml_values_read_back_the_same(value):
    """What a hint's keys and ``init`` write is TOML that tomllib reads back as the same value
    (a float stays a float, a string keeps every character)."""
    parsed = tomllib.loads(f"key = {toml_text.value(value)}\n")["key"]
    assert parsed == value and type(parsed) is type(value), (value, parsed)
