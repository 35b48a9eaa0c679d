"""Closing the network, unix sockets and other processes to a confined process, without
privileges: a seccomp filter (Linux 3.17 and later, x86_64 and aarch64), a small
classic-BPF program that the kernel runs on every system call of the process and of
everything it starts.

Landlock (:mod:`.confinement`) keeps a target from writing and signalling outside, but not
from opening a socket: it could reach the network, or connect to a unix socket that has a
path (a container engine's, a CI runner's, the session bus), which answers to the user the
target runs as. The filter refuses, with ``EACCES``:

- ``socket()`` of every family: no new socket at all (``AF_INET``/``AF_INET6``,
  ``AF_UNIX``, netlink, packet ...). A library that probes for IPv6 or asks for the
  network interfaces gets ``PermissionError``, which the C library and urllib3 treat as
  "no network";
- ``socketpair()`` but of ``AF_UNIX`` stream and sequenced-packet sockets: those are
  connected to each other and cannot be pointed elsewhere (``connect`` answers
  ``EISCONN``), so ``multiprocessing.Pipe`` and asyncio keep working; a datagram pair is
  refused, as a datagram socket may send to any path;
- ``io_uring_setup``, ``io_uring_enter`` and ``io_uring_register``: a ring would open and
  connect sockets without those system calls;
- ``pidfd_getfd`` (taking a descriptor, a socket say, out of another process),
  ``ptrace`` and ``process_vm_writev`` (changing another process): Landlock refuses them
  for every process outside the target's own, where the kernel has Landlock; the filter
  refuses them where it has not (reading another process's memory stays as the kernel
  allows: the gate's own processes are not dumpable);
- ``prlimit64`` of another process: the resource limits of a process of the same user are
  its to change, and no Landlock version scopes them, so a target could have the kernel
  kill the gate (a CPU-time limit it has used up) or starve it of files or memory. A
  process changes and reads its own limits (``0``, or its own process id, the one that
  installed the filter: a module template's children keep ``0`` alone), with
  ``EPERM`` for every other;
- every system call of another ABI (a 32-bit ``int 0x80``, x32), whose numbers the filter
  does not know.

A process keeps the sockets it inherited (the gate's own socket to its child). A network
namespace would not do instead: a unix socket with a path is reached through the file
system from any namespace.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import struct
import sys
from typing import NamedTuple

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_NR, _ARCH = 0, 4


def _argument(index: int) -> int:
    """Offset of the low 32 bits of argument ``index`` (little-endian): an ``int`` argument."""
    return 16 + 8 * index


# Classic BPF: instruction classes and fields (linux/filter.h)
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_AND_K = 0x04 | 0x50 | 0x00  # BPF_ALU | BPF_AND | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K

RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
REFUSED = RET_ERRNO | errno.EACCES
FOREIGN = RET_ERRNO | errno.ENOSYS
SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK and SOCK_CLOEXEC

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1  # every thread of the process, not the calling one alone
PR_SET_NO_NEW_PRIVS = 38
X32_SYSCALL_BIT = 0x40000000


class _Abi(NamedTuple):
    """An architecture's audit number, its system call numbers, and whether it has x32 calls."""

    arch: int
    socket: int
    socketpair: int
    seccomp: int
    x32: bool
    reaching: tuple[int, ...]  # ptrace, process_vm_writev
    prlimit64: int


# The same numbers on every architecture: io_uring_setup, _enter, _register; pidfd_getfd.
IO_URING = (425, 426, 427)
PIDFD_GETFD = 438
_ABIS = {"x86_64": _Abi(0xC000003E, 41, 53, 317, True, (101, 311), 302),
         "aarch64": _Abi(0xC00000B7, 198, 199, 277, False, (117, 271), 261)}
LIMITS_REFUSED = RET_ERRNO | errno.EPERM


def _abi() -> _Abi | None:
    if not sys.platform.startswith("linux") or sys.maxsize <= 2**32:
        return None
    return _ABIS.get(platform.machine())


def available() -> bool:
    """Whether this process's architecture has a filter here (Linux on x86_64 or aarch64)."""
    return _abi() is not None


def _assemble(lines: list) -> list[tuple[int, int, int, int]]:
    """Classic-BPF instructions ``(code, jump if true, jump if false, k)`` from ``lines``: a
    label (a string) marks the next instruction; in an instruction a jump may name a label
    (jumps go forward only, as the kernel demands)."""
    labels, position = {}, 0
    for line in lines:
        if isinstance(line, str):
            labels[line] = position
        else:
            position += 1
    instructions = []
    for line in lines:
        if isinstance(line, str):
            continue
        code, true, false, k = line
        here = len(instructions) + 1
        offsets = [labels[jump] - here if isinstance(jump, str) else jump for jump in (true, false)]
        assert all(0 <= offset < 256 for offset in offsets), "a jump backwards or too far"
        instructions.append((code, *offsets, k))
    return instructions


def system_call_number(abi: _Abi) -> list:
    """The first lines of every filter here: a system call of another ABI (or x32) jumps to
    ``"foreign"``; else the system call's number is loaded."""
    return [(_LD_W_ABS, 0, 0, _ARCH),
            (_JEQ_K, 0, "foreign", abi.arch),
            (_LD_W_ABS, 0, 0, _NR),
            *([(_JGE_K, "foreign", 0, X32_SYSCALL_BIT)] if abi.x32 else [])]


def program(abi: _Abi, pid: int) -> list[tuple[int, int, int, int]]:
    """The filter's instructions for the process ``pid`` (see the module docstring)."""
    return _assemble([
        *system_call_number(abi),
        (_JEQ_K, "refuse", 0, abi.socket),
        (_JEQ_K, "socketpair", 0, abi.socketpair),
        *[(_JEQ_K, "refuse", 0, number) for number in (*IO_URING, PIDFD_GETFD, *abi.reaching)],
        (_JEQ_K, "prlimit64", "allow", abi.prlimit64),
        "prlimit64",  # (pid, resource, new, old): this process, by 0 or its id
        (_LD_W_ABS, 0, 0, _argument(0)),
        (_JEQ_K, "allow", 0, 0),
        (_JEQ_K, "allow", "limits", pid & 0xFFFFFFFF),
        "socketpair",  # (domain, type, ...): AF_UNIX, and a stream or sequenced-packet type
        (_LD_W_ABS, 0, 0, _argument(0)),
        (_JEQ_K, 0, "refuse", socket.AF_UNIX),
        (_LD_W_ABS, 0, 0, _argument(1)),
        (_AND_K, 0, 0, SOCK_TYPE_MASK),
        (_JEQ_K, "allow", 0, socket.SOCK_STREAM),
        (_JEQ_K, "allow", "refuse", socket.SOCK_SEQPACKET),
        *returns(allow=RET_ALLOW, refuse=REFUSED, limits=LIMITS_REFUSED, foreign=FOREIGN),
    ])


def returns(**actions: int) -> list:
    """A program's closing instructions: each label, then the return of its action."""
    return [part for label, action in actions.items() for part in (label, (_RET_K, 0, 0, action))]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def close_sockets() -> str:
    """Install the filter in this process (and so in all it starts); ``""`` when installed,
    else what stays open, in a few words."""
    abi = _abi()
    if abi is None:
        return (f"the target's processes could open sockets (the network, unix sockets with a path): no seccomp "
                f"filter is written for {sys.platform} on {platform.machine()}")
    refusal = install(abi, program(abi, os.getpid()))
    if refusal is not None:
        return ("the target's processes could open sockets (the network, unix sockets with a path): the kernel "
                f"refused a seccomp filter ({refusal})")
    return ""


def install(abi: _Abi, instructions) -> str | None:
    """Install ``instructions`` as a seccomp filter of this process (every thread, and all it
    starts); None, or the kernel's refusal in words."""
    return None if _seccomp(abi, instructions, SECCOMP_FILTER_FLAG_TSYNC) >= 0 else os.strerror(ctypes.get_errno())


SECCOMP_FILTER_FLAG_NEW_LISTENER = 8  # Linux 5.0: the filter's notifications go to a new descriptor
SECCOMP_FILTER_FLAG_TSYNC_ESRCH = 16  # Linux 5.7: TSYNC that answers the descriptor, not a thread's id


def install_listening(abi: _Abi, instructions) -> int:
    """Install ``instructions`` as :func:`install` does, with a listener: the descriptor its
    notifications (``SECCOMP_RET_USER_NOTIF``) go to; OSError when the kernel refuses. A
    kernel before 5.7 synchronises no threads with a listener: a process with one thread
    alone (a process just forked) needs none."""
    listening = SECCOMP_FILTER_FLAG_NEW_LISTENER
    fd = _seccomp(abi, instructions, listening | SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
    if fd < 0 and ctypes.get_errno() == errno.EINVAL and len(os.listdir("/proc/self/task")) == 1:
        fd = _seccomp(abi, instructions, listening)
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return fd


def _seccomp(abi: _Abi, instructions, flags: int) -> int:
    """``seccomp(SECCOMP_SET_MODE_FILTER, flags, program)`` after ``no_new_privs``: its
    result (-1 with ``errno`` set when refused)."""
    code = b"".join(struct.pack("=HBBI", *instruction) for instruction in instructions)
    prog = _Program(len(instructions), code)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return -1
    return libc.syscall(abi.seccomp, SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
