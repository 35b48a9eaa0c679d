"""``posenc-spec check`` against hostile output paths and extreme options.

The run whose stdout encoding matters is a real process; the others run in this process
through ``posenc_spec.cli.main``, once per module. A target module that writes a marker
file when imported (``meta_tests/hostile/output.py``) shows whether a command stopped
before any target ran.
"""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from meta_tests.guards import CLI_RUN_SECONDS
from meta_tests.hostile import MAX_POSITIONS, assert_complete_entry, strict_json, target
from posenc_spec.cli import main
from posenc_spec.gate.declaration import declare

WORKTREE = Path(__file__).resolve().parents[2]
SURROGATE = target("output", "surrogate_message")
CORRECT = target("output", "correct_table")
TIMEOUT = 5
COMMON = ["--max-positions", str(MAX_POSITIONS), "--timeout", str(TIMEOUT), "-j", "1"]
UMASK = 0o027
# A guard against a hung command, not a measurement: every run here takes seconds.
RUN_LIMIT = CLI_RUN_SECONDS  # a guard against a hung command (meta_tests/guards.py)
# Options the gate refuses because the grid could not tell the declared convention from
# its neighbours (they are found after the gate starts): the flag each error must name.
VACUOUS = {
    "scale": (["--scale", "1e12"], "--scale"),
    "offset": (["--offset", "1e12"], "--offset"),
    "one-position": (["--max-positions", "1"], "--max-positions"),
    "tiny-t-max": (["--api", "timesteps", "--t-max", "1e-9"], "--t-max"),
}
# Options refused while the command line is read.
REFUSED = [
    (["--timeout", "1e7"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--api", "timesteps", "--t-max", str(2**63)], "--t-max"),
    (["--max-memory", "1"], "--max-memory"),
    (["--jobs", "0"], "--jobs"),
    (["--shard", "3/2"], "--shard"),
]


def _command(*args):
    return [sys.executable, "-m", "posenc_spec", *args]


def _read_all(fd: int) -> str:
    """Everything waiting in the pipe ``fd`` (opened non-blocking), its writer gone."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every command that starts the gate: name -> (exit status, stdout, stderr), plus the
    folder they wrote into and what the FIFO's reader got. The strict-encoding run is a
    process of its own (its stdout's encoding is the point); the others run here."""
    folder = tmp_path_factory.mktemp("cli")
    folder.chmod(0o777)  # the target module marks its import here, also as a user of its own (under root)
    (folder / "link.json").symlink_to(folder / "through-link.json")
    os.mkfifo(folder / "report.fifo")
    surrogate = subprocess.Popen(
        _command("check", SURROGATE, *COMMON, "--json", str(folder / "surrogate.json")), cwd=WORKTREE,
        env={**os.environ, "PYTHONPATH": str(WORKTREE), "PYTHONIOENCODING": "utf-8:strict"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    commands = {
        "symlink": (["check", CORRECT, *COMMON, "--json", str(folder / "link.json")], UMASK),
        "fifo": (["check", CORRECT, *COMMON, "--json", str(folder / "report.fifo")], None),
        "devnull": (["check", CORRECT, *COMMON, "--json", os.devnull], None),
        "proc": (["check", CORRECT, *COMMON, "--json", "/proc/posenc-hostile.json"], None),
    }
    for name, (flags, _) in VACUOUS.items():
        keys = [] if "--max-positions" in flags else ["--max-positions", str(MAX_POSITIONS)]
        commands[name] = (["check", CORRECT, *keys, *flags, "--timeout", str(TIMEOUT), "-j", "1"], None)
    # The FIFO's reader is there before the command starts (a FIFO nobody reads is refused),
    # with room for the whole report, and reads it once the command is done.
    reader = os.open(folder / "report.fifo", os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 1 << 20)
    try:
        results = {name: _in_process(argv, umask, folder / f"{name}.imported")
                   for name, (argv, umask) in commands.items()}
        fifo = _read_all(reader)
    finally:
        os.close(reader)
    out, err = surrogate.communicate(timeout=RUN_LIMIT)
    results["surrogate"] = (surrogate.returncode, out.decode("utf-8", "backslashreplace"),
                            err.decode("utf-8", "backslashreplace"))
    return {"results": results, "folder": folder, "fifo": fifo}


def _in_process(argv, umask, marker) -> tuple[int, str, str]:
    """``posenc-spec ARGV`` in this process, under ``umask``, its output captured; the
    target module leaves ``marker`` when it is imported."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    old_umask = os.umask(umask) if umask is not None else None
    os.environ["POSENC_HOSTILE_IMPORTED"] = str(marker)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        del os.environ["POSENC_HOSTILE_IMPORTED"]
        if old_umask is not None:
            os.umask(old_umask)
    return status, out.getvalue(), err.getvalue()


def _assert_report(text: str, target_name: str, status: str) -> dict:
    """The report parses as strict JSON, holds the target's complete entry and ``status``."""
    data = strict_json(text)
    assert data["status"] == status and len(data["targets"]) == 1, data["status"]
    declaration = declare({"target": target_name, "max_positions": MAX_POSITIONS, "timeout": TIMEOUT})
    assert_complete_entry(data["targets"][0], declaration)
    return data


def test_unprintable_message_is_reported_not_raised(runs):
    """A reason holding lone surrogates, printed to a strict UTF-8 stdout: exit 1, no
    traceback, the text escaped on screen and kept exactly in the JSON report."""
    status, out, err = runs["results"]["surrogate"]
    assert status == 1 and "Traceback" not in out + err, err[-2000:]
    assert "\\udc80" in out, out[-1000:]
    data = _assert_report((runs["folder"] / "surrogate.json").read_text(encoding="utf-8"), SURROGATE,
                          "does-not-conform")
    reasons = {check["id"]: check["reason"] for check in data["targets"][0]["checks"]}
    assert "\udc80" in reasons["call[50x8]"] and "\ud800" in reasons["call[50x8]"], reasons["call[50x8]"]


def test_json_through_a_symlink_gets_the_umask(runs):
    """``--json`` to a symlink writes its target and keeps the link; the new file gets the
    permissions the umask gives (0o666 & ~0o027 = 0o640)."""
    status, _, err = runs["results"]["symlink"]
    assert status == 0, err[-2000:]
    link, written = runs["folder"] / "link.json", runs["folder"] / "through-link.json"
    assert link.is_symlink() and link.resolve() == written
    _assert_report(written.read_text(encoding="utf-8"), CORRECT, "conforms")
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~UMASK, oct(written.stat().st_mode)


def test_json_into_a_fifo(runs):
    """``--json`` to a FIFO with a reader: the reader gets the whole report."""
    status, _, err = runs["results"]["fifo"]
    assert status == 0, err[-2000:]
    assert stat.S_ISFIFO((runs["folder"] / "report.fifo").stat().st_mode)
    _assert_report(runs["fifo"], CORRECT, "conforms")


def test_json_to_dev_null(runs):
    """``--json /dev/null`` is written like any character device: exit 0, no error."""
    status, _, err = runs["results"]["devnull"]
    assert (status, err) == (0, ""), err[-2000:]


def test_unwritable_folder_stops_before_any_target(runs):
    """``--json`` into a folder nobody can write (/proc): exit 2 naming the option, before
    the target is imported."""
    status, _, err = runs["results"]["proc"]
    assert status == 2 and "--json" in err, err[-2000:]
    assert not (runs["folder"] / "proc.imported").exists(), "the target ran before the usage error"


@pytest.mark.parametrize("name", list(VACUOUS))
def test_vacuous_options_are_usage_errors(runs, name):
    """Options that leave nothing to check: exit 2, one line naming the option, no
    traceback, no target imported."""
    status, out, err = runs["results"][name]
    flag = VACUOUS[name][1]
    assert status == 2 and "Traceback" not in out + err, err[-2000:]
    assert err.count("\n") == 1 and flag in err, err
    assert not (runs["folder"] / f"{name}.imported").exists(), "the target ran before the usage error"


@pytest.mark.parametrize("flags, flag", REFUSED, ids=[" ".join(flags) for flags, _ in REFUSED])
def test_extreme_options_are_usage_errors(capsys, flags, flag):
    """Each extreme option: exit 2 with one line on stderr naming it, and no traceback."""
    assert main(["check", CORRECT, *flags]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and flag in err and "Traceback" not in out + err, err


@pytest.mark.parametrize("where", ["missing-folder", "folder"])
def test_json_destination_refused_before_any_target(capsys, monkeypatch, tmp_path, where):
    """``--json`` into a folder that does not exist, or naming a folder: exit 2 with one
    line naming the option, and the target never imported."""
    tmp_path.chmod(0o777)  # where an import would leave its marker, whatever user it ran as
    marker = tmp_path / "imported"
    monkeypatch.setenv("POSENC_HOSTILE_IMPORTED", str(marker))
    destination = tmp_path / "no-such-folder" / "report.json" if where == "missing-folder" else tmp_path
    assert main(["check", CORRECT, *COMMON, "--json", str(destination)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "--json" in err and "Traceback" not in out + err, err
    assert not marker.exists()
