"""What the gate writes for CI services: JUnit XML (checked against Jenkins' JUnit schema and
parsed back) and GitHub Actions annotations (parsed back as the runner parses them), from
reports built by the JSON report's own functions."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from meta_tests.hostile import report_json
from meta_tests.reports import gate_report
from posenc_spec.gate.output import json_report
from posenc_spec.gate.output.annotations import MAX_PER_STEP, github_annotations
from posenc_spec.gate.output.junit import junit_xml
from posenc_spec.results import CheckResult, Worst
from posenc_spec.text import TERMINAL_CONTROLS

JUNIT_XSD = Path(__file__).resolve().parents[2] / "spec_tests" / "data" / "junit-10.xsd"
WORST = Worst((3, 4), (50, 8), 0.5, 0.25, 0.25, 1e-7)
# Every kind of character that needs care: XML markup, a CDATA end, quotes, and characters
# XML 1.0 forbids even escaped (NUL, ESC, a lone surrogate, U+FFFE).
HOSTILE = 'said "no" & \'why\' <b>]]> \x00\x1b \udcff \ufffe\ttab\nnext line'
HOSTILE_AS_XML = 'said "no" & \'why\' <b>]]> \\x00\\x1b \\udcff \\ufffe\ttab\nnext line'


def _every_status():
    return gate_report([CheckResult("import", "passed", "imported"),
                        CheckResult("formula[50x8]", "failed", "wrong values", WORST),
                        CheckResult("range[50x8]", "failed", "out of [-1, 1]"),
                        CheckResult("position-zero[50x8]", "skipped", "no row stands for position 0"),
                        CheckResult("odd[7]", "xfailed", "known deviation: ceil"),
                        CheckResult("determinism", "xpassed", "same twice"),
                        CheckResult("global-state", "passed", "untouched")],
                       target="pkg.mod:every", warnings=["posenc-xfails.txt, line 2: 'determinism' passed"],
                       where=("/src/pkg/mod.py", 7), seconds=1.25)


def _unimportable():
    return gate_report([CheckResult("import", "failed", "ModuleNotFoundError: No module named 'nowhere'"),
                        CheckResult("formula[50x8]", "skipped", "not run: the target could not be imported")],
                       target="nowhere.mod:fn", importable=False)


def _suites(text):
    return ET.fromstring(text.encode("utf-8")).findall("testsuite")


def test_junit_validates_against_jenkins_junit_schema():
    """Every status, warnings, an import error and a hostile reason give a file the schema accepts."""
    xmlschema = pytest.importorskip("xmlschema", reason="the test extra installs xmlschema")
    hostile = gate_report([CheckResult("formula[50x8]", "failed", HOSTILE)], target="pkg.mod:hostile")
    text = junit_xml(report_json([_every_status(), _unimportable(), hostile]))
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(text)


def test_junit_has_one_suite_per_target_and_counts_each_status():
    """Suites in report order, one testcase per check id; failures, errors and skipped (with
    xfailed) per suite agree with the report's own counts, and <testsuites> sums them."""
    reports = [_every_status(), _unimportable(), gate_report([], target="pkg.mod:empty")]
    root = ET.fromstring(junit_xml(report_json(reports)).encode("utf-8"))
    suites = root.findall("testsuite")
    assert [suite.get("name") for suite in suites] == [report.declaration.name for report in reports]
    for suite, report in zip(suites, reports, strict=True):
        counts = report.counts()
        errors = 0 if report.importable else 1
        assert {key: int(suite.get(key)) for key in ("tests", "failures", "errors", "skipped")} == {
            "tests": len(report.checks), "failures": counts["failed"] - errors, "errors": errors,
            "skipped": counts["skipped"] + counts["xfailed"]}, suite.attrib
        cases = suite.findall("testcase")
        assert [case.get("name") for case in cases] == [check.name for check in report.checks]
        assert {case.get("classname") for case in cases} <= {report.declaration.name}
    for key in ("tests", "failures", "errors"):
        assert int(root.get(key)) == sum(int(suite.get(key)) for suite in suites), key
    assert suites[0].get("time") == "1.250" and suites[0].get("file") == "/src/pkg/mod.py"


def test_junit_marks_each_status_as_reporters_expect():
    """failure with the check family and the worst element; skipped for skips and xfails
    (the message says xfail); nothing for passes; warnings in the suite's system-out."""
    (suite,) = _suites(junit_xml(report_json([_every_status()])))
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    failure = cases["formula[50x8]"].find("failure")
    assert failure.get("message") == "wrong values" and failure.get("type") == "formula"
    assert "worst element [3, 4] of 50x8: actual 0.5, expected 0.25" in failure.text
    assert cases["range[50x8]"].find("failure").get("type") == "range"
    assert cases["position-zero[50x8]"].find("skipped").get("message") == "no row stands for position 0"
    assert cases["odd[7]"].find("skipped").get("message") == "xfail: known deviation: ceil"
    assert "xpassed" in cases["determinism"].find("system-out").text
    assert list(cases["import"]) == [] and list(cases["global-state"]) == []
    assert suite.find("system-out").text == "warning: posenc-xfails.txt, line 2: 'determinism' passed"
    properties = {prop.get("name"): prop.get("value") for prop in suite.find("properties")}
    assert properties == {"status": "does-not-conform", "resolved": "pkg.mod:every", "line": "7"}


def test_junit_import_failure_is_an_error_not_a_failure():
    (suite,) = _suites(junit_xml(report_json([_unimportable()])))
    cases = suite.findall("testcase")
    error = cases[0].find("error")
    assert error is not None and cases[0].find("failure") is None, ET.tostring(cases[0])
    assert error.get("message") == "ModuleNotFoundError: No module named 'nowhere'" and error.get("type") == "import"
    assert cases[1].find("skipped").get("message") == "not run: the target could not be imported"


def test_junit_escapes_hostile_text_and_replaces_what_xml_forbids():
    """Markup, ]]> and quotes come back unchanged; NUL, ESC, a lone surrogate and U+FFFE come
    back as backslash escapes; the text encodes to UTF-8 and parses."""
    report = gate_report([CheckResult(HOSTILE, "failed", HOSTILE)], target="pkg.mod:fn", warnings=[HOSTILE])
    text = junit_xml(report_json([report]))
    (suite,) = _suites(text)
    case = suite.find("testcase")
    assert case.get("name") == HOSTILE_AS_XML and case.find("failure").get("message") == HOSTILE_AS_XML
    assert case.find("failure").text == HOSTILE_AS_XML
    assert suite.find("system-out").text == f"warning: {HOSTILE_AS_XML}"
    assert "]]>" not in text and "<b>" not in text


# What a terminal acts on and what a CI runner runs, in a target's name and its reason.
TERMINAL = "\x7f \x9b2J \u202eevil\u2069 \u2028 ##[error]old ##vso[task]x"
NAME = "::add-mask::x/pe.py:fn"


def test_junit_writes_what_a_terminal_acts_on_as_references():
    """DEL, C1, bidi and line separators, ``##[`` and a line that starts with ``::`` are
    written as character references: the raw text holds none of them, and it parses back
    to exactly the same values."""
    report = gate_report([CheckResult("formula[50x8]", "failed", f"{TERMINAL}\n::error::forged")], target=NAME,
                         warnings=["w\n::warning::forged"])
    text = junit_xml(report_json([report]))
    (suite,) = _suites(text)
    assert suite.get("name") == NAME and suite.find("testcase").find("failure").get("message") == \
        f"{TERMINAL}\n::error::forged"
    assert suite.find("system-out").text == "warning: w\n::warning::forged"
    assert not re.search(f"[{TERMINAL_CONTROLS}]", text) and "##[" not in text and "##vso[" not in text
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")], text


def test_json_report_holds_no_workflow_command_and_reads_back_the_same():
    """The JSON text is ASCII with no ``##[`` or ``##vso[``, and parses back to the report."""
    data = report_json([gate_report([CheckResult("formula[50x8]", "failed", TERMINAL)], target=NAME)])
    text = json_report.to_text(data)
    assert text.isascii() and "##[" not in text and "##vso[" not in text
    assert json.loads(text) == data


def test_junit_is_deterministic():
    """The same report gives the same text: no timestamp or host name is written."""
    data = report_json([_every_status(), _unimportable()])
    assert junit_xml(data) == junit_xml(json.loads(json.dumps(data)))
    assert not re.search(r"timestamp=|hostname=", junit_xml(data))


@pytest.mark.parametrize("report", [None, {"targets": "none"}, [{"target": "x"}]])
def test_writers_refuse_what_is_not_a_report(report):
    for writer in (junit_xml, github_annotations):
        with pytest.raises(ValueError, match="report must be a posenc-spec report dict"):
            writer(report)


_UNESCAPES = {"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}


def _parse_command(line):
    """A workflow command split as the runner splits it: the level, the properties (split on
    , and the first =) and the message, each unescaped in one pass."""
    assert "\n" not in line and "\r" not in line, line
    match = re.fullmatch(r"::(\w+)(?: ([^:]*))?::(.*)", line)
    assert match, line
    level, properties, message = match.groups()

    def unescape(text):
        return re.sub(r"%(25|0D|0A|3A|2C)", lambda m: _UNESCAPES[m.group()], text)

    fields = dict(part.split("=", 1) for part in properties.split(",")) if properties else {}
    return level, {key: unescape(value) for key, value in fields.items()}, unescape(message)


def test_annotations_escape_properties_and_message(tmp_path):
    """A reason with %, text that looks escaped, CR and LF, a path with commas and colons: the runner's parsing gives
    back the exact path (relative to the root), line and reason, on one line each."""
    source = tmp_path / "my,dir:x" / "pe.py"
    reason = "100% wrong: %0A and %3A are text\r\nat 5:6, again"
    report = gate_report([CheckResult("formula[50x8]", "failed", reason)], target=f"{source}:fn",
                         where=(str(source), 12))
    (line,) = github_annotations(report_json([report]), root=tmp_path)
    assert line.startswith("::error file=my%2Cdir%3Ax/pe.py,line=12,title=posenc-spec formula[50x8]::"), line
    level, properties, message = _parse_command(line)
    assert level == "error" and properties == {"file": "my,dir:x/pe.py", "line": "12",
                                               "title": "posenc-spec formula[50x8]"}
    assert message == f"{source}:fn: {reason}"


def test_annotations_escape_what_a_terminal_acts_on_in_every_field(tmp_path):
    """ESC, C1 and bidi characters in the file, the title (the check id) and the message are
    backslash escapes after the workflow escaping: one line, one command, no raw control."""
    source = tmp_path / "a\x1b[2Jb\u202e" / "pe.py"
    report = gate_report([CheckResult("formula[\x9b1A]", "failed", "bad\x1b]0;title\x07")], target=f"{source}:fn",
                         where=(str(source), 3))
    (line,) = github_annotations(report_json([report]), root=tmp_path)
    assert not re.search(f"[\\x00-\\x1f{TERMINAL_CONTROLS}]", line), line
    level, properties, message = _parse_command(line)
    assert properties == {"file": "a\\x1b[2Jb\\u202e/pe.py", "line": "3", "title": "posenc-spec formula[\\x9b1A]"}
    assert message.endswith(":fn: bad\\x1b]0;title\\x07"), message


def test_annotations_locations_relative_outside_or_null(tmp_path):
    """Inside the root: file and line; outside: named in the message, no file; null: neither.
    A conforming target gives nothing; an import failure and a warning give one line each."""
    failed = [CheckResult("determinism", "failed", "differs")]
    reports = [gate_report(failed, target="pkg.a:fn", where=(str(tmp_path / "src" / "a.py"), 3)),
               gate_report(failed, target="pkg.b:fn", where=("/elsewhere/b.py", 4)),
               gate_report(failed, target="pkg.c:fn"),
               gate_report([CheckResult("determinism", "passed", "same")], target="pkg.ok:fn", where=("/x.py", 1)),
               _unimportable(),
               gate_report([CheckResult("determinism", "xpassed", "same")], target="pkg.d:fn", warnings=["gone"])]
    parsed = [_parse_command(line) for line in github_annotations(report_json(reports), root=tmp_path)]
    assert [properties.get("file") for _, properties, _ in parsed] == ["src/a.py", None, None, None, None]
    assert parsed[0][1]["line"] == "3" and all("line" not in properties for _, properties, _ in parsed[1:])
    assert parsed[1][2] == "pkg.b:fn (defined at /elsewhere/b.py, line 4): differs"
    assert parsed[2][2] == "pkg.c:fn: differs"
    assert parsed[3][1]["title"] == "posenc-spec: cannot import nowhere.mod:fn"
    assert parsed[4][0] == "warning" and parsed[4][2] == "pkg.d:fn: gone"


def test_annotations_are_capped_per_target(tmp_path):
    """A target with failures of 25 kinds gives MAX_LINES_PER_TARGET lines and one that counts
    the rest; the next target still gets its own."""
    many = gate_report([CheckResult(f"kind{i}[50x8]", "failed", "wrong") for i in range(25)], target="pkg.many:fn")
    one = gate_report([CheckResult("determinism", "failed", "differs")], target="pkg.one:fn")
    lines = github_annotations(report_json([many, one]), root=tmp_path, limit=5)
    assert len(lines) == 5 + 2, lines
    level, properties, message = _parse_command(lines[5])
    assert level == "error" and message.startswith("pkg.many:fn: 20 more annotations not shown (25 failed")
    assert _parse_command(lines[-1])[2] == "pkg.one:fn: differs"
    with pytest.raises(ValueError, match="limit must be a positive integer, got 0"):
        github_annotations(report_json([many]), limit=0)


def test_annotations_say_each_check_kind_once_with_its_worst_call(tmp_path):
    """20 failed formula checks: one ::error titled by the kind, with how many failed and the worst call."""
    report = gate_report([CheckResult(f"formula[{i}x8]", "failed", f"{i}x8: wrong",
                                      Worst((0, 0), (8, 8), float(i), 0.0, float(i), 1.0)) for i in range(1, 21)])
    (line,) = github_annotations(report_json([report]), root=tmp_path)
    level, properties, message = _parse_command(line)
    assert level == "error" and properties["title"] == "posenc-spec formula", properties
    assert message == "pkg.mod:fn: 20 of 20 calls failed; worst formula[20x8]: 20x8: wrong", message


def test_annotations_stay_within_githubs_ten_per_step(tmp_path):
    """Six failing targets of three kinds each: at most MAX_PER_STEP errors, every target's
    first kind among them, and a last one that says how many more there are."""
    reports = [gate_report([CheckResult(f"{kind}[50x8]", "failed", "wrong") for kind in ("a", "b", "c")],
                           target=f"pkg.t{number}:fn") for number in range(6)]
    parsed = [_parse_command(line) for line in github_annotations(report_json(reports), root=tmp_path)]
    assert len(parsed) == MAX_PER_STEP and all(level == "error" for level, _, _ in parsed), parsed
    shown = [message for _, _, message in parsed[:-1]]
    assert all(f"pkg.t{number}:fn: wrong" in shown for number in range(6)), shown
    assert parsed[-1][2].startswith(f"{6 * 3 - (MAX_PER_STEP - 1)} more error annotations of 6 targets not shown")


ROOT = Path(__file__).resolve().parents[2]
_SHELL_VARIABLE = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)")


def _strings(node):
    if isinstance(node, dict):
        return [text for value in node.values() for text in _strings(value)]
    if isinstance(node, list):
        return [text for value in node for text in _strings(value)]
    return [node] if isinstance(node, str) else []


def _defined(node) -> set[str]:
    """The names an ``env:`` or ``variables:`` mapping defines anywhere in a CI file."""
    if isinstance(node, list):
        return set().union(*map(_defined, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    names = set().union(*(set(node[key]) for key in ("env", "variables") if isinstance(node.get(key), dict)))
    return names.union(*map(_defined, node.values()))


def test_composite_action_declares_uses_and_passes_every_input():
    """Every input the brief names is declared and used; scripts get them as variables they
    define (never pasted in), and the check step writes both reports."""
    yaml = pytest.importorskip("yaml")
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    action = yaml.safe_load(text)
    assert action["runs"]["using"] == "composite"
    inputs = set(action["inputs"])
    assert {"target", "convention", "xfails", "config", "python-version", "posenc-spec-version"} <= inputs
    assert set(re.findall(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", text)) == inputs
    scripts = [step for step in action["runs"]["steps"] if "run" in step]
    for step in scripts:
        assert "${{" not in step["run"], step["run"]
        assert set(_SHELL_VARIABLE.findall(step["run"])) <= set(step.get("env", {})) | {"GITHUB_OUTPUT"}, step["run"]
    assert re.search(r"posenc-spec \S+ --json \S+ --junitxml \S+", scripts[-1]["run"]), scripts[-1]["run"]


def test_pre_commit_hook_runs_the_installed_command():
    yaml = pytest.importorskip("yaml")
    import tomllib

    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert hook["id"] == "posenc-spec-check" and hook["language"] == "python" and hook["pass_filenames"] is False
    assert hook["entry"] == "posenc-spec check" and hook["entry"].split()[0] in scripts


def test_documented_ci_recipes_parse_and_define_every_variable():
    """Each YAML block of the README's "In CI" and of docs/ci.md parses, and every $VARIABLE
    its commands use is defined in an env: or variables: mapping of the same block."""
    yaml = pytest.importorskip("yaml")
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("## In CI", 1)[1].split("\n## ", 1)[0]
    reference = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme + reference, flags=re.S)
    assert len(blocks) >= 4, "composite action, plain GitHub job, GitLab job, pre-commit"
    for block in blocks:
        recipe = yaml.safe_load(block)
        used = {name for text in _strings(recipe) for name in _SHELL_VARIABLE.findall(text)}
        assert used <= _defined(recipe), (used - _defined(recipe), block)
