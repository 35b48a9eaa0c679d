"""The commands the GitHub Action and the pre-commit hook run, run as the runner runs them:
the shell of the Action's check step (read from action.yml, under ``bash -eo pipefail``,
with the variables its ``env`` sets from the inputs) and the hook's ``entry``, with
posenc-spec already installed (the Action's install step, which needs the network, is left
out). A repository with nothing declared fails loudly in one line; a failing check's exit
status reaches the runner."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
INPUT = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
# sine and cosine swapped: fails formula at the first size
SWAPPED = """\
import numpy as np

def table(n, d):
    angles = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)
    out = np.empty((n, d))
    out[:, 0::2], out[:, 1::2] = np.cos(angles), np.sin(angles)
    return out
"""


def _repository(path: Path) -> Path:
    """An empty git repository whose pyproject.toml declares nothing for posenc-spec."""
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "pyproject.toml").write_text('[project]\nname = "example"\nversion = "0"\n')
    return path


def _environment(**extra) -> dict:
    """The runner's environment: posenc-spec's console script on PATH, no network."""
    scripts = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", ""), "HF_HUB_OFFLINE": "1", **extra}


def _check_step(inputs: dict) -> tuple[str, dict]:
    """The check step's script, and its ``env`` with ``${{ inputs.X }}`` replaced by the given
    inputs or else their defaults in action.yml."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    (step,) = [step for step in action["runs"]["steps"] if step.get("id") == "check"]
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    env = {name: INPUT.sub(lambda found: str(inputs.get(found.group(1), defaults[found.group(1)])), str(value))
           for name, value in step.get("env", {}).items()}
    assert step["shell"] == "bash" and not any("${{" in value for value in env.values()), step
    return step["run"], env


def _run_action(folder: Path, **inputs) -> tuple[subprocess.CompletedProcess, str]:
    """The check step in ``folder`` as GitHub runs a ``shell: bash`` step; what it wrote to GITHUB_OUTPUT."""
    script, env = _check_step(inputs)
    (folder.parent / "step.sh").write_text(script)
    outputs = folder.parent / "github_output"
    outputs.write_text("")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(folder.parent / "step.sh")],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env=_environment(**env, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(outputs)))
    return done, outputs.read_text()


def assert_nothing_declared(done: subprocess.CompletedProcess, folder: Path) -> None:
    """Exit 2, and stderr one line saying where the search looked; nothing else printed."""
    expected = (f"posenc-spec check: error: nothing to check: no pyproject.toml with a [tool.posenc-spec] table in "
                f"{folder} (the repository root); declare targets in one, or give --config FILE, a TARGET, or "
                "--builtin (the reference implementations posenc-spec ships)\n")
    assert (done.returncode, done.stderr, done.stdout) == (2, expected, ""), (done.returncode, done.stderr, done.stdout)


def test_the_action_fails_loudly_when_nothing_is_declared(tmp_path):
    """The Action's check step with its default inputs, in a repository with nothing declared:
    the step fails (exit 2) with the one line; no report is written."""
    folder = _repository(tmp_path / "repo")
    done, outputs = _run_action(folder)
    assert_nothing_declared(done, folder)
    assert outputs.splitlines() == ["json=posenc-report.json", "junitxml=posenc-junit.xml"]
    assert not (folder / "posenc-report.json").exists()


def test_the_action_passes_a_failed_check_to_the_runner(tmp_path):
    """The step's exit status is the gate's: a config input naming a target that fails gives
    exit 1, with the JSON report and the JUnit XML written where the inputs say."""
    folder = _repository(tmp_path / "repo")
    (folder / "swapped.py").write_text(SWAPPED)
    (folder / "gate.toml").write_text('max_positions = 64\n\n[[targets]]\ntarget = "swapped.py:table"\n')
    done, _ = _run_action(folder, config="gate.toml", json="report.json")
    assert done.returncode == 1 and "::error" in done.stdout, (done.returncode, done.stdout, done.stderr)
    assert (folder / "report.json").is_file() and (folder / "posenc-junit.xml").is_file()


def test_the_pre_commit_hook_fails_loudly_when_nothing_is_declared(tmp_path):
    """The hook's entry, run from the repository's root as pre-commit runs it (no file names):
    exit 2 with the one line."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    folder = _repository(tmp_path / "repo")
    assert hook["pass_filenames"] is False
    done = subprocess.run(shlex.split(hook["entry"]), cwd=folder, capture_output=True, text=True, timeout=300,
                          env=_environment())
    assert_nothing_declared(done, folder)
