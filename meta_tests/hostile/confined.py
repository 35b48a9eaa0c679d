"""A target that reaches out of its own processes the ways a target running as the gate's
user could (an ordinary CI user owns the interpreter, site-packages, the checkout and the
reports): each attempt is harmless if it succeeds (a line appended to a module the test
made, an empty file created, signal 0, a connection closed at once), and what each got goes
as one JSON line into ``$POSENC_HOSTILE_RECORD``: ``{attempt: "refused" | "allowed"}``.
The target returns the correct table. See ``meta_tests/hostile/test_confinement.py``.
"""

from __future__ import annotations

import json
import os
import socket

from hostile_tables import vaswani

TEMPLATE = b"posenc_spec.gate.child.template"
ATTEMPTS = ("append to a module the user owns", "plant a .pth file", "write beside the report",
            "signal the slot template", "signal the gate", "connect to an abstract socket outside")
SOCKET_ATTEMPTS = ("connect to a TCP port on 127.0.0.1", "connect to a unix socket's path",
                   "send a datagram to a unix socket's path from a socket pair")


def _gate() -> int:
    """The gate's process id: the first ancestor that does not run the template's code."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if TEMPLATE not in handle.read():
                return pid
        with open(f"/proc/{pid}/stat", "rb") as handle:
            pid = int(handle.read().rpartition(b")")[2].split()[1])
    raise RuntimeError("no gate above this process")


def _connect(name: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect("\0" + name)


def _connect_tcp(port: str) -> None:
    with socket.create_connection(("127.0.0.1", int(port)), timeout=10):
        pass


def _connect_path(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)


def _send_datagram(path: str) -> None:
    """A datagram socket needs no ``socket()`` of its own: one of a pair is pointed elsewhere."""
    first, second = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with first, second:
        first.sendto(b"reached", path)


def _append(path: str) -> None:
    with open(path, "a") as handle:
        handle.write("# reached\n")


def _attempt(action) -> str:
    try:
        action()
    except OSError:
        return "refused"
    return "allowed"


def reaches_out(num_positions, dim):
    """Tries each of ``ATTEMPTS`` and ``SOCKET_ATTEMPTS`` and records what it got; returns the
    correct table."""
    owned = os.environ["POSENC_HOSTILE_OWNED"]  # a folder of the gate's user: a module, the report
    actions = [lambda: _append(os.path.join(owned, "victim.py")),
               lambda: open(os.path.join(owned, "planted.pth"), "x").close(),
               lambda: open(os.path.join(owned, "reports", "forged.json"), "x").close(),
               lambda: os.kill(os.getppid(), 0),
               lambda: os.kill(_gate(), 0),
               lambda: _connect(os.environ["POSENC_HOSTILE_ABSTRACT"]),
               lambda: _connect_tcp(os.environ["POSENC_HOSTILE_TCP_PORT"]),
               lambda: _connect_path(os.environ["POSENC_HOSTILE_UNIX_PATH"]),
               lambda: _send_datagram(os.environ["POSENC_HOSTILE_DATAGRAM_PATH"])]
    got = {name: _attempt(action) for name, action in zip(ATTEMPTS + SOCKET_ATTEMPTS, actions, strict=True)}
    with open(os.environ["POSENC_HOSTILE_RECORD"], "a") as record:
        record.write(json.dumps(got) + "\n")
    return vaswani(num_positions, dim)
