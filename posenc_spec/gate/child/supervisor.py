"""A target may reach its own processes, never anyone else's: the calls that act on another
process by its id (signals where Landlock does not scope them, and on every kernel
``setpriority``, ``sched_setaffinity``, ``sched_setscheduler``, ``sched_setparam``,
``sched_setattr``, ``ioprio_set``) are judged by a supervisor the target cannot reach.

A confined process forked by a template installs the filter of :mod:`.confine_signals`
with a listener (``SECCOMP_RET_USER_NOTIF``, Linux 5.5 for letting a call run on), before
any target code: a call aimed at ``0`` or at its own id runs at once; one aimed at a user's
processes (``PRIO_USER``, ``IOPRIO_WHO_USER``) is refused; any other waits while the
supervisor judges it. The listener goes to the template that forked the process over a
socket pair made for the fork (``SCM_RIGHTS``), and the process closes its own copy: the
template (which runs no target code, and which Landlock and the filters keep the target
from signalling, tracing or limiting) is the supervisor (:class:`Supervisor`, in its
request loop). It lets a call run when the id names a thread or process of the confined
process's own tree (the thread's process, or a process group's leader, has it as an
ancestor: ``/proc/<id>/status``), and answers ``EPERM`` otherwise, as the kernel answers a
signal to another user's process: not the gate, its templates, the Python API's caller,
the user's processes, ``kill(-1)``. So a target kills and waits for its own subprocesses
(``subprocess.run``'s timeout), renices them, and OpenMP pins its own threads by their ids.

Every process the confined one starts inherits the filter, and with it the same supervisor
and the same tree. A process a module template forks installs no filter of its own (the
kernel allows one listener per process): it has the module template's, and its tree is
its own process and what is below it, not the module template, which imported the module
for every target that shares it (Landlock's nested domain keeps its signals from it alike).

What stays open, and why:

- Process ids are used again. The supervisor reads ``/proc`` and the kernel looks the id up
  again when the call runs on: were the target's own process to exit in between and its id
  go to a process of someone else, the call would reach that one. The window is microseconds
  (the notification is checked as still waiting, ``SECCOMP_IOCTL_NOTIF_ID_VALID``, after
  ``/proc`` is read), and the kernel hands out ids in turn, so the id would have to come
  round again through every id (``pid_max``, 4 million on 64-bit) in that time.
- A process of the tree re-parented to the template (its parent exited: a double fork) is
  no longer in the tree; its own calls by ``0`` and its own id still run.
- The supervisor answers in its request loop, so a call waits while the template serves
  the gate (a fork, a kill: milliseconds). Were the template gone, its listener closes and
  the kernel answers ``ENOSYS`` at once: the call fails, it never hangs.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import select
import socket
import struct

from . import confine_signals
from .confine_sockets import _ABIS, install_listening

# struct seccomp_notif: u64 id, u32 pid, u32 flags, struct seccomp_data (int nr, u32 arch, u64 ip, u64 args[6])
_NOTIFICATION = struct.Struct("=QIIiIQ6Q")
# struct seccomp_notif_resp: u64 id, s64 val, s32 error, u32 flags
_RESPONSE = struct.Struct("=QqiI")
NOTIF_RECV, NOTIF_SEND = 0xC0502100, 0xC0182101  # _IOWR('!', 0 and 1, the structs above)
NOTIF_ID_VALID = (0x40082102, 0x80082102)  # _IOW('!', 2, u64); kernels before 5.9 know it as _IOR
FLAG_CONTINUE = 1
LOW_32_BITS = 0xFFFFFFFF
PRIO_PROCESS, PRIO_PGRP = 0, 1
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP = 1, 2
MAX_ANCESTORS = 4096  # deeper than any real tree of processes

CHANNEL: int | None = None  # in a process a template forked: where its listener goes
SUPERVISED = False  # whether this process is under a supervised filter (its own or inherited)
# Whether this process is a template that forks targets' processes (a module template): its
# filter, theirs too, lets nothing through by its own id (which names it, not them) unasked.
FORKS_TARGETS = False


def available() -> bool:
    """Whether this kernel lets a supervisor answer a process's calls and let them run on
    (Linux 5.5 on x86_64 or aarch64)."""
    if not confine_signals.available():
        return False
    try:
        major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 5)


# -- the confined process's side ----------------------------------------------------------------


def take_channel(channel: tuple[int, int]) -> int:
    """In the forked process: keep the child's end of ``channel`` as :data:`CHANNEL` (its
    number, to keep open). The process is a target's own until it says otherwise
    (:data:`FORKS_TARGETS`)."""
    global CHANNEL, FORKS_TARGETS
    FORKS_TARGETS = False
    os.close(channel[0])
    CHANNEL = channel[1]
    return CHANNEL


def release() -> None:
    """Close :data:`CHANNEL` (its listener sent, or none to send): nothing the target runs
    can send the template anything on it."""
    global CHANNEL
    if CHANNEL is not None:
        os.close(CHANNEL)
        CHANNEL = None


def confine_processes(signals: bool) -> tuple[str, str]:
    """Install the supervised filter in this process (with ``signals``, its signals too) and
    send its listener to the template; ``(signals open, scheduling open)``: what stays
    unconfined, in a few words, ``""`` for what is confined. Without a supervisor (the kernel
    before 5.5, no template to send it to) the signals are refused outside the process's own
    ids (:func:`.confine_signals.confine_signals`) and the scheduling calls stay open."""
    global SUPERVISED
    refusal = "no template supervises this process"
    if SUPERVISED:  # forked from a supervised process (a module template): its filter is this one's
        release()
        return "", ""
    if CHANNEL is not None and available():
        machine = platform.machine()
        try:
            own = 0 if FORKS_TARGETS else os.getpid()
            listener = install_listening(_ABIS[machine], confine_signals.program(
                machine, own, signals=signals, supervised=True))
        except OSError as error:
            refusal = f"the kernel refused a supervised seccomp filter ({error.strerror})"
        else:
            with socket.socket(fileno=os.dup(CHANNEL)) as channel:
                socket.send_fds(channel, [b"L"], [listener])
            os.close(listener)
            release()
            SUPERVISED = True
            return "", ""
    elif not available():
        refusal = "the kernel has no seccomp user notification (Linux 5.5)"
    release()
    return (confine_signals.confine_signals() if signals else "",
            f"the target could change the priority, CPU affinity or scheduler of this user's processes ({refusal})")


# -- the supervisor's side ----------------------------------------------------------------------


def _status(pid: int) -> dict[str, int]:
    """``Tgid`` and ``PPid`` of the thread or process ``pid`` (empty when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        name, _, value = line.partition(b":")
        if name in (b"Tgid", b"PPid"):
            found[name.decode()] = int(value)
    return found


def in_tree(pid: int, root: int) -> bool:
    """Whether the thread or process ``pid`` belongs to ``root`` or a process below it."""
    if pid <= 0 or root <= 1:
        return False
    process = _status(pid).get("Tgid", 0)
    for _ in range(MAX_ANCESTORS):
        if process == root:
            return True
        if process <= 1:
            return False
        process = _status(process).get("PPid", 0)
    return False


def own_root(caller: int, template: int) -> int:
    """The root of the tree of the thread ``caller`` below a module ``template`` (which
    imported a module for the targets that share it, and is none of theirs): the process
    just below the template on the caller's line of ancestors, or the template itself when
    the caller is one of its threads; 0 when the caller is gone."""
    process = _status(caller).get("Tgid", 0)
    for _ in range(MAX_ANCESTORS):
        if process == template:
            return template
        parent = _status(process).get("PPid", 0)
        if parent == template:
            return process
        if parent <= 1:
            return 0
        process = parent
    return 0


def group_in_tree(group: int, root: int) -> bool:
    """Whether the process group ``group`` is one of ``root``'s tree's: its leader is (a
    group's id stays its leader's process id, not used again while the group lives, and a
    group holds processes of its leader's session alone)."""
    return in_tree(group, root)


def _signed(argument: int) -> int:
    """The ``int`` the kernel reads from a system call's argument (its low 32 bits)."""
    return ctypes.c_int32(argument & LOW_32_BITS).value


def allowed(machine: str, number: int, arguments, root: int) -> bool:
    """Whether the call ``number`` with ``arguments``, from a process of ``root``'s tree,
    acts on that tree alone."""
    calls = confine_signals._CALLS[machine]
    first, second = _signed(arguments[0]), _signed(arguments[1])
    kill, tkill, tgkill, queue, tgqueue = calls.signalling
    if number == kill:
        return first == 0 or (in_tree(first, root) if first > 0 else first < -1 and group_in_tree(-first, root))
    if number in (tkill, queue) or number in calls.scheduling:
        return first == 0 or in_tree(first, root)
    if number in (tgkill, tgqueue):
        return in_tree(first, root) and in_tree(second, root)
    if number in (calls.setpriority, calls.ioprio_set):
        process, group = (PRIO_PROCESS, PRIO_PGRP) if number == calls.setpriority else (IOPRIO_WHO_PROCESS,
                                                                                        IOPRIO_WHO_PGRP)
        if first == process:
            return second == 0 or in_tree(second, root)
        return first == group and (second == 0 or group_in_tree(second, root))
    return False


class Supervisor:
    """A template's supervisor: the listeners of the confined processes it forked, each with
    the root of its tree, answered while the template waits for its next request."""

    def __init__(self):
        # the template's end of a channel, and a listener: the forked process, and whether it
        # is a module template (the root of several targets' trees, none of them its own)
        self._channels: dict[int, tuple[int, bool]] = {}
        self._listeners: dict[int, tuple[int, bool]] = {}
        self._machine = platform.machine()

    def channel(self) -> tuple[int, int] | None:
        """A channel for the next forked process to send its listener on; None where no
        listener can come (the kernel has none; this process is supervised itself, and its
        children under its filter already)."""
        if SUPERVISED or not available():
            return None
        ends = socket.socketpair()
        return ends[0].detach(), ends[1].detach()

    def expect(self, channel: tuple[int, int] | None, pid: int, template: bool = False) -> None:
        """After the fork of ``pid`` (a ``template`` that will fork the targets' processes,
        or a target's own process): its listener comes on ``channel``."""
        if channel is not None:
            os.close(channel[1])
            self._channels[channel[0]] = (pid, template)

    def forget(self, pid: int) -> None:
        """``pid`` is finished: its channel and listener are closed."""
        for table in (self._channels, self._listeners):
            for fd in [fd for fd, (root, _) in table.items() if root == pid]:
                del table[fd]
                os.close(fd)

    def wait_for(self, sock) -> None:
        """Answer the listeners until ``sock`` is readable (or closed)."""
        while True:
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            for fd in (*self._channels, *self._listeners):
                poller.register(fd, select.POLLIN)
            ready = dict(poller.poll())
            if sock.fileno() in ready:
                return
            for fd, events in ready.items():
                if fd in self._channels:
                    self._receive(fd)
                elif events & select.POLLIN:
                    self._answer(fd)
                elif fd in self._listeners:  # POLLHUP: no process uses the filter any more
                    os.close(fd)
                    del self._listeners[fd]

    def _receive(self, fd: int) -> None:
        root = self._channels.pop(fd)
        try:
            with socket.socket(fileno=os.dup(fd)) as channel:
                _, fds, _, _ = socket.recv_fds(channel, 1, 1)
        except OSError:
            fds = []
        os.close(fd)
        for listener in fds[:1]:
            fcntl.fcntl(listener, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
            self._listeners[listener] = root
        for extra in fds[1:]:
            os.close(extra)

    def _answer(self, listener: int) -> None:
        buffer = bytearray(_NOTIFICATION.size)
        try:
            fcntl.ioctl(listener, NOTIF_RECV, buffer)
        except OSError:  # the caller was interrupted before it was read
            return
        ident, caller, _flags, number, _arch, _ip, *arguments = _NOTIFICATION.unpack(buffer)
        root, template = self._listeners[listener]
        let_run = allowed(self._machine, number, arguments, own_root(caller, root) if template else root)
        if not _still_waiting(listener, ident):
            return
        response = _RESPONSE.pack(ident, 0, 0, FLAG_CONTINUE) if let_run else _RESPONSE.pack(
            ident, 0, -errno.EPERM, 0)
        try:
            fcntl.ioctl(listener, NOTIF_SEND, bytearray(response))
        except OSError:  # the caller is gone, or was interrupted
            pass


def _still_waiting(listener: int, ident: int) -> bool:
    """Whether the notification ``ident`` still waits for its answer (its caller was not
    killed while ``/proc`` was read)."""
    for request in NOTIF_ID_VALID:
        try:
            fcntl.ioctl(listener, request, bytearray(struct.pack("=Q", ident)))
            return True
        except OSError as error:
            if error.errno != errno.ENOTTY and error.errno != errno.EINVAL:
                return False
    return False
