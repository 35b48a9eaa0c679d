"""Gate reports made by hand for the output tests (JSON, text, figures, JUnit, annotations);
:func:`meta_tests.hostile.report_json` turns them into the report ``check --json`` writes."""

from __future__ import annotations

from posenc_spec.gate.declaration import declare
from posenc_spec.gate.report import GateReport


def gate_report(checks, target: str = "pkg.mod:fn", **fields) -> GateReport:
    """A report of ``checks`` for ``target`` declared with ``odd = "skip"``; ``fields`` are
    GateReport's own (warnings, where, seconds, importable, kept)."""
    return GateReport(declare({"target": target, "odd": "skip"}), checks, **fields)
