"""The pytest plugin: ``pytest spec_tests --posenc-target ...`` turns each check of the gate
into a test, and without a target those tests skip saying how to enable them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_TESTS = "spec_tests/test_gate_target.py"


def _pytest(*arguments, cwd=REPO):
    command = [sys.executable, "-m", "pytest", TARGET_TESTS, "-p", "posenc_spec.pytest_plugin", "-p",
               "no:cacheprovider", "-q", "-rsxf", *arguments]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def _count(output: str, outcome: str) -> int:
    found = re.search(rf"(\d+) {outcome}", output.splitlines()[-1])
    return int(found.group(1)) if found else 0


def test_without_a_target_the_gate_tests_skip_with_how_to_enable():
    """No --posenc-target: one skipped test whose reason gives the command line."""
    status, output = _pytest()
    assert status == 0, output
    assert _count(output, "skipped") == 1, output
    assert "--posenc-target package.module:fn --posenc-convention NAME" in output, output


def test_each_check_is_a_test(tmp_path):
    """With a config of three targets: the conforming one passes every test, the wrong
    convention fails its formula tests, declared known deviations are xfail."""
    (tmp_path / "xfails.txt").write_text("odd[7]\nodd[65]\n")
    config = tmp_path / "gate.toml"
    config.write_text('max_positions = 64\n\n'
                      '[[targets]]\ntarget = "reference_impls.torch_impl:positional_encoding"\n\n'
                      '[[targets]]\ntarget = "reference_impls.torch_impl:positional_encoding"\n'
                      'convention = "concat"\n\n'
                      '[[targets]]\ntarget = "reference_impls.numpy_loop:positional_encoding"\nodd = "zero-pad"\n'
                      'xfails = "xfails.txt"\n')
    status, output = _pytest("--posenc-config", str(config))
    assert status == 1, output
    assert _count(output, "xfailed") == 2, output
    assert "FAILED spec_tests/test_gate_target.py::test_gate_check[reference_impls.torch_impl:positional_encoding" \
           "@concat::formula[50x8]]" in output, output
    assert "under concat: formula[50x8]: 50x8 under concat, float32" in output, output
    failed = _count(output, "failed")
    assert 0 < failed < _count(output, "passed"), output
