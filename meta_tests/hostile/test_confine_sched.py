"""The supervisor that judges the calls a confined process aims at other processes
(``posenc_spec/gate/child/supervisor.py``), with this test's process as the template: a
forked process installs the supervised filter and sends its listener here; its signals,
``setpriority``, ``sched_setaffinity``, ``sched_setscheduler``, ``sched_setattr`` and
``ioprio_set`` aimed at a sacrificial process of the test, the test's own process, or every
process of the user are refused; the same aimed at the forked process's own child, its own
threads and its own group run. A supervisor that is gone makes the call fail, never hang."""

from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading

import pytest

from meta_tests.hostile import raw_syscall, tried
from posenc_spec.gate.child import confine_signals, supervisor
from posenc_spec.gate.child.supervisor import Supervisor

pytestmark = pytest.mark.skipif(not supervisor.available(),
                                reason="needs seccomp user notification: Linux 5.5 on x86_64 or aarch64")
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP, IOPRIO_WHO_USER = 1, 2, 3
IOPRIO_BEST_EFFORT_7 = (2 << 13) | 7  # IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7): the lowest best-effort level
SCHED_ATTR_SIZE = 48  # struct sched_attr, its first version
LOWEST = 19


def _sched_setattr(pid: int) -> None:
    """``sched_setattr(pid, {SCHED_OTHER, nice 19})``."""
    attributes = (ctypes.c_uint32 * (SCHED_ATTR_SIZE // 4))()
    attributes[0], attributes[1], attributes[4] = SCHED_ATTR_SIZE, os.SCHED_OTHER, LOWEST  # size, policy, nice
    raw_syscall(confine_signals._CALLS[platform.machine()].scheduling[3], pid, ctypes.addressof(attributes), 0)


def _ioprio_set(which: int, who: int) -> None:
    raw_syscall(confine_signals._CALLS[platform.machine()].ioprio_set, which, who, IOPRIO_BEST_EFFORT_7)


def _every_change(pid: int, group: int) -> dict:
    """Every call that changes the scheduling of the process (or thread) ``pid`` and the
    group ``group``, and a signal 0 to each."""
    return {
        "setpriority": lambda: os.setpriority(os.PRIO_PROCESS, pid, LOWEST),
        "setpriority(group)": lambda: os.setpriority(os.PRIO_PGRP, group, LOWEST),
        "sched_setaffinity": lambda: os.sched_setaffinity(pid, os.sched_getaffinity(0)),
        "sched_setscheduler": lambda: os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0)),
        "sched_setattr": lambda: _sched_setattr(pid),
        "ioprio_set": lambda: _ioprio_set(IOPRIO_WHO_PROCESS, pid),
        "ioprio_set(group)": lambda: _ioprio_set(IOPRIO_WHO_PGRP, group),
        "kill": lambda: os.kill(pid, 0),
        "killpg": lambda: os.killpg(group, 0),
    }


def _in_a_supervised_process(body, signals: bool = True, between=None, template: bool = False) -> dict:
    """What ``body(got)`` filled in a forked process in a session of its own that installed
    the supervised filter (``"installed"``: what it left open) with this process as its
    supervisor (as a module ``template``'s, when so); ``between(supervisor, pid)``, when
    given, runs once the process has said ``"ready"`` and before it goes on."""
    watcher = Supervisor()
    channel = watcher.channel()
    parent_end, child_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        got: dict = {}
        try:
            parent_end.close()
            os.setsid()
            supervisor.take_channel(channel)
            supervisor.FORKS_TARGETS = template
            got["installed"] = list(supervisor.confine_processes(signals))
            if between is not None:
                child_end.sendall(b"ready")
                child_end.recv(1)
            body(got)
        finally:
            child_end.sendall(json.dumps(got).encode())
            os._exit(0)
    child_end.close()
    watcher.expect(channel, pid, template=template)
    with parent_end:
        watcher.wait_for(parent_end)
        if between is not None:
            assert parent_end.recv(5) == b"ready"
            between(watcher, pid)
            parent_end.sendall(b"g")
        received = b"".join(iter(lambda: parent_end.recv(65536), b""))
    os.waitpid(pid, 0)
    watcher.forget(pid)
    return json.loads(received)


@pytest.fixture
def victim():
    """A sacrificial process of the test's own, leading a group of its own, killed after."""
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield process.pid
    process.kill()
    process.wait()


def _scheduling(pid: int) -> tuple:
    """What the calls above change of ``pid``: its nice value, scheduling policy, affinity."""
    return os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid), os.sched_getaffinity(pid)


def test_every_call_aimed_at_another_process_is_refused(victim):
    """Scheduling changes and signals aimed at a process of the test's, at the test's own
    process (the supervisor's) and its group are refused with EPERM; none of them changed."""
    me, my_group = os.getpid(), os.getpgid(0)
    before = _scheduling(victim), _scheduling(me)
    got = _in_a_supervised_process(lambda got: got.update(
        {"victim": tried(_every_change(victim, victim)), "supervisor": tried(_every_change(me, my_group))}))
    assert got.pop("installed") == ["", ""]
    assert got == dict.fromkeys(("victim", "supervisor"), dict.fromkeys(_every_change(0, 0), "refused (EPERM)")), got
    assert (_scheduling(victim), _scheduling(me)) == before


def test_calls_aimed_at_every_process_of_the_user_are_refused():
    """``kill(-1)``, ``setpriority(PRIO_USER)`` and ``ioprio_set(IOPRIO_WHO_USER)`` (the
    caller's user by ``0``, or named) are refused."""
    attempts = {"kill(-1)": lambda: os.kill(-1, 0),
                "setpriority(user 0)": lambda: os.setpriority(os.PRIO_USER, 0, LOWEST),
                "setpriority(user)": lambda: os.setpriority(os.PRIO_USER, os.getuid(), LOWEST),
                "ioprio_set(user 0)": lambda: _ioprio_set(IOPRIO_WHO_USER, 0)}
    got = _in_a_supervised_process(lambda got: got.update(tried(attempts)))
    assert got.pop("installed") == ["", ""]
    assert got == dict.fromkeys(attempts, "refused (EPERM)"), got


def _own_processes(got: dict) -> None:
    """Every change aimed at the process's own child (leading a group of its own), its own
    thread (by its thread id), itself by id and its own group; then ``subprocess.run``'s
    kill at its timeout, and ``Popen.kill``."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    worker_done = threading.Event()
    worker = threading.Thread(target=worker_done.wait, args=(30,))
    worker.start()
    got["child"] = tried(_every_change(child.pid, child.pid))
    got["child's nice"] = os.getpriority(os.PRIO_PROCESS, child.pid)
    got["thread"] = tried({name: attempt for name, attempt in _every_change(worker.native_id, 0).items()
                            if name != "kill"})  # a thread is signalled by tgkill, below
    got["thread"]["tgkill"] = tried({"": lambda: signal.pthread_kill(worker.ident, 0)})[""]
    got["itself"] = tried(_every_change(os.getpid(), os.getpgid(0)))
    worker_done.set()
    worker.join()
    try:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(20)"], timeout=0.5)
    except subprocess.TimeoutExpired:
        got["run's timeout"] = "killed"
    child.kill()
    got["Popen.kill"] = os.WTERMSIG(os.waitpid(child.pid, 0)[1]) == signal.SIGKILL


def test_every_call_aimed_at_the_process_own_tree_runs():
    """The same changes aimed at the process's own child, its own thread, itself and its own
    groups run (the child's nice value changed); ``subprocess.run`` kills its program at the
    timeout, ``Popen.kill`` kills the child."""
    got = _in_a_supervised_process(_own_processes)
    assert got.pop("installed") == ["", ""]
    allowed = dict.fromkeys(_every_change(0, 0), "allowed")
    assert got.pop("child") == allowed and got.pop("itself") == allowed
    assert got.pop("thread") == {**{name: "allowed" for name in allowed if name != "kill"}, "tgkill": "allowed"}
    assert got == {"child's nice": LOWEST, "run's timeout": "killed", "Popen.kill": True}, got


def _below_a_module_template(got: dict) -> None:
    """In a module template: fork a target's process (in a session of its own, as a
    template forks it) that renices the module template, its own child and itself by id."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        child = subprocess.Popen(["sleep", "60"])
        judged = tried({"the module template": lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), LOWEST),
                        "its own child": lambda: os.setpriority(os.PRIO_PROCESS, child.pid, LOWEST),
                        "itself": lambda: os.setpriority(os.PRIO_PROCESS, os.getpid(), LOWEST)})
        child.kill()
        os.write(write_end, json.dumps(judged).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        got.update(json.loads(handle.read()))
    os.waitpid(pid, 0)
    got["template's nice"] = os.getpriority(os.PRIO_PROCESS, 0)


def test_a_target_below_a_module_template_reaches_its_own_tree_not_the_template():
    """A process a module template forks (under the template's filter) renices its own
    child and itself, and is refused the module template, which serves every target that
    shares its module."""
    got = _in_a_supervised_process(_below_a_module_template, signals=False, template=True)
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    assert got == {"installed": ["", ""], "the module template": "refused (EPERM)", "its own child": "allowed",
                   "itself": "allowed", "template's nice": nice}, got


def test_a_call_fails_when_the_supervisor_is_gone(victim):
    """Once the supervisor closed its listener, a call it would judge fails with ENOSYS at
    once, and the calls the filter judges itself (the process's own id) still run."""
    def closed(watcher, pid):
        watcher.forget(pid)

    got = _in_a_supervised_process(lambda got: got.update(tried({
        "setpriority(victim)": lambda: os.setpriority(os.PRIO_PROCESS, victim, LOWEST),
        "setpriority(itself)": lambda: os.setpriority(os.PRIO_PROCESS, 0, LOWEST)})), between=closed)
    assert got == {"installed": ["", ""], "setpriority(victim)": "refused (ENOSYS)", "setpriority(itself)": "allowed"}
    assert os.getpriority(os.PRIO_PROCESS, victim) == os.getpriority(os.PRIO_PROCESS, os.getpid())


def test_without_a_supervisor_the_warning_names_the_scheduling_calls():
    """A process with no template to send its listener to keeps its signals by the plain
    filter, and the warning says that the scheduling of the user's processes stays open."""
    got = _in_a_forked(lambda: list(supervisor.confine_processes(signals=True)))
    assert got[0] == "" and "priority, CPU affinity or scheduler" in got[1] and "no template" in got[1], got


def _in_a_forked(compute):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.write(write_end, json.dumps(compute()).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        received = handle.read()
    os.waitpid(pid, 0)
    return json.loads(received)


def test_every_jump_of_the_supervised_filter_goes_forward_to_an_instruction():
    """The kernel takes only forward jumps within the program, each ending in a return."""
    for machine in confine_signals._CALLS:
        for signals in (True, False):
            instructions = confine_signals.program(machine, 4_194_304, signals=signals, supervised=True)
            for index, (code, true, false, _) in enumerate(instructions):
                if code & 0x07 == 0x05:  # a jump
                    assert index + 1 + max(true, false) < len(instructions)
            assert instructions[-1][0] == 0x06  # the last instruction returns
