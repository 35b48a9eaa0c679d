"""Targets that put memory in ``/dev/shm`` (``meta_tests/hostile/shared_memory.py``), run by
``posenc-spec check --max-memory 512MiB`` as root (each target a user of its own) and as an
ordinary user emulated from root (``SHM_UID``, a user no other test runs as), and the
private ``/dev/shm`` itself (``posenc_spec/gate/child/confinement.py``).

Where a target has a private ``/dev/shm`` (a tmpfs in a mount namespace of its own, as large
as its memory limit) or a user of its own, every byte it writes there counts against
``--max-memory`` and nothing of it is left after its turn; a correct program that uses
``multiprocessing.Lock``, ``shm_open`` and torch's shared memory conforms, and a file of
the gate's user there is not touched. Where the kernel refuses an ordinary user the
namespace (or the namespace would lose the import path: a capability that reads files
counts only where it was given), each report says that the files are not counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_tests.another_user import OTHER_UID, run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, target
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.gate.child import confinement, limits

SHM_UID = OTHER_UID + 3
MEMORY_LIMIT = "512MiB"
TIMEOUT = 20
WORKTREE = Path(__file__).resolve().parents[2]
SHARED_MEMORY = Path(confinement.SHARED_MEMORY)
ATTACKS = ("fills_closed_files", "fills_many_small_files", "keeps_unlinked_files_open", "moves_files_out")
CORRECT = ("leaves_a_semaphore", "changes_the_users_file", "shares_memory_correctly")
AFTER = "sees_no_earlier_files"
NOT_COUNTED = f"its files under {SHARED_MEMORY} were not counted against --max-memory"
USERS_TEXT = "the user's own\n"
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="runs targets as root and as an ordinary user from root"),
              pytest.mark.skipif(not SHARED_MEMORY.is_dir(), reason=f"needs Linux's {SHARED_MEMORY}")]


def _as(user: str, command: list[str], **keywords) -> subprocess.CompletedProcess:
    keywords = {"cwd": WORKTREE, "capture_output": True, "text": True, "timeout": RUN_LIMIT, **keywords}
    if user == "root":
        return subprocess.run(command, **keywords)
    return run_as_other_user(command, uid=SHM_UID, **keywords)


def _private_possible(user: str) -> bool:
    """Whether a gate run by ``user`` gives its targets a private ``/dev/shm``: asked of the
    same interpreter, as that user, from a process that is not dumpable (as a template is)."""
    code = ("from posenc_spec.gate.child import confinement, limits; limits.not_dumpable(); "
            "print(confinement.private_shared_memory_possible())")
    return _as(user, [sys.executable, "-c", code]).stdout.strip() == "True"


@pytest.fixture(scope="module", params=["root", "ordinary user"])
def run(request, tmp_path_factory):
    """One ``check`` of every attacker (each followed by a correct target) and the correct
    users of shared memory, by ``request.param``, with a file of that user under /dev/shm:
    ``(user, private, names and entries, leftovers, the user's file's text or None)``."""
    user = request.param
    private = _private_possible(user)
    # Without a private /dev/shm an ordinary user's attackers are not stopped: one shows the warning.
    attacks = ATTACKS if private or user == "root" else ATTACKS[:1]
    names = [name for attack in attacks for name in (attack, "vaswani_table")] + list(CORRECT) + [AFTER]
    folder = tmp_path_factory.mktemp("shm")
    folder.chmod(0o777)
    config = folder / "gate.toml"
    paths = [target("hostile_tables" if name == "vaswani_table" else "shared_memory", name) for name in names]
    config.write_text(f"max_positions = {MAX_POSITIONS}\ntimeout = {TIMEOUT}\n"
                      + "".join(f"[[targets]]\ntarget = {json.dumps(path)}\n" for path in paths))
    config.chmod(0o644)
    prefix = f"posenc-hostile-shm-{os.getpid()}-{user.replace(' ', '-')}"
    users_file = SHARED_MEMORY / f"{prefix}-users-file"
    users_file.write_text(USERS_TEXT)
    owner = 0 if user == "root" else SHM_UID
    os.chown(users_file, owner, owner)
    env = {**os.environ, "POSENC_HOSTILE_SHM_PREFIX": prefix, "POSENC_HOSTILE_USERS_FILE": str(users_file),
           "POSENC_SPEC_CONFINEMENT": "on"}
    try:
        done = _as(user, [sys.executable, "-m", "posenc_spec", "check", "--config", str(config), "-j", "1",
                          "--max-memory", MEMORY_LIMIT, "--json", "-"], env=env)
        assert done.stdout, (done.returncode, done.stderr[-2000:])
        entries = list(zip(names, json.loads(done.stdout)["targets"], strict=True))
        left = sorted(path.name for path in SHARED_MEMORY.iterdir() if prefix in path.name and path != users_file)
        kept = users_file.read_text() if users_file.exists() else None
    finally:
        for path in SHARED_MEMORY.iterdir():
            if prefix in path.name:
                path.unlink()
    return user, private, entries, left, kept


def _entry(entries, name: str) -> tuple[int, dict]:
    position = [each for each, _ in entries].index(name)
    return position, entries[position][1]


def _contained(user: str, private: bool) -> bool:
    return private or user == "root"


@pytest.mark.parametrize("attack", ATTACKS)
def test_memory_put_in_dev_shm_fails_the_memory_check(run, attack):
    """Closed files, thousands of small ones, files kept open with no name, files moved out:
    the first call fails naming --max-memory, and the correct target after it conforms.
    Where an ordinary user's target has no private /dev/shm, its report says so."""
    user, private, entries, _, _ = run
    if not _contained(user, private):
        _, entry = _entry(entries, ATTACKS[0])
        assert any(NOT_COUNTED in warning for warning in entry["warnings"]), entry["warnings"]
        return
    position, entry = _entry(entries, attack)
    failed = [check for check in entry["checks"] if check["status"] == "failed"]
    assert failed and failed[0]["id"].startswith("call[") and "--max-memory" in failed[0]["reason"], failed[:2]
    assert entries[position + 1][1]["status"] == "conforms", entries[position + 1][1]["checks"][:3]


def test_nothing_a_target_wrote_is_left_and_the_users_file_is_untouched(run):
    """After the run no file or semaphore a target made is under /dev/shm (a semaphore and a
    segment left on purpose among them), and the user's own file there is as it was."""
    user, private, _, left, kept = run
    if not _contained(user, private):
        pytest.skip("an ordinary user's target without a private /dev/shm shares the user's (the report says so)")
    assert left == []
    assert kept == USERS_TEXT


def test_a_target_finds_nothing_an_earlier_target_left_in_its_dev_shm(run):
    """The last target of the run, of the same module as every attacker and the semaphore
    left behind (so forked from the module template they shared, where there is one), finds
    none of their files in its /dev/shm."""
    user, private, entries, _, _ = run
    if not _contained(user, private):
        pytest.skip("an ordinary user's target without a private /dev/shm shares the user's (the report says so)")
    _, entry = _entry(entries, AFTER)
    assert entry["status"] == "conforms", [check for check in entry["checks"] if check["status"] == "failed"][:2]


@pytest.mark.parametrize("name", CORRECT)
def test_correct_users_of_shared_memory_conform(run, name):
    """A multiprocessing.Lock, shm_open segments, torch's shared memory, a semaphore left
    behind, a refused change to a file it may not touch: no false alarm."""
    _, _, entries, _, _ = run
    _, entry = _entry(entries, name)
    assert entry["status"] == "conforms", [check for check in entry["checks"] if check["status"] == "failed"][:2]


PRIVATE_TMPFS = """
import json, os, sys
from posenc_spec.gate.child import confinement, limits
limits.not_dumpable()
size, name = int(sys.argv[1]), sys.argv[2]
receiving, sending = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(receiving)
    try:
        confinement._mount_private_shared_memory(size)
    except OSError as error:
        os.write(sending, json.dumps({"refused": str(error)}).encode())
        os._exit(0)
    fd = os.open(os.path.join(confinement.SHARED_MEMORY, name), os.O_WRONLY | os.O_CREAT, 0o600)
    written, full = 0, False
    try:
        while written < 2 * size:
            written += os.write(fd, b"\\1" * 65536)
    except OSError as error:
        full = error.errno == 28
    os.close(fd)
    folder = os.open(confinement.SHARED_MEMORY, os.O_PATH)
    seen = confinement.shared_memory_bytes(folder)
    os.write(sending, json.dumps({"written": written, "full": full, "counted": seen, "uid": os.getuid()}).encode())
    os._exit(0)
os.close(sending)
os.waitpid(pid, 0)
print(os.read(receiving, 4096).decode())
"""


@pytest.mark.parametrize("user", ["root", "ordinary user"])
def test_a_private_dev_shm_is_capped_counted_and_gone_with_its_process(user):
    """In a process given a private /dev/shm of 4 MiB (as root, and as an ordinary user in a
    user namespace of its own): a write beyond it fails with ENOSPC, what it holds is counted
    from a descriptor of the folder, the user keeps its own id, and the file never appears
    in the real /dev/shm."""
    size, name = 4 * 2**20, f"posenc-hostile-private-{os.getpid()}"
    done = _as(user, [sys.executable, "-c", PRIVATE_TMPFS, str(size), name])
    outcome = json.loads(done.stdout or "{}")
    if "refused" in outcome:
        pytest.skip(f"the kernel refuses {user} a private mount namespace: {outcome['refused']}")
    assert outcome.get("full") is True and outcome["written"] <= size, (outcome, done.stderr[-1000:])
    assert size - confinement.PAGE <= outcome["counted"] <= size + 64 * limits.INODE_BYTES, outcome
    assert outcome["uid"] == (0 if user == "root" else SHM_UID)
    assert not (SHARED_MEMORY / name).exists()


def test_the_files_of_a_targets_own_user_are_counted_and_removed_not_the_users(tmp_path):
    """Without a private /dev/shm (a container that refuses the namespace), the files under
    /dev/shm of a target's own user (root gives each target one) are found with their
    blocks, and removed after it; a file of another user beside them is neither."""
    pid = os.getpid()
    own_user = limits.CHILD_UID_BASE + pid
    own = SHARED_MEMORY / f"posenc-hostile-own-{pid}"
    users = SHARED_MEMORY / f"posenc-hostile-users-{pid}"
    try:
        own.write_bytes(b"\1" * 2**20)
        users.write_bytes(b"\1" * 2**20)
        os.chown(own, own_user, own_user)
        found = limits.files_of_users(str(SHARED_MEMORY), {own_user})
        assert list(found.values()) == [own.stat().st_blocks * 512 + limits.INODE_BYTES]
        confinement.remove_left_behind(pid)
        assert not own.exists() and users.read_bytes() == b"\1" * 2**20
    finally:
        for path in (own, users):
            path.unlink(missing_ok=True)
