"""JUnit XML of a ``--json`` report, in the dialect GitHub, GitLab and Jenkins test reporters read.

One ``<testsuite>`` per target, named by the target as the user wrote it, and one
``<testcase classname=TARGET name=CHECK_ID>`` per check, in the report's order:

=============================================  ==========================================
check                                           element inside its ``<testcase>``
=============================================  ==========================================
failed                                          ``<failure message=REASON type=FAMILY>``
failed ``import`` of a target in ``error``      ``<error message=REASON type="import">``
skipped                                         ``<skipped message=REASON>``
xfailed (a known deviation)                     ``<skipped message="xfail: REASON">``
passed, xpassed, noted                          none (xpassed, noted: a ``<system-out>`` note)
=============================================  ==========================================

``FAMILY`` is the check id without its grid slot (``formula`` for ``formula[50x8]``); a
failure's text adds the worst element and the target's hints (the slip its tables show).
A suite counts ``tests``, ``failures``, ``errors`` and ``skipped`` (skipped and xfailed);
``<testsuites>`` sums tests, failures and errors (the JUnit schema gives it no
``skipped``). The checks of a target are judged together after one run, so each
``<testcase>`` has ``time="0"`` and its suite the target's ``seconds``. A suite's
``<properties>`` hold the target's status, its resolved form, the line of its function and
one ``hint`` per hint; its ``<system-out>`` the target's warnings.

The output depends on the report alone (no timestamp, no host name). ElementTree escapes
every value; characters XML 1.0 cannot carry even escaped (most control characters, lone
surrogates, U+FFFE and U+FFFF) are written as their Python backslash escapes (``\\x00``,
``\\udcff``), so a hostile reason still gives a file every reader parses. What a terminal
would act on (:data:`posenc_spec.text.TERMINAL_CONTROLS`: DEL, C1 controls, line separators,
bidirectional overrides), a ``[`` after ``##`` and a ``:`` that starts a line are written as
character references (``&#155;``, ``&#91;``, ``&#58;``), which every reader turns back into
the same text: the file printed to a terminal or a CI log (``--junitxml -``) shows it as it
is and holds no workflow command.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from posenc_spec.text import TERMINAL_CONTROLS, escaped

# The complement of XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
# In the serialized text, where only values (text and attributes) can hold these.
_SHOWN_AS_REFERENCES = re.compile(f"[{TERMINAL_CONTROLS}]|(?<=##)\\[|(?<=##vso)\\[|^[^\\S\\n]*:(?=:)", re.M)


def xml_safe(value) -> str:
    """``value`` as text XML 1.0 can hold: each character it forbids becomes its backslash escape."""
    return _NOT_XML_CHAR.sub(lambda match: escaped(match.group()), str(value))


def _reference(match: re.Match) -> str:
    text = match.group()
    return text[:-1] + f"&#{ord(text[-1])};"


def _element(tag: str, parent: ET.Element | None = None, text: str | None = None, **attributes) -> ET.Element:
    safe = {key: xml_safe(value) for key, value in attributes.items()}
    element = ET.Element(tag, safe) if parent is None else ET.SubElement(parent, tag, safe)
    if text:
        element.text = xml_safe(text)
    return element


def _number(value) -> str:
    return "non-finite" if value is None else f"{value:.6g}"


def worst_text(worst: dict | None) -> str:
    """The worst element of a check as one line (empty when the check has none)."""
    if not worst:
        return ""
    size = "x".join(str(n) for n in worst["size"])
    return (f"worst element {list(worst['index'])} of {size}: actual {_number(worst['actual'])}, expected "
            f"{_number(worst['expected'])}, error {_number(worst['error'])}, tolerance "
            f"{_number(worst['tolerance'])} ({_number(worst['ratio'])} times the tolerance)")


def _is_import_error(target: dict, check: dict) -> bool:
    return target["status"] == "error" and check["id"] == "import" and check["status"] == "failed"


def suite_counts(target: dict) -> dict[str, int]:
    """``tests``, ``failures``, ``errors`` and ``skipped`` of one target's suite."""
    counts = {"tests": len(target["checks"]), "failures": 0, "errors": 0, "skipped": 0}
    for check in target["checks"]:
        if _is_import_error(target, check):
            counts["errors"] += 1
        elif check["status"] == "failed":
            counts["failures"] += 1
        elif check["status"] in ("skipped", "xfailed"):
            counts["skipped"] += 1
    return counts


def _testcase(suite: ET.Element, target: dict, check: dict) -> None:
    case = _element("testcase", suite, classname=target["target"], name=check["id"], time="0")
    status, reason = check["status"], check["reason"]
    if _is_import_error(target, check):
        _element("error", case, reason, message=reason, type="import")
    elif status == "failed":
        hints = [f"hint: {hint['text']}" for hint in target.get("hints", ())]
        details = "\n".join(part for part in (reason, worst_text(check.get("worst")), *hints) if part)
        _element("failure", case, details, message=reason, type=check["id"].split("[", 1)[0])
    elif status == "skipped":
        _element("skipped", case, message=reason)
    elif status == "xfailed":
        _element("skipped", case, message=f"xfail: {reason}")
    elif status == "xpassed":
        _element("system-out", case, f"xpassed: listed as a known deviation, but passed: {reason}")
    elif status == "noted":
        _element("system-out", case, f"noted (not a failure; strict makes it one): {reason}")


def _testsuite(parent: ET.Element, target: dict) -> dict[str, int]:
    counts = suite_counts(target)
    location = target.get("location")
    attributes = {key: str(value) for key, value in counts.items()}
    attributes["time"] = f"{target.get('seconds') or 0:.3f}"
    if location:
        attributes["file"] = location["file"]
    suite = _element("testsuite", parent, name=target["target"], **attributes)
    properties = _element("properties", suite)
    _element("property", properties, name="status", value=target["status"])
    _element("property", properties, name="resolved", value=target.get("resolved", target["target"]))
    if location:
        _element("property", properties, name="line", value=str(location["line"]))
    for hint in target.get("hints", ()):
        _element("property", properties, name="hint", value=hint["text"])
    for check in target["checks"]:
        _testcase(suite, target, check)
    if target.get("warnings"):
        _element("system-out", suite, "\n".join(f"warning: {warning}" for warning in target["warnings"]))
    return counts


def junit_xml(report: dict) -> str:
    """The JUnit XML text of a report of schema_version 1 (see the module docstring)."""
    if not isinstance(report, dict) or not isinstance(report.get("targets"), list):
        raise ValueError(f"report must be a posenc-spec report dict with a 'targets' list, got {type(report).__name__}")
    root = _element("testsuites", name="posenc-spec")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    seconds = 0.0
    for target in report["targets"]:
        counts = _testsuite(root, target)
        for key in totals:
            totals[key] += counts[key]
        seconds += target.get("seconds") or 0
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return XML_DECLARATION + _SHOWN_AS_REFERENCES.sub(_reference, ET.tostring(root, encoding="unicode")) + "\n"
