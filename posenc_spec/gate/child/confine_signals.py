"""Keeping a confined process's signals among its own processes where Landlock cannot (a
kernel before Linux 6.12, whose Landlock has no signal scoping, or one without Landlock): a
seccomp filter in the style of :mod:`.confine_sockets` (x86_64 and aarch64), made for the
one process that installs it, a sealed child, and inherited by all it starts.

A sealed child leads its own session and process group, so its process id names it and its
group holds its own processes only. The filter lets a signal through only when the process
it names is that: ``kill``, ``tkill``, ``tgkill``, ``rt_sigqueueinfo`` and
``rt_tgsigqueueinfo`` whose first argument (its low 32 bits: the kernel reads a ``pid_t``)
is the child's own process id, ``0`` (the caller's own process group) or minus the child's
process id (that group named); ``pidfd_send_signal`` not at all (the process behind a pidfd
is not known to the filter). Everything else is refused with ``EPERM``, as the kernel
refuses a signal to another user's process: not the gate, its templates, the Python API's
caller, the CI step's shell, ``kill(-1, ...)``. The ways to have the kernel signal a process
for the caller are closed the same way: ``fcntl(F_SETOWN)`` (the owner that receives
``SIGIO``, or the signal ``F_SETSIG`` names, when a descriptor is ready) only to the same
ids, ``F_SETOWN_EX`` and the ``FIOSETOWN``/``SIOCSPGRP`` ioctls (whose id is behind a
pointer) not at all.

Where the kernel lets a supervisor judge calls (Linux 5.5), the filter is installed with a
listener (:func:`program` with ``supervised``; :mod:`.supervisor`): a signal aimed at any
other id is judged by the template that forked the process, which lets it through to the
process's own tree (its subprocesses by id: ``subprocess.Popen.kill()``, ``terminate()``,
the kill ``subprocess.run`` makes at its timeout, ``multiprocessing``'s ``terminate()``; its
threads) and refuses the rest; the same filter then sends the scheduling calls aimed at
another process (``setpriority``, ``sched_set*``, ``ioprio_set``) to the supervisor, on
every kernel, Landlock's scoping or not.

Without a supervisor, what this keeps from a target that Landlock's scoping would allow: a
process it starts cannot be signalled by id (those calls raise ``PermissionError``;
``os.killpg(0, ...)`` of the target's own group still reaches them), and such a process
cannot signal itself by id either (only its group, through ``0``). The target's own process
signals itself as it likes: ``os.kill(os.getpid(), ...)``, ``signal.raise_signal``, the C
library's ``raise`` and ``abort`` (``tgkill`` of its own process id), ``signal.pthread_kill``
of its own threads, faulthandler.
"""

from __future__ import annotations

import errno
import os
import platform
import sys
from typing import NamedTuple

from .confine_sockets import (
    _ABIS,
    _JEQ_K,
    _LD_W_ABS,
    FOREIGN,
    RET_ALLOW,
    RET_ERRNO,
    _abi,
    _argument,
    _assemble,
    install,
    returns,
    system_call_number,
)

REFUSED = RET_ERRNO | errno.EPERM
PIDFD_SEND_SIGNAL = 424  # the same number on every architecture
F_SETOWN, F_SETOWN_EX = 8, 15
FIOSETOWN, SIOCSPGRP = 0x8901, 0x8902
LOW_32_BITS = 0xFFFFFFFF


class _Calls(NamedTuple):
    """An architecture's numbers for the system calls the filter looks at."""

    signalling: tuple[int, ...]  # kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: the process first
    fcntl: int
    ioctl: int
    # sched_setparam, sched_setscheduler, sched_setaffinity, sched_setattr: the thread first
    scheduling: tuple[int, ...]
    setpriority: int  # (which, who, priority)
    ioprio_set: int  # (which, who, priority)


_CALLS = {"x86_64": _Calls((62, 200, 234, 129, 297), 72, 16, (142, 144, 203, 314), 141, 251),
          "aarch64": _Calls((129, 130, 131, 138, 240), 25, 29, (118, 119, 122, 274), 140, 30)}
RET_USER_NOTIF = 0x7FC00000  # the supervisor answers (Linux 5.0; its "let it run", 5.5)
PRIO_USER = 2  # setpriority's "every process of a user"
IOPRIO_WHO_USER = 3  # ioprio_set's


def available() -> bool:
    """Whether this process's architecture has a filter here (Linux on x86_64 or aarch64)."""
    return _abi() is not None and platform.machine() in _CALLS


def _own(pid: int, where: str) -> list:
    """Instructions: the word just loaded is ``pid``, ``0`` or ``-pid`` (as 32 bits): jump to
    ``"allow"``, else to ``where``."""
    return [(_JEQ_K, "allow", 0, pid & LOW_32_BITS),
            (_JEQ_K, "allow", 0, 0),
            (_JEQ_K, "allow", where, -pid & LOW_32_BITS)]


def _by_who(user: int) -> list:
    """Instructions for ``(which, who, ...)`` (``setpriority``, ``ioprio_set``): every process
    of a user (``which`` is ``user``) refused; ``who`` this process or ``0`` allowed; any other
    asked."""
    return [(_LD_W_ABS, 0, 0, _argument(0)),
            (_JEQ_K, "refuse", 0, user),
            (_LD_W_ABS, 0, 0, _argument(1))]


def program(machine: str, pid: int, signals: bool = True, supervised: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter's instructions for the process ``pid`` on ``machine`` (see the module
    docstring): with ``signals``, its signals; ``supervised``, a call aimed at a process that
    is not its own id or ``0`` is sent to the supervisor (:mod:`.supervisor`) instead of
    refused, and so are the scheduling calls (``setpriority``, ``sched_set*``,
    ``ioprio_set``) aimed at another process (by ``0`` or its own id they are its own; by
    a user's id they are refused)."""
    abi, calls = _ABIS[machine], _CALLS[machine]
    elsewhere = "ask" if supervised else "refuse"
    scheduling = [
        *[(_JEQ_K, "by_id", 0, number) for number in calls.scheduling],
        (_JEQ_K, "setpriority", 0, calls.setpriority),
        (_JEQ_K, "ioprio_set", 0, calls.ioprio_set),
    ] if supervised else []
    scheduling_rules = [
        "by_id",  # (thread, ...)
        (_LD_W_ABS, 0, 0, _argument(0)),
        *_own(pid, "ask"),
        "setpriority",
        *_by_who(PRIO_USER),
        *_own(pid, "ask"),
        "ioprio_set",
        *_by_who(IOPRIO_WHO_USER),
        *_own(pid, "ask"),
    ] if supervised else []
    signalling = [
        *[(_JEQ_K, "signal", 0, number) for number in calls.signalling],
        (_JEQ_K, "refuse", 0, PIDFD_SEND_SIGNAL),
        (_JEQ_K, "fcntl", 0, calls.fcntl),
        (_JEQ_K, "ioctl", 0, calls.ioctl),
    ] if signals else []
    return _assemble([
        *system_call_number(abi),
        *scheduling,
        *signalling,
        (_JEQ_K, "allow", "allow", 0),  # every other call
        *scheduling_rules,
        "signal",  # (pid, ...)
        (_LD_W_ABS, 0, 0, _argument(0)),
        *_own(pid, elsewhere),
        "fcntl",  # (fd, cmd, arg): F_SETOWN's arg is the process (or minus the group)
        (_LD_W_ABS, 0, 0, _argument(1)),
        (_JEQ_K, "refuse", 0, F_SETOWN_EX),
        (_JEQ_K, 0, "allow", F_SETOWN),
        (_LD_W_ABS, 0, 0, _argument(2)),
        *_own(pid, "refuse"),
        "ioctl",  # (fd, request, pointer): the owner's id is behind the pointer
        (_LD_W_ABS, 0, 0, _argument(1)),
        (_JEQ_K, "refuse", 0, FIOSETOWN),
        (_JEQ_K, "refuse", "allow", SIOCSPGRP),
        *returns(allow=RET_ALLOW, refuse=REFUSED, ask=RET_USER_NOTIF, foreign=FOREIGN),
    ])


def confine_signals() -> str:
    """Install the filter for this process (and so in all it starts); ``""`` when installed,
    else what stays open, in a few words."""
    if not available():
        return (f"the target's signals were not confined: the kernel does not scope them (Landlock ABI 6, Linux "
                f"6.12) and no seccomp filter is written for {sys.platform} on {platform.machine()}")
    refusal = install(_ABIS[platform.machine()], program(platform.machine(), os.getpid()))
    if refusal is not None:
        return ("the target's signals were not confined: the kernel does not scope them (Landlock ABI 6, Linux "
                f"6.12) and refused a seccomp filter ({refusal})")
    return ""
