"""What a target can still change or reach when the gate runs as an ordinary user who owns
the files around it (``meta_tests/hostile/confined.py``), with the confinement the kernel
offers (Landlock: ``posenc_spec/gate/child/confinement.py``; a seccomp filter that closes
new sockets: ``posenc_spec/gate/child/confine_sockets.py``) and without it
(``POSENC_SPEC_CONFINEMENT=off``, where every attempt must succeed: the attacks are real).
The ordinary user is emulated from root (``meta_tests/another_user.py``): CI runs as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from meta_tests.another_user import OTHER_UID, run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, SIGNALS_CONFINED_AS_USER, target
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.gate.child import confine_sockets
from posenc_spec.gate.child.confinement import SCOPE_ABI, landlock_abi

WORKTREE = Path(__file__).resolve().parents[2]
ATTEMPTS = ("append to a module the user owns", "plant a .pth file", "write beside the report",
            "signal the slot template", "signal the gate", "connect to an abstract socket outside")
SOCKET_ATTEMPTS = ("connect to a TCP port on 127.0.0.1", "connect to a unix socket's path",
                   "send a datagram to a unix socket's path from a socket pair")
EVERY_ATTEMPT = ATTEMPTS + SOCKET_ATTEMPTS
VICTIM = "VALUE = 1\n"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user from root")
needs_scoping = pytest.mark.skipif(landlock_abi() == 0 or not SIGNALS_CONFINED_AS_USER,
                                   reason=f"needs Landlock, and its ABI {SCOPE_ABI} (Linux 6.12) or the seccomp signal "
                                          "filter to confine signals")
needs_filter = pytest.mark.skipif(not confine_sockets.available(),
                                  reason="needs a seccomp filter: Linux on x86_64 or aarch64")


class _Listeners:
    """What the reaching target's socket attempts aim at, opened by this (unconfined) test
    process: an abstract unix socket, a TCP port on 127.0.0.1, a unix socket with a path and
    a unix datagram socket with a path, the last two writable by anyone (the target may be
    another user: only the confinement is to refuse it)."""

    def __init__(self, stack: contextlib.ExitStack, folder: Path):
        def opened(family, kind, address):
            listener = stack.enter_context(socket.socket(family, kind))
            listener.bind(address)
            if kind == socket.SOCK_STREAM:
                listener.listen(4)
            if isinstance(address, str) and not address.startswith("\0"):
                os.chmod(address, 0o777)
            listener.setblocking(False)
            return listener

        folder.mkdir(mode=0o755)
        self.abstract_name = f"posenc-hostile-{os.getpid()}-{folder.parent.name}"
        self.abstract = opened(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + self.abstract_name)
        self.tcp = opened(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
        self.path = opened(socket.AF_UNIX, socket.SOCK_STREAM, str(folder / "listening.sock"))
        self.datagram = opened(socket.AF_UNIX, socket.SOCK_DGRAM, str(folder / "datagrams.sock"))

    def environment(self) -> dict:
        return {"POSENC_HOSTILE_ABSTRACT": self.abstract_name,
                "POSENC_HOSTILE_TCP_PORT": str(self.tcp.getsockname()[1]),
                "POSENC_HOSTILE_UNIX_PATH": self.path.getsockname(),
                "POSENC_HOSTILE_DATAGRAM_PATH": self.datagram.getsockname()}

    def reached(self) -> dict[str, bool]:
        """Whether each socket attempt's listener saw a connection (a datagram)."""
        return {name: _received(listener) for name, listener in zip(
            SOCKET_ATTEMPTS, (self.tcp, self.path, self.datagram), strict=True)}


def _received(listener: socket.socket) -> bool:
    try:
        if listener.type == socket.SOCK_DGRAM:
            listener.recv(64)
        else:
            listener.accept()[0].close()
    except BlockingIOError:
        return False
    return True


def _run(tmp_path: Path, run, confinement: str) -> tuple[dict, subprocess.CompletedProcess, Path, dict]:
    """One ``check`` of the reaching target, its report in a folder its user owns: what each
    attempt got, the finished command, that folder, and which listeners were reached."""
    owned, record = tmp_path / "owned", tmp_path / "record"
    (owned / "reports").mkdir(parents=True)
    (owned / "victim.py").write_text(VICTIM)
    record.mkdir(mode=0o777)
    record.chmod(0o777)
    for path in (owned, owned / "reports", owned / "victim.py"):
        os.chown(path, OTHER_UID, OTHER_UID)
    with contextlib.ExitStack() as stack:
        listeners = _Listeners(stack, tmp_path / "sockets")
        environment = {**os.environ, **listeners.environment(), "POSENC_HOSTILE_OWNED": str(owned),
                       "POSENC_HOSTILE_RECORD": str(record / "attempts.jsonl"), "POSENC_SPEC_WRITABLE": str(record),
                       "POSENC_SPEC_CONFINEMENT": confinement}
        done = run([sys.executable, "-m", "posenc_spec", "check", target("confined", "reaches_out"),
                    "--max-positions", str(MAX_POSITIONS), "--json", str(owned / "reports" / "report.json")],
                   cwd=WORKTREE, env=environment, capture_output=True, text=True, timeout=RUN_LIMIT)
        reached = listeners.reached()
    lines = (record / "attempts.jsonl").read_text().splitlines() if (record / "attempts.jsonl").exists() else []
    assert lines, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(lines[0]), done, owned, reached


@needs_root
@needs_scoping
@needs_filter
def test_a_confined_target_of_an_ordinary_user_changes_and_reaches_nothing_outside(tmp_path):
    """As an ordinary user, confined: the target cannot change the user's files (a module, a
    .pth file, the report's folder), signal the gate or its template, connect to an abstract
    socket outside, a TCP port or a unix socket's path; no listener sees it; it conforms,
    and the report is the gate's."""
    attempts, done, owned, reached = _run(tmp_path, run_as_other_user, "on")
    assert attempts == dict.fromkeys(EVERY_ATTEMPT, "refused"), attempts
    assert reached == dict.fromkeys(SOCKET_ATTEMPTS, False), reached
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (owned / "victim.py").read_text() == VICTIM and not (owned / "planted.pth").exists()
    assert json.loads((owned / "reports" / "report.json").read_text())["targets"][0]["status"] == "conforms"


@needs_root
def test_unconfined_the_same_target_reaches_everything(tmp_path):
    """With the confinement switched off, every attempt of the same target succeeds as the
    ordinary user and each listener sees it: what the confinement refuses is really there
    to refuse."""
    attempts, done, owned, reached = _run(tmp_path, run_as_other_user, "off")
    assert attempts == dict.fromkeys(EVERY_ATTEMPT, "allowed"), attempts
    assert reached == dict.fromkeys(SOCKET_ATTEMPTS, True), reached
    assert (owned / "victim.py").read_text().startswith(VICTIM + "# reached\n")


@needs_root
@needs_scoping
@needs_filter
def test_as_root_the_confinement_adds_to_the_user_of_its_own(tmp_path):
    """As root (each target a user of its own) and confined: every attempt is refused, the
    sockets too, which a user of its own alone does not refuse (the listeners accept anyone)."""
    attempts, done, _, reached = _run(tmp_path, subprocess.run, "on")
    assert attempts == dict.fromkeys(EVERY_ATTEMPT, "refused"), attempts
    assert reached == dict.fromkeys(SOCKET_ATTEMPTS, False), reached
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
