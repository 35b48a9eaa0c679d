"""The Python API: ``posenc_spec.check`` on an import path or on the function itself (from a
script's ``__main__``, a notebook kernel, this process), ``assert_conforms``, and the report
a person reads in a terminal or a notebook."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest

import posenc_spec
from posenc_spec.gate.errors import UsageError
from posenc_spec.testing import assert_conforms

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve()
QUICK = {"max_positions": 64, "odd": "skip"}  # the smallest grid that tells the conventions apart


def vaswani(n, d):
    angles = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)
    table = np.empty((n, d))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table


def swapped(n, d):
    return vaswani(n, d)[:, [i ^ 1 for i in range(d)]]


class Encoder:
    def __init__(self, base):
        self.base = base

    def table(self, n, d):
        return vaswani(n, d) if self.base == 10000.0 else None

    def __call__(self, n, d):
        return self.table(n, d)


def _closure():
    offset = 0

    def shifted(n, d):
        return vaswani(n + offset, d)[offset:]

    return shifted


def assert_report(report, name: str, verdict: str) -> None:
    """The report names the target ``name`` and gives ``verdict``, in its text too."""
    assert (report.name, report.verdict, bool(report)) == (name, verdict, verdict == "conforms"), report
    assert str(report).splitlines()[0].startswith(f"{name}  [table API"), str(report)


def assert_raised_here(error: BaseException, words: str) -> None:
    """A one-line error with ``words``, raised from posenc_spec.check itself (no chained cause shown)."""
    frames = traceback.extract_tb(error.__traceback__)
    assert words in str(error) and "\n" not in str(error), str(error)
    assert Path(frames[-1].filename).name == "api.py" and frames[-1].name == "check", frames
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__), repr(error)


@pytest.mark.parametrize(("target", "name"), [
    (_closure(), "spec_tests.core.test_api:_closure.<locals>.shifted"),
    (lambda n, d: vaswani(n, d), "spec_tests.core.test_api:<lambda>"),
    (Encoder(10000.0).table, "spec_tests.core.test_api:Encoder.table"),
    (functools.partial(vaswani), "functools.partial(spec_tests.core.test_api:vaswani)"),
    (Encoder(10000.0), "spec_tests.core.test_api:Encoder()"),
])
def test_callables_of_every_kind_are_checked(target, name):
    """A closure, a lambda, a bound method, a partial and an instance with __call__ are
    checked as they are, each named as a target is written."""
    report = posenc_spec.check(target, **QUICK)
    assert_report(report, name, "conforms")
    assert report.result("import").message == f"{name}, in a child forked from this process"


CHILD_STATE = {"calls": 0}


def counts_its_calls(n, d):
    """Conforms only in a child forked from the caller: its own process, no other thread,
    the caller's base as set before the check."""
    CHILD_STATE["calls"] += 1
    if os.getpid() == CHILD_STATE["caller"] or threading.active_count() != 1:
        raise RuntimeError(f"pid {os.getpid()}, {threading.active_count()} threads")
    return vaswani(n, d) * CHILD_STATE["scale"]


def test_a_callable_sees_the_callers_memory_and_changes_none_of_it():
    """The child sees the caller's globals as they were at the call; what it changes stays
    there; the caller's threads are not in it (a thread waiting here at the fork)."""
    release = threading.Event()
    waiting = threading.Thread(target=release.wait, daemon=True)
    waiting.start()
    try:
        CHILD_STATE.update(calls=0, caller=os.getpid(), scale=1.0)
        assert_report(posenc_spec.check(counts_its_calls, **QUICK), "spec_tests.core.test_api:counts_its_calls",
                      "conforms")
        CHILD_STATE["scale"] = 2.0
        report = posenc_spec.check(counts_its_calls, **QUICK)
    finally:
        release.set()
    assert report.verdict == "does-not-conform" and report.result("formula[50x8]").status == "failed", report
    assert CHILD_STATE["calls"] == 0, CHILD_STATE


def test_limits_hold_for_a_callable():
    """The memory limit counts from the caller's size: a call that allocates 1 GiB with
    max_memory 64MiB fails its call with MemoryError; exiting the process is a failed call."""
    report = posenc_spec.check(lambda n, d: np.ones((2**27,)) * 0 + vaswani(n, d)[0, 0], max_memory="64MiB", **QUICK)
    assert "MemoryError" in report.result("call[50x8]").message, report.result("call[50x8]")
    report = posenc_spec.check(lambda n, d: os._exit(3), **QUICK)
    assert "exited with status 3" in report.result("call[50x8]").message, report.result("call[50x8]")


def test_an_import_path_runs_as_the_command_runs_it():
    """A string target is a TARGET of the command: imported in its own sealed child."""
    report = posenc_spec.check(f"{HERE}:swapped", **QUICK)
    assert_report(report, f"{HERE}:swapped", "does-not-conform")
    assert report.result("import").message == f"imported {HERE}:swapped", report.result("import")


def test_a_failing_report_gives_checks_worst_elements_advice_and_figures():
    """A swapped table: failed formula checks with their worst element, the nearest member,
    the command's text, and the four diagnostic figures (matplotlib, shown as HTML images)."""
    from matplotlib.figure import Figure

    report = posenc_spec.check(swapped, **QUICK)
    worst = report.worst["formula[50x8]"]
    assert (worst.index, worst.actual, worst.expected) == ((0, 0), 1.0, 0.0), worst
    assert report.failures() and all(check.status == "failed" for check in report.failures())
    assert "the tables are vaswani with first cos" in report.nearest, report.nearest
    assert report.text().splitlines()[0].endswith("failed: does not conform"), report.text()
    assert "worst formula[50x8]" in str(report), str(report)
    figures = report.plot()
    assert list(figures) == ["heatmap", "row_profiles", "similarity", "difference"], figures
    assert all(isinstance(figure, Figure) for figure in figures.values())
    assert figures._repr_html_().count('<img alt="') == 4
    with pytest.raises(ValueError, match=r":vaswani: no table to draw: it conforms$"):
        posenc_spec.check(vaswani, **QUICK).plot()


def hostile(n, d):
    return swapped(n, d)


hostile.__qualname__ = "</pre><script>alert(1)</script>\x1b[2J"


def test_a_targets_text_is_escaped_in_html_and_in_the_terminal():
    """A name with markup and an escape sequence: the HTML holds no tag of the target's, the
    text no control character."""
    report = posenc_spec.check(hostile, **QUICK)
    shown = report._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;" in shown and "\x1b" not in shown, shown
    assert "\x1b" not in str(report) and "\\x1b[2J" in str(report), str(report)


def test_assert_conforms_fails_with_the_commands_lines():
    """assert_conforms returns the report of a conforming target; for a wrong one its
    AssertionError reads as `check` prints: target, failed checks with worst elements, the
    hint that names the slip (the nearest member only where no hint names it)."""
    assert assert_conforms(vaswani, **QUICK).conforms
    with pytest.raises(AssertionError) as failure:
        assert_conforms(swapped, **QUICK)
    message = str(failure.value)
    assert message.startswith("spec_tests.core.test_api:swapped  [table API, vaswani, odd=skip]"), message
    assert "\n  FAIL  formula, " in message, message
    assert ": 400 of 400 elements out of bound; worst at [0, 0]" in message, message
    assert "\n  hint: sin and cos swapped" in message and "nearest:" not in message, message


@pytest.mark.parametrize(("keys", "words"), [
    ({"convetion": "vaswani"}, "unknown key 'convetion' (did you mean 'convention'?)"),
    ({"max_positions": "2048"}, "max_positions must be a number, got '2048' (text: write it without quotes)"),
    ({"convention": "vaswan"}, "convention must be one of vaswani, concat"),
    ({"jobs": "2"}, "jobs must be a number, got '2'"),
    ({"fail_fast": "yes"}, "fail_fast must be True or False, got 'yes'"),
    ({"max_memory": "lots"}, "max_memory must be a size such as 4GiB"),
    ({"rope_theta": 1e4}, "rope_theta declares a rotary embedding"),
    ({"preload": "no_such_module_here"}, "--preload no_such_module_here: raised ModuleNotFoundError"),
    ({"preload": "os,posenc_spec_exits_when_imported"}, "--preload os,posenc_spec_exits_when_imported: the gate's "
                                                        "template process failed while starting"),
])
def test_bad_keys_raise_one_line_from_check(keys, words, tmp_path, monkeypatch):
    """A bad key or value: UsageError (a ValueError), one line, raised from check itself; a
    preload that cannot be imported or kills the process importing it is one too."""
    (tmp_path / "posenc_spec_exits_when_imported.py").write_text("import os\nos._exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UsageError) as error:
        posenc_spec.check(vaswani, **keys)
    assert_raised_here(error.value, words)


def test_a_target_that_is_no_target_is_a_type_error():
    """Neither an import path nor callable: TypeError, one line, from check."""
    with pytest.raises(TypeError) as error:
        posenc_spec.check(42, convention="vaswani")
    assert_raised_here(error.value, "target must be an import path such as 'pkg.mod:fn'")
    with pytest.raises(UsageError) as error:
        posenc_spec.check("not a target")
    assert_raised_here(error.value, "TARGET must be 'package.module:attr' or 'path/to/file.py:attr'")


SCRIPT = """\
import json, os, sys
import numpy as np
import posenc_spec
from posenc_spec.testing import assert_conforms

SEEN = []

def table(n, d):
    SEEN.append(n)
    angles = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)
    out = np.empty((n, d))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out

ok = posenc_spec.check(table, max_positions=64, odd="skip")
wrong = posenc_spec.check(table, convention="concat", max_positions=64, odd="skip")
try:
    assert_conforms(table, convention="concat", max_positions=64, odd="skip")
    message = None
except AssertionError as error:
    message = str(error)
print(json.dumps({"ok": [ok.name, ok.verdict], "wrong": [wrong.name, wrong.verdict, len(wrong.failures())],
                  "message": message, "seen": len(SEEN), "where": list(ok.where or [])}))
"""


def test_a_function_in_a_scripts_main(tmp_path):
    """python -c with the function in __main__: checked in a sealed child, named
    __main__:table, its calls never in the script's own process; assert_conforms' message."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    said = json.loads(done.stdout)
    assert said["ok"] == ["__main__:table", "conforms"] and said["wrong"][:2] == ["__main__:table",
                                                                                 "does-not-conform"], said
    assert said["seen"] == 0 and said["wrong"][2] > 0 and said["where"] == ["<string>", 8], said
    assert said["message"].startswith("__main__:table  [table API, concat, odd=skip]") and \
           "\n  hint: " in said["message"] and "(slip: layout)" in said["message"], said["message"]


def test_the_documented_example_runs(tmp_path):
    """The first example of docs/python.md runs as a script, as written, and prints what its
    comments say (meta_tests/test_docs_commands.py leaves it to this test)."""
    reference = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    code = reference.split("```python\n", 1)[1].split("\n```", 1)[0]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "__main__:sinusoidal_table  [table API, vaswani, odd=error]" in done.stdout, done.stdout
    assert "does-not-conform the tables are vaswani" in done.stdout, done.stdout


NOTEBOOK_CELLS = [
    "import numpy as np, posenc_spec\n"
    "BASE = 10000.0\n"
    "def table(n, d):\n"
    "    angles = np.arange(n)[:, None] / BASE ** (np.arange(0, d, 2) / d)\n"
    "    out = np.empty((n, d))\n"
    "    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)\n"
    "    return out",
    "posenc_spec.check(table, max_positions=64, odd='skip')",
    "BASE = 5000.0\nreport = posenc_spec.check(table, max_positions=64, odd='skip')\nreport.plot()",
    "from posenc_spec.testing import assert_conforms\nassert_conforms(table, max_positions=64, odd='skip')",
]


def test_a_function_in_a_notebook_kernel(tmp_path):
    """A notebook run by nbclient in a real IPython kernel: a cell's function conforms (shown
    as HTML), the same function after a later cell changed its global fails and draws its
    figures inline, and assert_conforms fails the cell with the command's lines."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in NOTEBOOK_CELLS])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = notebook.cells[1].outputs[0]["data"]["text/html"]
    assert "conforms</strong><pre>__main__:table  [table API, vaswani, odd=skip]" in shown, shown
    figures = notebook.cells[2].outputs[0]["data"]["text/html"]
    assert figures.count('<img alt="') == 4 and "data:image/png;base64," in figures, figures[:300]
    (error,) = notebook.cells[3].outputs
    assert error["ename"] == "AssertionError" and error["evalue"].startswith("__main__:table  [table API"), error
    assert "FAIL  formula, " in error["evalue"], error["evalue"]
