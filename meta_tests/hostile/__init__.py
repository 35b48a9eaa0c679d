"""A hostile corpus for the gate: targets that attack it, each with the verdict it must get.

Each module holds plain targets (``fn(num_positions, dim)`` or ``fn(timesteps, dim)``)
whose docstrings say what they do and the verdict the gate must give. The gate imports
them as file targets (``path/to/module.py:fn``, with the module's folder on ``sys.path``),
so they never import this package and the tests never import them (some change their
process when imported). This file holds what the tests share: where the targets are, the
cap every declaration uses, what a complete report must hold, and whether a process lives.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import socket
from pathlib import Path

from posenc_spec.gate.child import confine_signals
from posenc_spec.gate.child.confinement import SCOPE_ABI, landlock_abi
from posenc_spec.gate.engine import plan
from posenc_spec.gate.output import json_report
from posenc_spec.gate.sandbox import confinement_wanted
from posenc_spec.results import STATUSES

HERE = Path(__file__).resolve().parent
# Every declaration caps the grid at 64 positions: the 50x8 call already tells the presets
# apart, and a target costs about 0.1 s instead of seconds.
MAX_POSITIONS = 64
ENTRY_KEYS = {"position", "target", "resolved", "source", "declaration", "status", "seconds", "warnings", "checks"}
WORST_KEYS = {"index", "size", "actual", "expected", "error", "tolerance", "ratio"}
# Whether a confined target of an ordinary user signals nothing outside its own processes:
# Landlock scopes its signals (ABI 6, Linux 6.12), or the seccomp signal filter keeps them.
SIGNALS_CONFINED_AS_USER = confinement_wanted() and (landlock_abi() >= SCOPE_ABI or confine_signals.available())


def target(module: str, function: str) -> str:
    """The file target of ``function`` in ``meta_tests/hostile/<module>.py`` (``module`` may
    start with a folder: ``isolation/canary``)."""
    return f"{HERE / (module + '.py')}:{function}"


def _refuse_constant(name):
    raise ValueError(f"{name} is not strict JSON")


def strict_json(text: str):
    """``text`` parsed as strict JSON (NaN and Infinity refused)."""
    return json.loads(text, parse_constant=_refuse_constant)


def report_json(reports) -> dict:
    """The ``--json`` report of ``reports`` as ``posenc-spec check`` writes it, parsed back."""
    entries = [json_report.target_entry(report, position) for position, report in enumerate(reports)]
    return strict_json(json_report.to_text(json_report.run_report(entries, len(entries))))


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running (a zombie or a dead one is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return state.rpartition(b")")[2].split()[0] not in (b"Z", b"X")


def exit_status(data: dict) -> int:
    """The exit status ``posenc-spec check`` gives a JSON report."""
    return json_report.EXIT_STATUS[data["status"]]


def assert_complete_entry(entry: dict, declaration) -> None:
    """A target's JSON entry holds every planned check id once, in order, each with a
    known status and a reason; its status agrees with its checks."""
    name = entry.get("target")
    assert set(entry) >= ENTRY_KEYS, f"{name}: entry lacks {sorted(ENTRY_KEYS - set(entry))}"
    ids = [check["id"] for check in entry["checks"]]
    assert ids == plan(declaration), f"{name}: check ids {ids} differ from the plan {plan(declaration)}"
    for check in entry["checks"]:
        assert check["status"] in STATUSES, f"{name}: {check['id']} has status {check['status']!r}"
        assert isinstance(check["reason"], str) and check["reason"], f"{name}: {check['id']} has no reason"
        worst = check["worst"]
        assert worst is None or set(worst) == WORST_KEYS, f"{name}: {check['id']} worst {worst}"
    failed = [check["id"] for check in entry["checks"] if check["status"] == "failed"]
    importable = entry["checks"][0]["status"] != "failed"
    expected = ("conforms" if not failed else "does-not-conform") if importable else "error"
    assert entry["status"] == expected, f"{name}: status {entry['status']} with failed checks {failed[:3]}"


def raw_syscall(number: int, *arguments) -> int:
    """System call ``number`` with integer ``arguments`` through the C library (for calls
    Python's ``os`` has no function for, or aimed past what it checks); OSError on failure."""
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(argument) for argument in arguments))
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return result


def tried(attempts: dict) -> dict:
    """What each attempt (name -> a call) got: ``"allowed"``, or ``"refused (EPERM)"`` named
    by the error it raised."""
    got = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            got[name] = "allowed"
        except OSError as error:
            got[name] = f"refused ({errno.errorcode[error.errno]})"
    return got


def in_a_forked_process(body) -> dict:
    """The dict ``body(got)`` filled in a forked process (what it filled before an error
    too), sent back through a socket pair made before the fork: an inherited socket, as
    the gate's own channel to a child."""
    parent_end, child_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        got: dict = {}
        try:
            parent_end.close()
            body(got)
        finally:
            child_end.sendall(json.dumps(got).encode())
            os._exit(0)
    child_end.close()
    with parent_end:
        received = b"".join(iter(lambda: parent_end.recv(65536), b""))
    os.waitpid(pid, 0)
    return json.loads(received)
