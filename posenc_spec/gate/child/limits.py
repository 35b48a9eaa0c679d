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
PR_SET_DUMPABLE = 4
PR_SET_KEEPCAPS = 8
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_DAC_READ_SEARCH = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# A sealed child of a gate that runs as root takes a user id of its own, above any a system
# hands out: the child's process id added to this.
CHILD_UID_BASE = 2_000_000_000
# A tmpfs file's inode and dentry take about a kibibyte of kernel memory that the file
# system's size does not count (shmem_inode_info alone is some 700 bytes on x86_64): the
# memory count takes each file under /dev/shm for that much beyond its blocks.
INODE_BYTES = 1024
IS_LINUX = sys.platform.startswith("linux")


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int, arg3: int = 0) -> bool:
    if not IS_LINUX:
        return False
    try:
        return _libc().prctl(option, value, arg3, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def not_dumpable() -> bool:
    """No ptrace and no access to this process's memory or descriptors through ``/proc`` for
    another process of the same user without CAP_SYS_PTRACE (and no core dumps)."""
    return _prctl(PR_SET_DUMPABLE, 0)


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 40


def _capset(keep: int) -> None:
    """Set this thread's permitted and effective capabilities to the bit set ``keep``
    (inheritable none)."""
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(keep & 0xFFFFFFFF, keep & 0xFFFFFFFF, 0,
                                 keep >> 32, keep >> 32, 0)  # two {effective, permitted, inheritable}
    if _libc().capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def drop_root(uid: int) -> None:
    """Become ``uid`` (and the group of that number, with no supplementary groups), keeping
    only CAP_DAC_READ_SEARCH (to read the files root could: modules imported at call time
    from a checkout or a virtualenv under a 0700 home); drop every other capability from
    the bounding set, and set no_new_privs. The process can then neither signal nor trace
    root's processes (the gate, its templates) nor another child (another user id). For a
    process running as root on Linux; :class:`OSError` when the kernel refuses a step."""
    libc = _libc()
    for capability in range(_last_capability() + 1):
        if capability != CAP_DAC_READ_SEARCH and libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            if errno != 22:  # EINVAL: a capability this kernel does not know
                raise OSError(errno, f"dropping capability {capability} from the bounding set failed")
    if not _prctl(PR_SET_KEEPCAPS, 1):
        raise OSError(ctypes.get_errno(), "PR_SET_KEEPCAPS failed")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _capset(1 << CAP_DAC_READ_SEARCH)
    _prctl(PR_SET_KEEPCAPS, 0)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    if not _prctl(PR_SET_NO_NEW_PRIVS, 1):
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    not_dumpable()


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


def apply_limits(memory: int | None, cpu_seconds: int | None, processes: int | None,
                 file_size: int | None = None) -> None:
    """``memory``: bytes of address space beyond what the process holds now (the imported
    libraries); ``cpu_seconds``: CPU time of this process; ``processes``: processes and
    threads beyond those its user runs now (root is exempt from RLIMIT_NPROC: a gate running
    as root gives each target a user of its own first, :func:`drop_root`, and the gate also
    counts what runs below the child); ``file_size``: the largest file it may write (a
    write beyond fails with EFBIG instead of killing the process). No core dumps."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory:
        _lower(resource.RLIMIT_AS, virtual_memory_bytes() + memory, hard_too=True)
    if cpu_seconds:
        _lower(resource.RLIMIT_CPU, cpu_seconds)
    if processes and os.geteuid() != 0 and IS_LINUX:
        _lower(resource.RLIMIT_NPROC, user_tasks(os.getuid()) + processes, hard_too=True)
    if file_size:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        _lower(resource.RLIMIT_FSIZE, file_size, hard_too=True)


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


def waited_for_cpu(pid: int | None = None) -> float:
    """Seconds thread ``pid`` (a process's main thread; None: the calling thread) has spent
    ready to run but waiting for a CPU, from ``/proc/.../schedstat``; 0 where that cannot be
    read (not Linux, a kernel without scheduler statistics, a process that is gone)."""
    path = "/proc/thread-self/schedstat" if pid is None else f"/proc/{pid}/schedstat"
    try:
        with open(path, "rb") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _status(pid: int) -> dict[str, str]:
    """The fields of ``/proc/<pid>/status`` (empty when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return {}
    return dict(line.partition(":")[::2] for line in lines)


def user_tasks(uid: int) -> int:
    """How many tasks (processes and their threads, as RLIMIT_NPROC counts them) run with the
    real user id ``uid``; read from each process's status (a process that is not dumpable
    shows its ``/proc`` folder as root's)."""
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _status(int(name))
            try:
                if int(fields["Uid"].split()[0]) == uid:
                    count += int(fields["Threads"])
            except (KeyError, ValueError, IndexError):
                continue
    return count


def usage(pid: int) -> tuple[int, int]:
    """``(threads, bytes)`` of process ``pid``: its threads, and its anonymous and shared
    memory resident (``RssAnon`` + ``RssShmem``); zeros when it is gone."""
    fields = _status(pid)
    try:
        kib = sum(int(fields[key].split()[0]) for key in ("RssAnon", "RssShmem"))
        return int(fields["Threads"]), kib * 1024
    except (KeyError, ValueError, IndexError):
        return 0, 0


def memory_files(pid: int) -> dict[tuple[int, int], int]:
    """The memory-only files (``memfd``, ``/dev/shm``) process ``pid`` holds open: their
    bytes in memory, by ``(device, inode)``."""
    found = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for name in names:
        path = f"/proc/{pid}/fd/{name}"
        try:
            link = os.readlink(path)
            if link.startswith(("/memfd:", "/dev/shm/")):
                info = os.stat(path)
                found[(info.st_dev, info.st_ino)] = info.st_blocks * 512
        except OSError:
            continue
    return found


def own_user(pid: int) -> int | None:
    """The user id of process ``pid`` when it is a user of a target's own (see
    :func:`drop_root`), else None."""
    try:
        uid = int(_status(pid)["Uid"].split()[0])
    except (KeyError, ValueError, IndexError):
        return None
    return uid if uid >= CHILD_UID_BASE else None


def files_of_users(folder: str, uids: set[int]) -> dict[tuple[int, int], int]:
    """The files and folders beneath ``folder`` (not following links) owned by one of
    ``uids``: the memory each holds (its blocks, and ``INODE_BYTES`` for its inode), by
    ``(device, inode)``."""
    found: dict[tuple[int, int], int] = {}
    if not uids:
        return found
    for parent, folders, names in os.walk(folder):
        for name in folders + names:
            try:
                info = os.lstat(os.path.join(parent, name))
            except OSError:
                continue
            if info.st_uid in uids:
                found[(info.st_dev, info.st_ino)] = info.st_blocks * 512 + INODE_BYTES
    return found


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
