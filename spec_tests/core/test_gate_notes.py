"""A ``noted`` check: what a check finds only on inputs no use of the target produces. It
is said in every output and fails nothing, unless the declaration is ``strict``."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from meta_tests.hostile import report_json
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.output.annotations import github_annotations
from posenc_spec.gate.output.junit import junit_xml
from posenc_spec.gate.output.text import summary_lines
from posenc_spec.gate.report import finish
from posenc_spec.gate.xfails import parse_xfails
from posenc_spec.results import CheckResult, noted

SCHEMA = Path(__file__).resolve().parents[2] / "posenc_spec" / "data" / "report-v1.schema.json"
NOTE = "r = -2147483648 is no difference of two positions: got bucket 0, 16 belongs there"
PLAN = ["import", "formula[50x8]", "int-min[int32]"]


def _report(strict=False, xfails=None):
    declaration = declare({"target": "pkg.mod:fn", "odd": "skip", "strict": strict})
    if xfails is not None:
        declaration = dataclasses.replace(declaration, xfails=parse_xfails(xfails, "posenc-xfails.txt"))
    by_id = {"import": CheckResult("import", "passed", "imported"),
             "formula[50x8]": CheckResult("formula[50x8]", "passed", "within bounds"),
             "int-min[int32]": noted("int-min[int32]", NOTE)}
    return finish(declaration, PLAN, by_id, {}, importable=True)


def test_a_note_fails_nothing_and_is_said():
    """A report whose only finding is a note conforms, and its text names the note and counts it."""
    report = _report()
    assert report.conforms and report.counts()["noted"] == 1
    lines = summary_lines(report)
    assert f"  note  int-min[int32]: {NOTE}" in lines, lines
    assert lines[0].endswith("]: 3 checks, 0 failed, 1 noted: conforms"), lines


def test_strict_makes_a_note_a_failure():
    """Under strict the note is a failure that says why, and the target does not conform."""
    report = _report(strict=True)
    check = report.result("int-min[int32]")
    assert not report.conforms and check.status == "failed" and check.message == f"strict: {NOTE}"


def test_an_xfails_entry_excuses_a_strict_note_and_is_named_otherwise():
    """An entry for a noted check is needed only under strict; without it the entry is named as unneeded."""
    strict = _report(strict=True, xfails="int-min[*]\n")
    assert strict.conforms and strict.result("int-min[int32]").status == "xfailed"
    relaxed = _report(xfails="int-min[*]\n")
    assert relaxed.result("int-min[int32]").status == "noted"
    assert any("a note, not a failure" in warning for warning in relaxed.warnings), relaxed.warnings


@pytest.mark.parametrize("value", [3, "yes", 1.0])
def test_strict_takes_true_or_false_only(value):
    """strict = 3 (or any value but true and false) is a usage error naming the key."""
    with pytest.raises(UsageError, match="strict must be true or false"):
        declare({"target": "pkg.mod:fn", "strict": value})


def test_every_output_carries_a_note():
    """JSON (valid against the schema), JUnit (a passed case with the note) and a GitHub notice all say it."""
    data = report_json([_report()])
    jsonschema = pytest.importorskip("jsonschema", reason="the test extra installs jsonschema")
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    entry = data["targets"][0]
    assert entry["status"] == "conforms" and entry["declaration"]["strict"] is False
    assert [check["status"] for check in entry["checks"]][-1] == "noted"
    case = ET.fromstring(junit_xml(data)).find(".//testcase[@name='int-min[int32]']")
    assert case.find("failure") is None and NOTE in case.find("system-out").text
    notices = [line for line in github_annotations(data) if line.startswith("::notice")]
    assert any("int-min[int32]" in line for line in notices), notices
