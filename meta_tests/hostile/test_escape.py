"""A daemon that kills its slot template before the turn ends (``meta_tests/hostile/escapes.py``)
escapes the subreaper that would have killed it: the root template and the command line's
gate are subreapers too, so it is re-parented to one of them and killed when the gate exits.
Run as an ordinary user with the confinement off, where the kill goes through (confined, or
as root, it is refused).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from meta_tests.another_user import run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, alive, target
from meta_tests.hostile.test_cli import RUN_LIMIT

WORKTREE = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user from root")
def test_a_daemon_that_kills_its_template_does_not_outlive_the_gate(tmp_path):
    """The daemon recorded itself (the kill went through) and is gone once the command exited."""
    tmp_path.chmod(0o777)
    record = tmp_path / "daemon.pid"
    environment = {**os.environ, "POSENC_HOSTILE_DAEMON": str(record), "POSENC_SPEC_CONFINEMENT": "off"}
    command = [sys.executable, "-m", "posenc_spec", "check", target("escapes", "kills_its_template_and_stays"),
               "--max-positions", str(MAX_POSITIONS)]
    done = run_as_other_user(command, cwd=WORKTREE, env=environment, capture_output=True, text=True,
                             timeout=RUN_LIMIT)
    assert record.exists(), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    daemon = int(record.read_text())
    deadline = time.monotonic() + 10  # SIGKILL and the re-parenting reap take milliseconds
    while alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(daemon), f"the daemon {daemon} outlived the gate"
