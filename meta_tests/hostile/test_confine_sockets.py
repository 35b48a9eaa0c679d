"""The seccomp filter that closes new sockets and other processes to a confined process
(``posenc_spec/gate/child/confine_sockets.py``), tried in a forked process of the test: what
it refuses, and what a confined process still needs (an inherited socket, stream socket
pairs, name lookups through files)."""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import socket

import pytest

from meta_tests.hostile import in_a_forked_process, tried
from posenc_spec.gate.child import confine_sockets

needs_filter = pytest.mark.skipif(not confine_sockets.available(),
                                  reason="needs a seccomp filter: Linux on x86_64 or aarch64")
IO_URING_SETUP, PIDFD_GETFD = 425, 438
IO_URING_PARAMS_BYTES = 120
PTRACE = {"x86_64": 101, "aarch64": 117}
PROCESS_VM_WRITEV = {"x86_64": 311, "aarch64": 271}


def _io_uring() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    parameters = ctypes.create_string_buffer(IO_URING_PARAMS_BYTES)
    fd = libc.syscall(IO_URING_SETUP, 4, parameters)
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    os.close(fd)


def _syscall(number: int, *arguments) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(number, *arguments)
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return result


def _pidfd_getfd() -> None:
    """A copy of this very process's descriptor 0, taken through a pidfd."""
    pidfd = os.pidfd_open(os.getpid())
    try:
        os.close(_syscall(PIDFD_GETFD, pidfd, 0, 0))
    finally:
        os.close(pidfd)


def _pair(family, kind) -> None:
    first, second = socket.socketpair(family, kind)
    with first, second:
        first.send(b"x")
        assert second.recv(1) == b"x"


ATTEMPTS = {
    "socket(AF_INET)": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close(),
    "socket(AF_INET6)": lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close(),
    "socket(AF_UNIX)": lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close(),
    "socket(AF_NETLINK)": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close(),
    "socket(AF_UNIX, close-on-exec)": lambda: socket.socket(socket.AF_UNIX,
                                                            socket.SOCK_STREAM | socket.SOCK_CLOEXEC).close(),
    "socketpair(AF_UNIX, SOCK_DGRAM)": lambda: _pair(socket.AF_UNIX, socket.SOCK_DGRAM),
    "io_uring_setup": _io_uring,
    "pidfd_getfd": _pidfd_getfd,
    "ptrace(PTRACE_TRACEME)": lambda: _syscall(PTRACE[platform.machine()], 0, 0, 0, 0),
    "process_vm_writev": lambda: _syscall(PROCESS_VM_WRITEV[platform.machine()], os.getpid(), None, 0, None, 0, 0),
    "socketpair(AF_UNIX, SOCK_STREAM)": lambda: _pair(socket.AF_UNIX, socket.SOCK_STREAM),
    "socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK)":
        lambda: _pair(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_NONBLOCK),
    "getaddrinfo('localhost')": lambda: socket.getaddrinfo("localhost", 80),
}
REFUSED = list(ATTEMPTS)[:10]
NOT_TRIED_UNFILTERED = ("ptrace(PTRACE_TRACEME)",)  # it would make the test process this one's tracer


def _filtered(attempts: dict) -> dict:
    """What each attempt got in a forked process that installed the filter first, sent back
    through a socket pair made before it (an inherited socket); the filter's own complaint
    under ``"installed"``."""
    def body(got: dict) -> None:
        got["installed"] = confine_sockets.close_sockets()
        got.update(tried(attempts))

    return in_a_forked_process(body)


@needs_filter
def test_the_filter_refuses_every_new_socket_but_connected_pairs():
    """Sockets of every family, datagram pairs, io_uring, and reaching into a process
    (pidfd_getfd, ptrace, process_vm_writev) are refused with EACCES; stream
    and sequenced-packet pairs carry data, name lookups answer from files, and the socket
    the process inherited still talks to its parent."""
    got = _filtered(ATTEMPTS)
    assert got.pop("installed") == ""
    refused = "refused (EACCES)"
    assert got == {name: refused if name in REFUSED else "allowed" for name in ATTEMPTS}, got


def test_without_the_filter_the_same_attempts_succeed():
    """The attempts the filter refuses succeed in the unfiltered test process (io_uring where
    the kernel has it switched on; process_vm_writev of nothing; not ptrace): the refusals
    are the filter's."""
    io_uring_off = _io_uring_disabled()
    for name, attempt in ATTEMPTS.items():
        if name not in NOT_TRIED_UNFILTERED and (name != "io_uring_setup" or not io_uring_off):
            attempt()


def _io_uring_disabled() -> bool:
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as switch:
            return switch.read().strip() != "0"
    except OSError:  # a kernel before the switch (6.6): whether it has io_uring is not known
        return True


def test_every_jump_of_the_filter_goes_forward_to_an_instruction():
    """The kernel takes only forward jumps within the program, each ending in a return."""
    for abi in confine_sockets._ABIS.values():
        instructions = confine_sockets.program(abi, 4_194_304)
        for index, (code, true, false, _) in enumerate(instructions):
            if code & 0x07 == 0x05:  # a jump
                assert index + 1 + max(true, false) < len(instructions)
        assert instructions[-1][0] == 0x06  # the last instruction returns


@needs_filter
def test_the_filter_keeps_resource_limits_to_the_process_itself():
    """``prlimit`` of another process (its parent here: the gate, for a target) is refused
    with EPERM, reading it too; the process reads and changes its own limits by 0 and by its
    own id (``setrlimit``, ``getrlimit``)."""
    parent = os.getpid()

    def own_limit_lowered():
        soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
        resource.prlimit(os.getpid(), resource.RLIMIT_CORE, (0, hard))

    got = _filtered({"prlimit(parent, RLIMIT_CPU, 1 s)": lambda: resource.prlimit(parent, resource.RLIMIT_CPU, (1, 1)),
                     "prlimit(parent), reading": lambda: resource.prlimit(parent, resource.RLIMIT_CPU),
                     "its own limits": own_limit_lowered})
    assert got == {"installed": "", "prlimit(parent, RLIMIT_CPU, 1 s)": "refused (EPERM)",
                   "prlimit(parent), reading": "refused (EPERM)", "its own limits": "allowed"}, got
    assert resource.getrlimit(resource.RLIMIT_CPU) != (1, 1)


@needs_filter
def test_without_the_filter_a_process_may_change_its_parents_limits():
    """Unfiltered, a forked child of the same user lowers its parent's (the test's) core
    file limit: the refusal above is the filter's. The limit is put back."""
    before = resource.getrlimit(resource.RLIMIT_CORE)
    pid = os.fork()
    if pid == 0:
        try:
            resource.prlimit(os.getppid(), resource.RLIMIT_CORE, (0, before[1]))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    try:
        assert resource.getrlimit(resource.RLIMIT_CORE) == (0, before[1])
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, before)
