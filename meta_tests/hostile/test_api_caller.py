"""What a callable target checked through the Python API (``posenc_spec.check(fn)``, run in
a child forked from the caller) can do to its caller: write the caller's shared memory
(a tensor moved to shared memory, a shared ``mmap``), keep the caller's
``multiprocessing.Lock`` held, or signal the caller. None of it reaches the caller, and
``check`` returns a Report.
"""

from __future__ import annotations

import json
import mmap
import multiprocessing
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import posenc_spec
from meta_tests.another_user import run_as_other_user
from meta_tests.hostile import MAX_POSITIONS, SIGNALS_CONFINED_AS_USER
from meta_tests.hostile.test_cli import RUN_LIMIT
from posenc_spec.gate.child.confinement import SCOPE_ABI

WORKTREE = Path(__file__).resolve().parents[2]


def _vaswani(num_positions, dim):
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    table = np.empty((num_positions, dim))
    table[:, 0::2], table[:, 1::2] = np.sin(theta), np.cos(theta)
    return table.astype(np.float32)


def test_a_callable_neither_writes_the_callers_shared_memory_nor_keeps_its_lock():
    """The child's shared mappings are private copies: the caller's shared tensor and mmap
    keep their values, and its lock is free after the check."""
    shared = torch.zeros(8).share_memory_()
    mapping = mmap.mmap(-1, mmap.PAGESIZE)  # anonymous and shared
    lock = multiprocessing.Lock()

    def writes_what_it_shares(num_positions, dim):
        shared.fill_(1.0)
        mapping[:8] = b"\x01" * 8
        lock.acquire()
        return _vaswani(num_positions, dim)

    report = posenc_spec.check(writes_what_it_shares, convention="vaswani", odd="skip", max_positions=MAX_POSITIONS)
    assert isinstance(report, posenc_spec.Report)
    assert not shared.any() and mapping[:8] == b"\x00" * 8
    assert lock.acquire(block=False)


def test_a_mapping_longer_than_its_file_is_copied_as_far_as_the_file_goes(tmp_path):
    """The caller maps a file shared and the file shrinks (a read past its end would die of
    SIGBUS): the child still detaches the mapping, the callable conforms, and what it writes
    there reaches neither the caller's mapping nor the file."""
    path = tmp_path / "mapped"
    path.write_bytes(b"\x07" * 3 * mmap.PAGESIZE)
    with open(path, "r+b") as handle:
        mapping = mmap.mmap(handle.fileno(), 3 * mmap.PAGESIZE)
    os.truncate(path, mmap.PAGESIZE + 10)

    def writes_the_mapped_file(num_positions, dim):
        mapping[:4] = b"\x01" * 4
        return _vaswani(num_positions, dim)

    try:
        report = posenc_spec.check(writes_the_mapped_file, convention="vaswani", odd="skip",
                                   max_positions=MAX_POSITIONS)
        assert report.conforms, report.failures()[:3]
        assert mapping[:4] == b"\x07" * 4 and path.read_bytes()[:4] == b"\x07" * 4
    finally:
        mapping.close()


SIGNALLING_CALLER = '''\
import json
import os
import signal
import sys

import numpy as np

import posenc_spec

# Python's own Ctrl-C handling, whatever the process that started this one left: an ignored
# or blocked SIGINT is inherited (Python keeps SIGINT ignored when it starts ignored), and an
# earlier test in the same pytest worker can leave it so.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
caller = os.getpid()


def interrupts_its_caller(num_positions, dim):
    os.kill(caller, signal.SIGINT)
    k = np.arange(dim // 2)
    theta = np.arange(num_positions)[:, None] * 10000.0 ** (-2.0 * k / dim)[None, :]
    table = np.empty((num_positions, dim))
    table[:, 0::2], table[:, 1::2] = np.sin(theta), np.cos(theta)
    return table.astype(np.float32)


try:
    report = posenc_spec.check(interrupts_its_caller, convention="vaswani", odd="skip",
                               max_positions=int(sys.argv[1]))
    print(json.dumps({"returned": type(report).__name__, "conforms": report.conforms}))
except KeyboardInterrupt:
    print(json.dumps({"returned": "KeyboardInterrupt"}))
'''


def _signalling_run(tmp_path: Path, confinement: str) -> dict:
    script = tmp_path / "caller.py"
    script.write_text(SIGNALLING_CALLER)
    script.chmod(0o644)
    done = run_as_other_user([sys.executable, str(script), str(MAX_POSITIONS)], cwd=WORKTREE,
                             env={**os.environ, "POSENC_SPEC_CONFINEMENT": confinement},
                             capture_output=True, text=True, timeout=RUN_LIMIT)
    lines = done.stdout.strip().splitlines()
    assert lines, (done.returncode, done.stderr[-2000:])
    return json.loads(lines[-1])


@pytest.mark.skipif(os.geteuid() != 0, reason="emulates an ordinary user from root")
@pytest.mark.skipif(not SIGNALS_CONFINED_AS_USER,
                    reason=f"needs Landlock ABI {SCOPE_ABI} (Linux 6.12) or a seccomp filter to confine signals")
@pytest.mark.parametrize("confinement", ["on", "off"])
def test_a_callable_of_an_ordinary_user_cannot_interrupt_its_caller(tmp_path, confinement):
    """As an ordinary user, confined: the target's SIGINT to the caller is refused, its call
    fails, and ``check`` returns a Report. Unconfined, the same signal interrupts the caller
    (the attack is real)."""
    result = _signalling_run(tmp_path, confinement)
    if confinement == "on":
        assert result == {"returned": "Report", "conforms": False}, result
    else:
        assert result == {"returned": "KeyboardInterrupt"}, result

