"""Running a command as another user than root, for the tests of what holds when the gate
runs as an ordinary user (CI runs the suite as root).

The command runs as ``OTHER_UID`` with no supplementary groups and one capability,
CAP_DAC_READ_SEARCH, kept across ``exec`` (ambient): it reads the checkout and the
virtualenv wherever root keeps them, and otherwise has an ordinary user's rights.
"""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess

OTHER_UID = 1_999_999_000
CAP_DAC_READ_SEARCH = 2
PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 8, 47, 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _become_other_user(uid: int = OTHER_UID) -> None:  # in the forked child, before exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    bit = 1 << CAP_DAC_READ_SEARCH
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(bit, bit, bit, 0, 0, 0)
    if libc.capset(header, data) != 0 or libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH,
                                                     0, 0) != 0:
        os._exit(126)


def run_as_other_user(command: list[str], uid: int = OTHER_UID, **keywords) -> subprocess.CompletedProcess:
    """``subprocess.run(command, **keywords)`` as ``uid`` (the caller must be root)."""
    return subprocess.run(command, preexec_fn=functools.partial(_become_other_user, uid), **keywords)
