"""The seccomp filter that keeps a confined process's signals among its own processes where
Landlock cannot (``posenc_spec/gate/child/confine_signals.py``), tried in a forked process
of the test in a session of its own: what it refuses, aimed at a sacrificial process the
test starts, and what a process still does to itself (signals by its own id and group, its
threads, ``abort``, faulthandler)."""

from __future__ import annotations

import ctypes
import faulthandler
import fcntl
import os
import platform
import signal
import socket
import subprocess
import threading

import pytest

from meta_tests.hostile import in_a_forked_process, raw_syscall, tried
from posenc_spec.gate.child import confine_signals, confinement

pytestmark = pytest.mark.skipif(not confine_signals.available(),
                                reason="needs a seccomp filter: Linux on x86_64 or aarch64")
SI_QUEUE = -1  # si_code of a signal queued by a process (another process's needs a negative code)
SIGINFO_BYTES = 128
HIGH_BIT_32 = 1 << 32  # above the pid_t the kernel reads: the filter must compare the low 32 bits alone
F_SETSIG = 10


def _queued(number: int, *first, sig: int) -> None:
    """``rt_sigqueueinfo``/``rt_tgsigqueueinfo`` with a queued signal's information."""
    info = ctypes.create_string_buffer(SIGINFO_BYTES)
    ctypes.memmove(info, (ctypes.c_int * 3)(sig, 0, SI_QUEUE), 12)
    raw_syscall(number, *first, sig, ctypes.addressof(info))


def _f_setown_ex(fd: int, pid: int) -> None:
    """``fcntl(fd, F_SETOWN_EX, {F_OWNER_PID, pid})``."""
    owner = (ctypes.c_int * 2)(1, pid)  # F_OWNER_PID
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.fcntl(fd, 15, owner) != 0:  # F_SETOWN_EX
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _on_a_pipe(change, *arguments) -> None:
    """``change(fd, *arguments)`` on the reading end of a new pipe (closed after)."""
    read_end, write_end = os.pipe()
    try:
        change(read_end, *arguments)
    finally:
        os.close(read_end)
        os.close(write_end)


def _on_a_socket(request: int, pid: int) -> None:
    first, second = socket.socketpair()
    with first, second:
        fcntl.ioctl(first, request, pid.to_bytes(4, "little", signed=True))


def _attacks(victim: int) -> dict:
    """Every way of signalling ``victim`` the filter closes (signal 0 but for one SIGSTOP:
    a let-through signal checks the permission and harms no one else)."""
    kill, tkill, tgkill, queue, tgqueue = confine_signals._CALLS[platform.machine()].signalling
    return {
        "kill(victim, SIGSTOP)": lambda: os.kill(victim, signal.SIGSTOP),
        "kill(-victim)": lambda: os.kill(-victim, 0),
        "kill(-1)": lambda: os.kill(-1, 0),
        "kill(victim + 2**32)": lambda: raw_syscall(kill, victim + HIGH_BIT_32, 0),
        "tkill(victim)": lambda: raw_syscall(tkill, victim, 0),
        "tgkill(victim, victim)": lambda: raw_syscall(tgkill, victim, victim, 0),
        "rt_sigqueueinfo(victim)": lambda: _queued(queue, victim, sig=0),
        "rt_tgsigqueueinfo(victim, victim)": lambda: _queued(tgqueue, victim, victim, sig=0),
        "pidfd_send_signal(victim)": lambda: signal.pidfd_send_signal(os.pidfd_open(victim), 0),
        "fcntl(F_SETOWN, victim)": lambda: _on_a_pipe(fcntl.fcntl, fcntl.F_SETOWN, victim),
        "fcntl(F_SETOWN, -victim)": lambda: _on_a_pipe(fcntl.fcntl, fcntl.F_SETOWN, -victim),
        "fcntl(F_SETOWN_EX, victim)": lambda: _on_a_pipe(_f_setown_ex, victim),
        "ioctl(FIOSETOWN, victim)": lambda: _on_a_socket(confine_signals.FIOSETOWN, victim),
        "ioctl(SIOCSPGRP, victim)": lambda: _on_a_socket(confine_signals.SIOCSPGRP, victim),
    }


def _own_signals() -> dict:
    """What a process does to itself; SIGUSR1 is caught (counted in ``CAUGHT``)."""
    kill, tkill, tgkill, queue, tgqueue = confine_signals._CALLS[platform.machine()].signalling
    me = os.getpid()
    worker_done = threading.Event()
    worker = threading.Thread(target=worker_done.wait, args=(10,), daemon=True)
    worker.start()
    usr1 = signal.SIGUSR1
    return {
        "os.kill(own id)": lambda: os.kill(me, usr1),
        "raise_signal": lambda: signal.raise_signal(usr1),
        "os.killpg(0)": lambda: os.killpg(0, usr1),
        "kill(-own id)": lambda: os.kill(-me, usr1),
        "kill(own id + 2**32)": lambda: raw_syscall(kill, me + HIGH_BIT_32, usr1),
        "tkill(own id)": lambda: raw_syscall(tkill, me, usr1),
        "tgkill(own id, own id)": lambda: raw_syscall(tgkill, me, me, usr1),
        "rt_sigqueueinfo(own id)": lambda: _queued(queue, me, sig=usr1),
        "rt_tgsigqueueinfo(own id, own id)": lambda: _queued(tgqueue, me, me, sig=usr1),
        "pthread_kill(own thread)": lambda: signal.pthread_kill(worker.ident, 0),
        "fcntl(F_SETOWN, own id)": lambda: _on_a_pipe(fcntl.fcntl, fcntl.F_SETOWN, me),
        "fcntl(F_SETOWN, -own id)": lambda: _on_a_pipe(fcntl.fcntl, fcntl.F_SETOWN, -me),
        "fcntl(F_SETOWN, 0)": lambda: _on_a_pipe(fcntl.fcntl, fcntl.F_SETOWN, 0),
        "fcntl(F_SETSIG)": lambda: _on_a_pipe(fcntl.fcntl, F_SETSIG, usr1),
    }


def _in_a_filtered_process(attempts) -> dict:
    """What each attempt of ``attempts()`` got in a forked process in a session of its own that
    installed the filter first (``"installed"``: the filter's complaint; ``"caught"``: how
    many SIGUSR1 its handler saw)."""
    def body(got: dict) -> None:
        os.setsid()
        caught = []
        signal.signal(signal.SIGUSR1, lambda number, frame: caught.append(number))
        got["installed"] = confine_signals.confine_signals()
        got.update(tried(attempts()))
        got["caught"] = len(caught)

    return in_a_forked_process(body)


@pytest.fixture
def victim():
    """A sacrificial process of the test's own (its child: whether it stopped is read by
    ``waitpid``), killed after the test."""
    process = subprocess.Popen(["sleep", "60"])
    yield process.pid
    process.kill()
    process.wait()


def test_the_filter_refuses_every_way_of_signalling_another_process(victim):
    """Each system call that signals a process, or makes the kernel signal one for the
    caller, aimed at another process is refused with EPERM, and the victim is not stopped."""
    got = _in_a_filtered_process(lambda: _attacks(victim))
    assert got.pop("installed") == "" and got.pop("caught") == 0
    assert got == dict.fromkeys(_attacks(victim), "refused (EPERM)"), got
    assert os.waitpid(victim, os.WNOHANG | os.WUNTRACED) == (0, 0)  # not stopped


def test_without_the_filter_the_same_attacks_reach_the_victim(victim):
    """The attacks the filter refuses succeed in the unfiltered test process against the
    victim, and its SIGSTOP stops it: the refusals are the filter's. (``kill(-1)``,
    ``kill(-victim)`` and the owner changes aimed at a group are not tried here: they
    would reach the test's own processes.)"""
    for name, attempt in _attacks(victim).items():
        if name not in ("kill(-1)", "kill(-victim)", "fcntl(F_SETOWN, -victim)"):
            attempt()
    assert os.WIFSTOPPED(os.waitpid(victim, os.WUNTRACED)[1])


def test_a_filtered_process_still_signals_itself_its_group_and_threads():
    """Signals to its own id (the kernel's low 32 bits of the argument), its own group, its
    own threads, and owner changes to itself are allowed, and each SIGUSR1 sent is caught."""
    got = _in_a_filtered_process(_own_signals)
    assert got.pop("installed") == ""
    sent = [name for name in _own_signals() if "F_" not in name and name != "pthread_kill(own thread)"]
    assert got.pop("caught") == len(sent)
    assert got == dict.fromkeys(_own_signals(), "allowed"), got


FAULT = "import faulthandler, ctypes; faulthandler.enable(open(os.devnull, 'w')); ctypes.string_at(0)"


@pytest.mark.parametrize(("how", "number"), [("os.abort()", signal.SIGABRT), (FAULT, signal.SIGSEGV)])
def test_abort_and_faulthandler_end_a_filtered_process_with_their_signal(how, number):
    """The C library's abort and faulthandler's re-raised fault (``tgkill`` of the process's
    own id) end a filtered process with their signal, as unfiltered."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        faulthandler.disable()  # pytest's, which would print the fault
        if confine_signals.confine_signals() == "":
            exec(how)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == number, status


def test_every_jump_of_the_filter_goes_forward_to_an_instruction():
    """The kernel takes only forward jumps within the program, each ending in a return."""
    for machine in confine_signals._CALLS:
        instructions = confine_signals.program(machine, 4_194_304)
        for index, (code, true, false, _) in enumerate(instructions):
            if code & 0x07 == 0x05:  # a jump
                assert index + 1 + max(true, false) < len(instructions)
        assert instructions[-1][0] == 0x06  # the last instruction returns


def test_without_landlock_the_warning_names_signals_only_where_no_filter_keeps_them(monkeypatch):
    """Without Landlock the confinement's warning says that writes are not confined; it says
    that signals are not either only when no signal filter stands in for Landlock."""
    monkeypatch.setattr(confinement, "landlock_abi", lambda: 0)
    unscoped, filtered = confinement.confine(None), confinement.confine(None, scope_signals=False)
    assert "could write wherever this user can" in unscoped and "could write wherever this user can" in filtered
    assert "signal" in unscoped and "signal" not in filtered, (unscoped, filtered)
