"""What a target can reach of the gate's own processes (``meta_tests/hostile/reach.py``),
as docs/checks.md, "What holds, and where", states it, as root and as an ordinary user.

One target tries to trace the gate and the root template, to open the gate's standard
output and memory through ``/proc``, and to signal the gate, the root template and the
child of a target in the other lane (``-j 2``); it records what each attempt got. The
ordinary user is emulated from root (``meta_tests/another_user.py``): CI runs as root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_tests.another_user import run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, SIGNALS_CONFINED_AS_USER, target
from meta_tests.hostile.test_cli import RUN_LIMIT

WORKTREE = Path(__file__).resolve().parents[2]
# Above reach.NEIGHBOUR_WAIT: the two targets' calls wait for each other, not for a time, and
# neither is killed while it waits (reach.py is a target file: the tests never import it).
TIMEOUT = 90
TRACING = ["trace the gate", "trace the root template", "write the gate's standard output through /proc",
           "read the gate's memory through /proc"]
SIGNALS = ["signal the gate", "signal the root template", "signal the other lane's child"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="runs the gate as root, and emulates another user from "
                                                          "root; as an ordinary user the rest of the suite covers it")


def _reach(folder: Path, run=subprocess.run) -> tuple[dict, subprocess.CompletedProcess]:
    """One ``check -j 2`` of the reaching target and its neighbour: what each attempt got,
    and the finished command."""
    folder.chmod(0o777)  # the targets write here whoever they run as
    config = folder / "gate.toml"
    config.write_text(f"max_positions = {MAX_POSITIONS}\ntimeout = {TIMEOUT}\n"
                      f"[[targets]]\ntarget = {json.dumps(target('reach', 'reaches_for_the_gate'))}\n"
                      f"[[targets]]\ntarget = {json.dumps(target('reach', 'waits_in_the_other_lane'))}\n")
    config.chmod(0o644)
    environment = {**os.environ, "POSENC_HOSTILE_REACH": str(folder / "reach.jsonl"),
                   "POSENC_HOSTILE_NEIGHBOUR": str(folder / "neighbour.pid")}
    done = run([sys.executable, "-m", "posenc_spec", "check", "--config", str(config), "-j", "2"], cwd=WORKTREE,
               env=environment, capture_output=True, text=True, timeout=RUN_LIMIT)
    lines = (folder / "reach.jsonl").read_text().splitlines() if (folder / "reach.jsonl").exists() else []
    assert len(lines) == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(lines[0]), done


@needs_root
def test_as_root_a_target_reaches_nothing_of_the_gate(tmp_path):
    """Under root each target runs as a user of its own: tracing, reading through /proc and
    signalling the gate, its templates and the other lane's child are all refused, and
    both targets conform."""
    attempts, done = _reach(tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert attempts == dict.fromkeys(TRACING + SIGNALS, "refused"), attempts


@needs_root
def test_as_an_ordinary_user_a_target_cannot_trace_or_read_the_gate(tmp_path):
    """As an ordinary user the gate and its templates are not traceable or readable through
    /proc by the target (they are not dumpable); the target, of the same user, can signal
    them and the other lane's child unless its signals are confined (Landlock ABI 6, or the
    seccomp signal filter before it), as docs/checks.md says."""
    attempts, done = _reach(tmp_path, run_as_other_user)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert {name: attempts[name] for name in TRACING} == dict.fromkeys(TRACING, "refused"), attempts
    signals = "refused" if SIGNALS_CONFINED_AS_USER else "allowed"
    assert {name: attempts[name] for name in SIGNALS} == dict.fromkeys(SIGNALS, signals), attempts


PRIVATE_TARGET = '''\
from pathlib import Path


def table(num_positions, dim):
    import private_helper  # a module of its own folder, imported at call time

    base = float((Path(__file__).parent / "base.txt").read_text())  # a data file, read at call time
    return private_helper.vaswani(num_positions, dim, base)
'''
PRIVATE_HELPER = '''\
import numpy as np


def vaswani(num_positions, dim, base):
    if dim % 2:
        raise ValueError("odd width")
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * base ** (-2.0 * k / dim)[None, :]
    table = np.empty((num_positions, dim))
    table[:, 0::2], table[:, 1::2] = np.sin(theta), np.cos(theta)
    return table.astype(np.float32)
'''


@needs_root
def test_as_root_a_target_in_a_folder_only_root_reads_still_runs(tmp_path):
    """A target whose module, helper module and data file only root may read (a checkout
    under a 0700 home) imports, imports its helper at call time, reads its data and conforms:
    the user of its own keeps the right to read what root can."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "enc.py").write_text(PRIVATE_TARGET)
    (private / "private_helper.py").write_text(PRIVATE_HELPER)
    (private / "base.txt").write_text("10000\n")
    for path in private.iterdir():
        path.chmod(0o600)
    done = subprocess.run([sys.executable, "-m", "posenc_spec", "check", f"{private / 'enc.py'}:table",
                           "--max-positions", str(MAX_POSITIONS), "--timeout", str(TIMEOUT)], cwd=WORKTREE,
                          capture_output=True, text=True, timeout=RUN_LIMIT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "conforms" in done.stdout


GETUSER_TARGET = '''\
import getpass

import numpy as np


def table(num_positions, dim):
    getpass.getuser()  # what logging and cache paths ask
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    out = np.empty((num_positions, dim))
    out[:, 0::2], out[:, 1::2] = np.sin(theta), np.cos(theta)
    return out.astype(np.float32)
'''


@needs_root
def test_as_root_the_login_name_still_answers(tmp_path):
    """The user of a target's own has no entry in the password database: a target asking
    getpass.getuser(), in an environment that names no user (CI's), still conforms."""
    (tmp_path / "asks_the_user.py").write_text(GETUSER_TARGET)
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("LOGNAME", "USER", "LNAME", "USERNAME")}
    done = subprocess.run([sys.executable, "-m", "posenc_spec", "check", f"{tmp_path / 'asks_the_user.py'}:table",
                           "--odd", "skip", "--max-positions", str(MAX_POSITIONS), "--timeout", str(TIMEOUT)],
                          cwd=WORKTREE, env=environment, capture_output=True, text=True, timeout=RUN_LIMIT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
