"""Targets that change the scheduling of the processes around them (run only as an ordinary
user of the test's own, confined: ``test_confine_sched_gate.py``), and a correct target that
schedules, signals and times out its own processes and threads. Each returns the correct table.

Verdict of each attacker: does not conform, its call raising ``PermissionError`` (the
supervisor refuses the change); the gate, its templates and the targets after it are
untouched. Verdict of the target that schedules its own processes: conforms.
"""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
import threading

from hostile_tables import vaswani
from signals import _gate, _parent

LOWEST = 19
IOPRIO_WHO_PROCESS, IOPRIO_IDLE = 1, 3 << 13  # IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}


def _ioprio_set(which: int, who: int, priority: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    number = IOPRIO_SET[platform.machine()]
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(which), ctypes.c_long(who), ctypes.c_long(priority)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def renices_the_gate(num_positions, dim):
    """Gives the gate the lowest priority (nice 19: starved by the target's own work)."""
    os.setpriority(os.PRIO_PROCESS, _gate(), LOWEST)
    return vaswani(num_positions, dim)


def renices_its_templates(num_positions, dim):
    """Gives every template above it the lowest priority, the nearest first (a module
    template that imported its module is its own, and is reniced; the slot template above
    it is not)."""
    pid = os.getppid()
    while pid != _gate():
        os.setpriority(os.PRIO_PROCESS, pid, LOWEST)
        pid = _parent(pid)
    return vaswani(num_positions, dim)


def renices_the_gates_group(num_positions, dim):
    """Gives the gate's process group (the CI step's shell with it) the lowest priority."""
    os.setpriority(os.PRIO_PGRP, os.getpgid(_gate()), LOWEST)
    return vaswani(num_positions, dim)


def renices_its_user(num_positions, dim):
    """Gives every process of its user the lowest priority (``PRIO_USER``, the caller's by 0)."""
    os.setpriority(os.PRIO_USER, 0, LOWEST)
    return vaswani(num_positions, dim)


def pins_the_gate(num_positions, dim):
    """Pins the gate to one CPU."""
    os.sched_setaffinity(_gate(), {min(os.sched_getaffinity(0))})
    return vaswani(num_positions, dim)


def idles_the_gate(num_positions, dim):
    """Puts the gate in the idle scheduling class (it runs only when nothing else would)."""
    os.sched_setscheduler(_gate(), os.SCHED_IDLE, os.sched_param(0))
    return vaswani(num_positions, dim)


def idles_the_gates_disk(num_positions, dim):
    """Puts the gate's disk access in the idle I/O class."""
    _ioprio_set(IOPRIO_WHO_PROCESS, _gate(), IOPRIO_IDLE)
    return vaswani(num_positions, dim)


def schedules_its_own(num_positions, dim):
    """Renices, pins and signals its own subprocess (leading a group of its own) and its own
    thread by their ids, kills a hanging program at ``subprocess.run``'s timeout, and puts
    its own process in the batch class. Verdict: conforms."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    worker_done = threading.Event()
    worker = threading.Thread(target=worker_done.wait, args=(10,))
    worker.start()
    try:
        os.setpriority(os.PRIO_PROCESS, child.pid, LOWEST)
        os.setpriority(os.PRIO_PGRP, child.pid, LOWEST)
        os.sched_setaffinity(child.pid, os.sched_getaffinity(0))
        os.sched_setaffinity(worker.native_id, os.sched_getaffinity(0))
        _ioprio_set(IOPRIO_WHO_PROCESS, worker.native_id, IOPRIO_IDLE)
        os.sched_setscheduler(os.getpid(), os.SCHED_BATCH, os.sched_param(0))
        os.killpg(child.pid, 0)
        try:
            subprocess.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        else:
            raise RuntimeError("a program that sleeps a minute ended before its half-second timeout")
    finally:
        worker_done.set()
        worker.join()
        child.kill()
        child.wait()
    return vaswani(num_positions, dim)
