"""The pytest plugin: installed with posenc-spec, it turns each check of the gate into a
pytest item in any folder, does nothing without a ``--posenc*`` option, and works under
pytest-xdist."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from posenc_spec.gate import declaration as declaration_module
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import plan

REPO = Path(__file__).resolve().parents[2]

TARGETS = """\
import numpy as np

def vaswani(n, d):
    half = d // 2  # an odd width gets a zero last column
    position = np.arange(n)[:, None]
    div = np.exp(np.arange(half) * -(np.log(10000.0) / half))
    table = np.zeros((n, d))
    table[:, 0:2 * half:2], table[:, 1:2 * half:2] = np.sin(position * div), np.cos(position * div)
    return table

def swapped(n, d):
    return vaswani(n, d)[:, [i ^ 1 for i in range(d)]]
"""


def _pytest(folder, *arguments):
    """pytest in ``folder`` (outside this repository) in a process of its own, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rsxf", *arguments]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300, env=env)
    return done.returncode, done.stdout + done.stderr


def _pytest_here(pytester, *arguments):
    """pytest in pytester's empty folder, in this process (the plugin's entry point loads it)."""
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "-rsxf", "-n", "0", *arguments)
    return int(result.ret), "\n".join(result.outlines + result.errlines)


def _count(output: str, outcome: str) -> int:
    found = re.search(rf"(\d+) {outcome}", output.strip().splitlines()[-1])
    return int(found.group(1)) if found else 0


def test_without_an_option_the_plugin_adds_nothing(pytester):
    """No --posenc*: an empty folder collects nothing (pytest's exit 5), the plugin is loaded."""
    status, output = _pytest_here(pytester, "--co")
    assert status == 5, output
    status, output = _pytest_here(pytester, "--help")
    assert "--posenc-target" in output and "--posenc-convention" in output, output


def _three_targets(folder):
    """gate.toml in ``folder``: vaswani, the swapped slip, and vaswani with a known deviation."""
    (folder / "impl.py").write_text(TARGETS)
    (folder / "xfails.txt").write_text("odd[*]  # zero-pads where an error is declared\n")
    (folder / "gate.toml").write_text('max_positions = 64\nodd = "skip"\n\n'
                                      '[[targets]]\ntarget = "impl:vaswani"\n\n'
                                      '[[targets]]\ntarget = "impl:swapped"\n\n'
                                      '[[targets]]\ntarget = "impl:vaswani"\nodd = "error"\nxfails = "xfails.txt"\n')


def test_each_target_is_an_item_whose_failure_is_its_summary(pytester):
    """With a config of three targets: the conforming one and the one whose only deviation is
    known pass; the swapped one fails with the target's summary, verdict first (pytest's short
    summary shows it), then the hint and one line per failing check kind, not a line per call;
    -v lists every check, --tb=line the verdict alone."""
    _three_targets(pytester.path)
    status, output = _pytest_here(pytester, "--posenc-config", "gate.toml", "-rA")
    assert status == 1 and (_count(output, "failed"), _count(output, "passed")) == (1, 2), output
    assert re.search(r"^FAILED posenc::impl:swapped@vaswani - \d+ checks, \d+ failed: does not conform\b", output,
                     re.MULTILINE), output
    assert "  hint: sin and cos swapped: each pair holds cos first where sin first is declared" in output, output
    kinds = [line for line in output.splitlines() if line.startswith("  FAIL ")]
    assert kinds and all(", " in line.partition(";")[0] or "[" in line.partition(":")[0] for line in kinds), kinds
    assert "formula[50x8]: " not in output.replace("worst formula[50x8]: ", ""), output
    status, verbose = _pytest_here(pytester, "--posenc-config", "gate.toml", "-vv")  # -v, after _pytest_here's -q
    # The failure's report lists every formula call; pytest's short summary may repeat the whole
    # message at higher verbosity (how much depends on the calling session's own -q/-v).
    report = verbose.partition("short test summary info")[0]
    assert status == 1 and report.count("\n  FAIL  formula[") == 7, verbose
    status, line = _pytest_here(pytester, "--posenc-config", "gate.toml", "--tb=line")
    assert status == 1 and "  hint: " not in line and re.search(r"^\d+ checks, \d+ failed: does not conform  \[table",
                                                                line, re.MULTILINE), line
    assert "Traceback" not in output + verbose, output


def test_each_check_is_an_item_outside_the_repository(pytester):
    """--posenc-items check, with a config of three targets in a folder of its own: the
    conforming one passes every item, the swapped one fails with its one-line reason, known
    deviations are xfail."""
    _three_targets(pytester.path)
    status, output = _pytest_here(pytester, "--posenc-config", "gate.toml", "--posenc-items", "check")
    assert status == 1, output
    assert _count(output, "xfailed") == 2, output
    assert "FAILED posenc::impl:swapped@vaswani::formula[50x8]" in output, output
    assert "impl:swapped under vaswani: formula[50x8]: 50x8 under vaswani, float64:" in output, output
    assert "  hint: sin and cos swapped: each pair holds cos first where sin first is declared" in output, output
    assert "Traceback" not in output and 0 < _count(output, "failed") < _count(output, "passed"), output


@pytest.mark.parametrize(("items", "cases"), [("target", {("posenc", "impl:swapped")}),
                                             ("check", {("posenc.impl:swapped", "formula[50x8]")})])
def test_strict_markers_without_xdist_and_a_dotted_junit_class(tmp_path, items, cases):
    """Without pytest-xdist (-p no:xdist) and under --strict-markers the items run (no
    INTERNALERROR for the xdist_group mark); JUnit XML names a target item's case TARGET in
    class posenc, a check item's case CHECK in class posenc.TARGET."""
    import xml.etree.ElementTree as ET

    (tmp_path / "impl.py").write_text(TARGETS)
    status, output = _pytest(tmp_path, "-p", "no:xdist", "--strict-markers", "--posenc-target", "impl:swapped",
                             "--posenc-max-positions", "64", "--junitxml", "junit.xml", "--posenc-items", items)
    assert status == 1 and "INTERNALERROR" not in output and _count(output, "failed") > 0, output
    written = {(case.get("classname"), case.get("name")) for case in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    assert cases <= written and {classname for classname, _ in written} == {classname for classname, _ in cases}, \
        written


def test_nearest_pyproject_under_xdist(tmp_path):
    """--posenc finds [tool.posenc-spec] from a subfolder; under pytest-xdist (-n 2) every
    check of the plan is an item (--posenc-items check) and passes."""
    (tmp_path / "impl.py").write_text(TARGETS)
    (tmp_path / "pyproject.toml").write_text('[tool.posenc-spec]\nmax_positions = 64\nodd = "skip"\n'
                                             'target = "impl:vaswani"\n')
    (tmp_path / "sub").mkdir()
    planned = len(plan(declare({"target": "impl:vaswani", "max_positions": 64, "odd": "skip"})))
    status, output = _pytest(tmp_path / "sub", "--posenc", "-n", "2", "--dist", "loadgroup", "--posenc-items", "check")
    assert status == 0 and _count(output, "passed") == planned, output


def test_fail_fast_skips_the_checks_after_the_first_failure(pytester):
    """--posenc-fail-fast: the swapped table fails at 50x8; the grid's calls, which the hint
    reads, are still made, and the items of the other calls after it (the determinism
    repeats, the sequences) are skipped, with the reason."""
    (pytester.path / "impl.py").write_text(TARGETS)
    target = ("--posenc-target", "impl:swapped", "--posenc-max-positions", "64", "--posenc-items", "check")
    status, output = _pytest_here(pytester, *target, "--posenc-fail-fast")
    full_status, full_output = _pytest_here(pytester, *target)
    assert status == full_status == 1 and _count(output, "skipped") > _count(full_output, "skipped"), output
    assert _count(output, "failed") > 0, output
    assert "--fail-fast stopped this target at its first failed check, formula[50x8]" in output, output


@pytest.mark.parametrize(("option", "words"), [
    (["--posenc-convention", "vaswan"], "--posenc: convention must be one of"),
    (["--posenc-preload", "no_such_module_here"], "--preload no_such_module_here: raised ModuleNotFoundError"),
    (["--posenc-api", "rope-freqs", "--posenc-rope-param", "factor=" + "[" * 10_000 + "]" * 10_000],
     "...': nested more than 64 levels deep"),
])
def test_a_bad_option_is_a_usage_error(pytester, option, words):
    """A bad declaration key, a module that cannot be preloaded or a rope parameter nested
    too deep: pytest's usage error (exit 4), one line, before any item runs."""
    status, output = _pytest_here(pytester, "--posenc-target", "impl:vaswani", *option)
    assert status == 4 and words in output and "Traceback" not in output, output


@pytest.mark.parametrize("table", [None, "tool.posenc_spec"])
def test_posenc_with_nothing_declared_is_a_usage_error(pytester, table):
    """--posenc in a repository with no [tool.posenc-spec], or a near miss of its name: pytest's
    usage error (exit 4) in one line, saying where the search looked or naming the slip."""
    (pytester.path / ".git").mkdir()
    pyproject = pytester.path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n' + (f'[{table}]\ntarget = "impl:vaswani"\n' if table else ""))
    status, output = _pytest_here(pytester, "--posenc")
    if table is None:
        words = (f"posenc-spec: --posenc: nothing to check: no pyproject.toml with a [tool.posenc-spec] table in "
                 f"{pytester.path} (the repository root); declare targets in one, or give --posenc-config FILE or "
                 "--posenc-target TARGET")
    else:
        words = f"posenc-spec: {pyproject}: [tool.posenc_spec] is not read; did you mean [tool.posenc-spec]?"
    assert status == 4 and words in output and "Traceback" not in output, output


ROPE_TARGETS = """\
import numpy as np

def inv_freq(head_dim):
    return 1.0 / 500000.0 ** (np.arange(0, head_dim, 2) / head_dim)

def linear_inv_freq(head_dim):
    return inv_freq(head_dim) / 4.0
"""


def test_rotary_keys_have_plugin_options(pytester, monkeypatch):
    """The RoPE flags have --posenc-* twins, --posenc-rope-param repeating as --rope-param does:
    each target passes under what it computes and fails under the plain default; a key's former
    name (--posenc-rope-theta) is read as the key, and the run says so."""
    pytester.path.joinpath("rope_impl.py").write_text(ROPE_TARGETS)
    rope = ["--posenc-api", "rope-freqs", "--posenc-base", "500000"]
    status, output = _pytest_here(pytester, "--posenc-target", "rope_impl:inv_freq", *rope)
    assert status == 0 and _count(output, "passed") > 0, output
    status, output = _pytest_here(pytester, "--posenc-target", "rope_impl:linear_inv_freq", *rope,
                                  "--posenc-rope-type", "linear", "--posenc-rope-param", "factor=4")
    assert status == 0 and _count(output, "passed") > 0, output
    status, output = _pytest_here(pytester, "--posenc-target", "rope_impl:linear_inv_freq", *rope)
    assert status == 1 and "formula[d=" in output and "Traceback" not in output, output
    monkeypatch.setattr(declaration_module, "_noted", set())  # as in a run of its own
    status, output = _pytest_here(pytester, "--posenc-target", "rope_impl:inv_freq", "--posenc-api", "rope-freqs",
                                  "--posenc-rope-theta", "500000")
    assert status == 0 and _count(output, "passed") > 0 and "rope_theta is now base" in output, output


def test_a_note_passes_with_a_warning_and_fails_under_strict(pytester):
    """transformers' T5 buckets: int-min[D] is a note (a passed item and a warning naming it), a failure under
    --posenc-strict."""
    target = ("--posenc-target", "transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket",
              "--posenc-api", "t5-buckets", "--posenc-items", "check", "-k", "int-min")
    status, output = _pytest_here(pytester, *target)
    assert status == 0 and _count(output, "passed") == 4, output
    assert "GateNote" in output and "no caller passes it" in output, output
    status, output = _pytest_here(pytester, *target, "--posenc-strict")
    assert status == 1 and _count(output, "failed") == 2, output
    assert "strict: " in output, output


QUICK_FLAGS = ("--posenc-max-positions", "64", "--posenc-odd", "skip")  # the smallest grid telling the members apart
QUICK_KEYS = 'max_positions = 64\nodd = "skip"\n'
ADVICE = re.compile(r"hint: .*; if that is intended, declare (.+) \(slip: sin-cos-swapped\)$", re.MULTILINE)


def _advice(output: str) -> str:
    found = ADVICE.search(output)
    assert found, output
    return found.group(1)


def test_a_hint_spells_flags_as_the_plugin_takes_them_and_they_conform(pytester):
    """--posenc-target with --posenc-* flags: the hint advises --posenc-* flags (not check's
    --first), and the run given them as written conforms."""
    (pytester.path / "impl.py").write_text(TARGETS)
    status, output = _pytest_here(pytester, "--posenc-target", "impl:swapped", *QUICK_FLAGS)
    advice = _advice(output)
    assert status == 1 and advice == "--posenc-first cos", output
    status, output = _pytest_here(pytester, "--posenc-target", "impl:swapped", *QUICK_FLAGS, *shlex.split(advice))
    assert status == 0 and _count(output, "passed") == 1, output


@pytest.mark.parametrize("where", ["config", "pyproject"])
def test_a_hint_spells_toml_keys_for_a_file_and_they_conform(pytester, where):
    """The target declared in a --posenc-config file or the nearest [tool.posenc-spec]: the hint
    advises TOML keys, and the file with that line added to the target's table conforms."""
    (pytester.path / "impl.py").write_text(TARGETS)
    (pytester.path / ".git").mkdir()
    if where == "config":
        path, table, arguments = pytester.path / "gate.toml", "[[targets]]", ("--posenc-config", "gate.toml")
    else:
        path, table, arguments = pytester.path / "pyproject.toml", "[[tool.posenc-spec.targets]]", ("--posenc",)
    path.write_text(f'{table}\ntarget = "impl:swapped"\n{QUICK_KEYS}')
    status, output = _pytest_here(pytester, *arguments)
    advice = _advice(output)
    assert status == 1 and advice == 'first = "cos"', output
    path.write_text(path.read_text() + advice + "\n")
    status, output = _pytest_here(pytester, *arguments)
    assert status == 0 and _count(output, "passed") == 1, output


def test_a_key_given_as_a_flag_over_a_file_is_advised_as_that_flag(pytester):
    """--posenc-config with --posenc-first over the file's keys: the hint advises the flag (the
    file's key would stay overridden), and the run with it appended as written conforms."""
    (pytester.path / "impl.py").write_text(TARGETS)
    (pytester.path / "gate.toml").write_text(f'[[targets]]\ntarget = "impl:swapped"\n{QUICK_KEYS}')
    arguments = ("--posenc-config", "gate.toml", "--posenc-first", "sin")
    status, output = _pytest_here(pytester, *arguments)
    advice = _advice(output)
    assert status == 1 and advice == "--posenc-first cos", output
    status, output = _pytest_here(pytester, *arguments, *shlex.split(advice))
    assert status == 0 and _count(output, "passed") == 1, output
