"""The operating-system side of sealing a child: its own session, resource limits, no
inherited file descriptors, and finding and killing whatever it leaves behind (Linux
``/proc`` and ``prctl``; elsewhere only the process group is caught).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
IS_LINUX = sys.platform.startswith("linux")


def _prctl(option: int, value: int) -> bool:
    if not IS_LINUX:
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphaned descendants (a double fork, a new session) are re-parented to this process."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def virtual_memory_bytes() -> int:
    """This process's address-space size (0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def apply_limits(memory: int | None, cpu_seconds: int | None, processes: int | None) -> None:
    """``memory``: bytes of address space beyond what the process holds now (the imported
    libraries); ``cpu_seconds``: CPU time of this process; ``processes``: for a non-root
    user, processes beyond the user's current count (root is exempt from RLIMIT_NPROC:
    there the gate counts descendants itself). No core dumps."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory:
        _lower(resource.RLIMIT_AS, virtual_memory_bytes() + memory, hard_too=True)
    if cpu_seconds:
        _lower(resource.RLIMIT_CPU, cpu_seconds)
    if processes and os.geteuid() != 0 and IS_LINUX:
        _lower(resource.RLIMIT_NPROC, len(user_processes()) + processes, hard_too=True)


def _lower(which: int, value: int, hard_too: bool = False) -> None:
    """Set the soft limit (and the hard one) to ``value``, never above the current hard limit
    (a child of a module template inherits the template's)."""
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value if hard_too else hard))


def close_other_fds(keep: set[int]) -> None:
    """Close every inherited descriptor but ``keep`` and the standard three."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd" if IS_LINUX else "/dev/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def silence_output() -> None:
    """Standard input, output and error to the null device: the gate's output stays the gate's."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


# -- the process tree ------------------------------------------------------------------------


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (Linux ``/proc``)."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
            parents[int(name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def process_state(pid: int) -> str | None:
    """A process's state letter from ``/proc`` (``R``, ``S``, ``T`` stopped, ``Z`` zombie
    ...); None when there is no such process (or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None if IS_LINUX else "R"


def user_processes() -> list[int]:
    uid = os.getuid()
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (not ``root``)."""
    if not IS_LINUX:
        return []
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def kill_group(pid: int) -> None:
    """SIGKILL the process group (a sealed child leads its own) and the process itself."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def sweep(rounds: int = 200) -> None:
    """Kill every descendant of this process, and reap those that are its children, until
    none is left (a fork bomb's survivors are re-parented here by the subreaper flag and
    caught in the next round)."""
    for _ in range(rounds):
        # Without a child there is no descendant (an orphan below a subreaper is re-parented to
        # it, so becomes its child): no need to read every process in /proc, as after most turns.
        victims = descendants(os.getpid()) if _has_children() else []
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        reap()
        if not victims:
            return
        time.sleep(0.001)


def _has_children() -> bool:
    """Whether this process has a child, running or finished, without reaping it."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def reap() -> dict[int, int]:
    """Collect every finished child: pid -> wait status."""
    statuses = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return statuses
        if pid == 0:
            return statuses
        statuses[pid] = status
