"""What a target leaves behind (``meta_tests/hostile/escapes.py``) does not outlive the run.
A daemon that kills its slot template before the turn ends escapes the subreaper that would
have killed it: the root template and the command line's gate are subreapers too, so it is
re-parented to one of them and killed when the gate exits (run as an ordinary user with the
confinement off, where the kill goes through; confined, or as root, it is refused). A file
of shared memory a target with a user of its own leaves is removed after its turn.
"""

from __future__ import annotations

import os
import subprocess
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


@pytest.mark.skipif(os.geteuid() != 0, reason="a target has a user of its own only under root")
def test_as_root_the_shared_memory_a_target_leaves_is_removed(tmp_path):
    """A closed file under /dev/shm of the target's own user (memory no limit counts once it
    is closed) is gone after the target's turn; the target conforms."""
    leftover = Path("/dev/shm") / f"posenc-hostile-{os.getpid()}-{tmp_path.name}"
    environment = {**os.environ, "POSENC_HOSTILE_SHM": str(leftover)}
    done = subprocess.run([sys.executable, "-m", "posenc_spec", "check", target("escapes", "leaves_shared_memory"),
                           "--max-positions", str(MAX_POSITIONS)], cwd=WORKTREE, env=environment,
                          capture_output=True, text=True, timeout=RUN_LIMIT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not leftover.exists()
