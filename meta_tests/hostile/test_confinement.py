"""What a target can still change or reach when the gate runs as an ordinary user who owns
the files around it (``meta_tests/hostile/confined.py``), with the confinement the kernel
offers (Landlock: ``posenc_spec/gate/child/confinement.py``) and without it
(``POSENC_SPEC_CONFINEMENT=off``, where every attempt must succeed: the attacks are real).
The ordinary user is emulated from root (``meta_tests/another_user.py``): CI runs as root.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from meta_tests.another_user import OTHER_UID, run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, target
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.gate.child.confinement import SCOPE_ABI, landlock_abi

WORKTREE = Path(__file__).resolve().parents[2]
ATTEMPTS = ("append to a module the user owns", "plant a .pth file", "write beside the report",
            "signal the slot template", "signal the gate", "connect to an abstract socket outside")
VICTIM = "VALUE = 1\n"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user from root")
needs_scoping = pytest.mark.skipif(landlock_abi() < SCOPE_ABI,
                                   reason=f"needs Landlock ABI {SCOPE_ABI} (Linux 6.12) to confine signals and sockets")


def _run(tmp_path: Path, run, confinement: str) -> tuple[dict, subprocess.CompletedProcess, Path]:
    """One ``check`` of the reaching target, its report in a folder its user owns: what each
    attempt got, the finished command, and that folder."""
    owned, record = tmp_path / "owned", tmp_path / "record"
    (owned / "reports").mkdir(parents=True)
    (owned / "victim.py").write_text(VICTIM)
    record.mkdir(mode=0o777)
    record.chmod(0o777)
    for path in (owned, owned / "reports", owned / "victim.py"):
        os.chown(path, OTHER_UID, OTHER_UID)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        name = f"posenc-hostile-{os.getpid()}-{tmp_path.name}"
        listener.bind("\0" + name)
        listener.listen(4)
        environment = {**os.environ, "POSENC_HOSTILE_OWNED": str(owned), "POSENC_HOSTILE_ABSTRACT": name,
                       "POSENC_HOSTILE_RECORD": str(record / "attempts.jsonl"), "POSENC_SPEC_WRITABLE": str(record),
                       "POSENC_SPEC_CONFINEMENT": confinement}
        done = run([sys.executable, "-m", "posenc_spec", "check", target("confined", "reaches_out"),
                    "--max-positions", str(MAX_POSITIONS), "--json", str(owned / "reports" / "report.json")],
                   cwd=WORKTREE, env=environment, capture_output=True, text=True, timeout=RUN_LIMIT)
    lines = (record / "attempts.jsonl").read_text().splitlines() if (record / "attempts.jsonl").exists() else []
    assert lines, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(lines[0]), done, owned


@needs_root
@needs_scoping
def test_a_confined_target_of_an_ordinary_user_changes_and_reaches_nothing_outside(tmp_path):
    """As an ordinary user, confined: the target cannot change the user's files (a module, a
    .pth file, the report's folder), signal the gate or its template, or connect to an
    abstract socket outside; it conforms, and the report is the gate's."""
    attempts, done, owned = _run(tmp_path, run_as_other_user, "on")
    assert attempts == dict.fromkeys(ATTEMPTS, "refused"), attempts
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (owned / "victim.py").read_text() == VICTIM and not (owned / "planted.pth").exists()
    assert json.loads((owned / "reports" / "report.json").read_text())["targets"][0]["status"] == "conforms"


@needs_root
def test_unconfined_the_same_target_reaches_everything(tmp_path):
    """With the confinement switched off, every attempt of the same target succeeds as the
    ordinary user: what the confinement refuses is really there to refuse."""
    attempts, done, owned = _run(tmp_path, run_as_other_user, "off")
    assert attempts == dict.fromkeys(ATTEMPTS, "allowed"), attempts
    assert (owned / "victim.py").read_text().startswith(VICTIM + "# reached\n")


@needs_root
@needs_scoping
def test_as_root_the_confinement_adds_to_the_user_of_its_own(tmp_path):
    """As root (each target a user of its own) and confined: every attempt is refused, the
    abstract socket too, which a user of its own alone does not refuse."""
    attempts, done, _ = _run(tmp_path, subprocess.run, "on")
    assert attempts == dict.fromkeys(ATTEMPTS, "refused"), attempts
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
