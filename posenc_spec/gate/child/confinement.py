"""Confinement without privileges: what a process that runs target code may still do to the
world around it, narrowed by the kernel before the target's import (Linux Landlock, through
its system calls; no privilege needed).

A confined process (a sealed child, or a module template that imports a target's module):

- writes only beneath a private folder of its own (``TMPDIR`` names it, so ``tempfile``
  and the caches kept there, torch's compiler cache among them, work), ``/dev/shm`` (torch's
  and ``multiprocessing``'s shared memory: a tmpfs of its own where the kernel allows a
  mount namespace, as large as its memory limit, counted by the gate and gone with it,
  :func:`private_shared_memory`), the null, zero and full devices, and the
  folders the user names in ``POSENC_SPEC_WRITABLE``; everything else (the interpreter,
  site-packages, the checkout, the gate's reports, other processes' files) it may read and
  not change;
- cannot trace or read through ``/proc`` any process outside its own (Landlock's domain);
- cannot signal, or connect to an abstract unix socket of, any process outside its own
  (Landlock ABI 6 scoping): not the gate, its templates, the Python API's caller, the CI
  step's shell, another lane's target. Where Landlock has no signal scoping (before Linux
  6.12, or no Landlock), a seccomp filter keeps a sealed child's signals among its own
  processes instead (:mod:`.confine_signals`).

Its private folder is made by the process itself, beneath the one of the template it was
forked from (beneath the gate's run folder for the first), and removed by that template when
the process is finished. Where the kernel offers less (an older kernel, Landlock not
enabled), the process runs with what there is, and :func:`confine` says what is not
confined. The writes of a process that shares the caller's memory are kept from the caller:
:func:`detach_shared_memory`.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import stat
import sys

from .limits import CHILD_UID_BASE, INODE_BYTES, LINUX_CAPABILITY_VERSION_3

IS_LINUX = sys.platform.startswith("linux")
# The system call numbers are the same on every Linux architecture (added after the
# numbering was unified).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

FS_WRITE_FILE = 1 << 1
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
FS_REFER = 1 << 13  # ABI 2: moving and linking files between folders
FS_TRUNCATE = 1 << 14  # ABI 3
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
SCOPE_ABI = 6

# Every kind of change to the file system (reading and running files is left alone: the
# target imports whatever it imports). Device ioctls (ABI 5) are not restricted.
_CHANGES = (FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
            | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM)
_FILE_CHANGES = FS_WRITE_FILE | FS_TRUNCATE  # what a rule on a file (not a folder) may grant
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")
SHARED_MEMORY = "/dev/shm"

# The folder this process writes into, when it is confined (its children's folders go
# beneath it); else None, and children's folders go beneath BASE, the gate's run folder.
FOLDER: str | None = None
BASE: str | None = None


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers (0: none, or not Linux)."""
    if not IS_LINUX or platform.machine() not in ("x86_64", "aarch64", "riscv64", "ppc64le", "s390x"):
        return 0
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def private_folder(pid: int) -> str:
    """Where the process ``pid`` forked from this one keeps its private folder."""
    return os.path.join(FOLDER or BASE or "", str(pid))


def make_private_folder(owner: int | None = None) -> str | None:
    """Make this process's private folder (owned by the user id ``owner`` when given: a
    process about to take a user of its own); None without a run folder to put it in."""
    if not (FOLDER or BASE):
        return None
    folder = private_folder(os.getpid())
    shutil.rmtree(folder, ignore_errors=True)  # a process id used again: an earlier process's leftovers
    os.mkdir(folder, 0o700)
    if owner is not None:
        os.chown(folder, owner, owner)
    return folder


def remove_private_folder(pid: int) -> None:
    """Remove the private folder of the finished process ``pid`` with everything in it (its
    own files it may have made unreadable: their modes are put right first)."""
    if FOLDER or BASE:
        remove_tree(private_folder(pid))


# -- a private /dev/shm ------------------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 1 << 1, 1 << 2, 1 << 14, 1 << 18
PR_SET_DUMPABLE, PR_CAPBSET_DROP = 4, 24
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# Whether this process's /dev/shm is a private tmpfs (made by it, or by the module template
# it was forked from); the socket on which it hands that folder to the template that forked
# it (:func:`hand_over_shared_memory`).
SHARED_MEMORY_PRIVATE = False
REPORT_FD: int | None = None
_private_possible: bool | None = None  # learned once, by the root template (see private_shared_memory_possible)


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _drop_capabilities(libc) -> None:
    """Drop every capability (the full set a new user namespace gives its first process), so
    that the target cannot unmount its private ``/dev/shm``; :class:`OSError` on refusal."""
    for capability in range(64):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: unknown
            raise OSError(ctypes.get_errno(), "dropping a capability from the bounding set failed")
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)  # this thread
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _mount_private_shared_memory(size: int) -> None:
    """Give this (single-threaded) process and all it will start a ``/dev/shm`` of their own:
    a new mount namespace (root's own; an ordinary user's inside a new user namespace that
    maps the user to itself, its capabilities there dropped after the mount) with a tmpfs of
    at most ``size`` bytes mounted on ``/dev/shm``. :class:`OSError` when the kernel refuses
    a step (a container without CAP_SYS_ADMIN, user namespaces restricted by AppArmor)."""
    libc = _libc()
    as_root = os.geteuid() == 0
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWNS if as_root else CLONE_NEWUSER | CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare refused a mount namespace")
    if not as_root:
        # A process that is not dumpable (forked from a template) finds its /proc files
        # root's: dumpable for as long as it writes its maps.
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        finally:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # Nothing mounted here reaches the namespace this process came from.
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "making the mounts private failed")
    size = max(PAGE, size - size % PAGE)
    # No more inodes than the size holds at INODE_BYTES each: empty files count too.
    options = f"size={size},nr_inodes={max(64, size // INODE_BYTES)},mode=1777".encode()
    if libc.mount(b"tmpfs", SHARED_MEMORY.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        raise OSError(ctypes.get_errno(), f"mounting a tmpfs on {SHARED_MEMORY} failed")
    if not as_root:  # as root, drop_root drops them
        _drop_capabilities(libc)


def private_shared_memory_possible() -> bool:
    """Whether a process forked from this one can have a private ``/dev/shm``: tried once,
    in a forked process, so that a kernel that lets a user namespace be made but refuses it
    the mount (Ubuntu 24.04's AppArmor) leaves no process in a namespace that is no use. Not
    where the import path would no longer be readable there: a capability that reads files
    (CAP_DAC_READ_SEARCH) counts only in the namespace it was given in."""
    global _private_possible
    if _private_possible is None:
        _private_possible = False
        if IS_LINUX and os.path.isdir(SHARED_MEMORY):
            import_path = [path for path in sys.path if os.path.exists(path)]
            pid = os.fork()
            if pid == 0:
                try:
                    _mount_private_shared_memory(PAGE)
                    readable = all(os.access(path, os.R_OK) for path in import_path)
                except BaseException:
                    os._exit(1)
                os._exit(0 if readable else 1)
            _, status = os.waitpid(pid, 0)
            _private_possible = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return _private_possible


def private_shared_memory(size: int) -> str:
    """Give this process (about to run target code) a private ``/dev/shm`` of at most ``size``
    bytes (:func:`_mount_private_shared_memory`), unless it has one from the module template
    it was forked from; ``""`` when it has one, else why not, in a few words."""
    global SHARED_MEMORY_PRIVATE
    if SHARED_MEMORY_PRIVATE:
        return ""
    why = "the kernel refused a private mount namespace"
    if private_shared_memory_possible():
        try:
            _mount_private_shared_memory(size)
        except OSError as error:
            why = str(error)
        else:
            SHARED_MEMORY_PRIVATE = True
            return ""
    return f"its files under {SHARED_MEMORY} were not counted against --max-memory and may outlive it ({why})"


def hand_over_shared_memory() -> None:
    """Send the template that forked this process (``REPORT_FD``) a descriptor of its private
    ``/dev/shm``, before any target code runs: the gate counts the bytes and inodes in use
    there against the target's memory limit (:func:`shared_memory_bytes`). Without a private
    one, the socket is closed with nothing sent."""
    global REPORT_FD
    fd, REPORT_FD = REPORT_FD, None
    if fd is None:
        return
    import socket

    try:
        if SHARED_MEMORY_PRIVATE:
            folder = os.open(SHARED_MEMORY, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                with socket.socket(fileno=os.dup(fd)) as sender:
                    socket.send_fds(sender, [b"m"], [folder])
            finally:
                os.close(folder)
    finally:
        os.close(fd)


def shared_memory_bytes(fd: int) -> int:
    """The memory a private ``/dev/shm`` (a descriptor of it) holds: its bytes in use and
    ``INODE_BYTES`` for each file or folder in it."""
    try:
        info = os.fstatvfs(fd)
    except OSError:
        return 0
    return (info.f_blocks - info.f_bfree) * info.f_frsize + (info.f_files - info.f_ffree) * INODE_BYTES


def shared_memory_names() -> frozenset[str] | None:
    """The names in this process's private ``/dev/shm`` (a module template's, before it forks
    a target's process: what that process adds is removed after it, :func:`remove_left_behind`);
    None without a private one."""
    if not SHARED_MEMORY_PRIVATE:
        return None
    try:
        return frozenset(os.listdir(SHARED_MEMORY))
    except OSError:
        return frozenset()


def remove_left_behind(pid: int, shared_before: frozenset[str] | None = None) -> None:
    """Remove what the finished process ``pid`` (forked from this one) left behind: its
    private folder; where this process has a private ``/dev/shm`` (a module template), every
    name there but ``shared_before``, those it had when it forked ``pid``; and where ``pid``
    had a user of its own (this process runs as root: see :func:`.limits.drop_root`), every
    file of that user under ``/dev/shm``, memory that no process holds any more. (A process
    with a private ``/dev/shm`` of its own takes it along; as an ordinary user without one,
    the files there are the user's alike, and are left alone.)"""
    remove_private_folder(pid)
    if shared_before is not None:
        for name in set(shared_memory_names() or ()) - shared_before:
            _remove(os.path.join(SHARED_MEMORY, name))
        return
    if os.geteuid() != 0 or not IS_LINUX:
        return
    own_user = CHILD_UID_BASE + pid
    try:
        names = os.listdir(SHARED_MEMORY)
    except OSError:
        return
    for name in names:
        path = os.path.join(SHARED_MEMORY, name)
        try:
            if os.lstat(path).st_uid == own_user:
                _remove(path)
        except OSError:
            continue


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            remove_tree(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def remove_tree(folder: str) -> None:
    def writable_and_again(function, path, _):
        try:
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
            function(path)
        except OSError:
            pass

    if os.path.lexists(folder):
        shutil.rmtree(folder, onerror=writable_and_again)


def confine(folder: str | None, writable=(), scope_signals: bool = True) -> str:
    """Confine this process and all it will start (see the module docstring), writing beneath
    ``folder`` and the folders ``writable``; ``""`` when it is confined as that says, else
    what is not confined, in a few words. Without ``scope_signals`` Landlock leaves signals
    alone and says nothing of them: the caller keeps them by other means
    (:mod:`.confine_signals`, on a kernel whose Landlock does not scope them)."""
    abi = landlock_abi()
    if abi == 0:
        return ("the target's processes were not confined: the kernel offers no Landlock, so they could write "
                "wherever this user can" + (", signal this user's processes" if scope_signals else "")
                + ", and read or change them through /proc as far as the kernel's ptrace rules allow")
    libc = _libc()
    changes = _CHANGES | (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0)
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | (SCOPE_SIGNAL if scope_signals else 0) if abi >= SCOPE_ABI else 0
    attributes = _RulesetAttr(changes, 0, scoped)
    size = ctypes.sizeof(_RulesetAttr) if abi >= SCOPE_ABI else 16  # older kernels know two fields
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attributes), size, 0)
    if ruleset < 0:
        refusal = os.strerror(ctypes.get_errno())
        return f"the target's processes were not confined: Landlock refused a ruleset ({refusal})"
    try:
        for path in [folder, SHARED_MEMORY, *writable, *WRITABLE_DEVICES]:
            if path:
                _allow(libc, ruleset, path, changes)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            return ("the target's processes were not confined: Landlock refused to restrict them "
                    f"({os.strerror(ctypes.get_errno())})")
    finally:
        os.close(ruleset)
    if abi < SCOPE_ABI and scope_signals:
        return (f"the target's signals were not confined (Landlock ABI {abi}; ABI {SCOPE_ABI}, Linux 6.12, scopes "
                "them): it could signal this user's processes, the gate's among them")
    return ""


def _allow(libc, ruleset: int, path: str, changes: int) -> None:
    """Allow ``changes`` beneath the folder ``path`` (the file changes alone on a file); a
    path that is not there is skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        allowed = changes if stat.S_ISDIR(os.fstat(fd).st_mode) else changes & _FILE_CHANGES
        rule = _PathBeneathAttr(allowed, fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"Landlock refused a rule for {path}")
    finally:
        os.close(fd)


# -- the caller's shared memory ---------------------------------------------------------------

PROT_READ, PROT_WRITE = 1, 2
MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS = 0x02, 0x10, 0x20


def _writable_shared_mappings() -> list[tuple[int, int]]:
    """``(start, end)`` of each shared mapping this process may write (Linux ``/proc``)."""
    try:
        with open("/proc/self/maps") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 2 and fields[1][1] == "w" and fields[1][3] == "s":
            start, _, end = fields[0].partition("-")
            found.append((int(start, 16), int(end, 16)))
    return found


class _Span(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def _readable_contents(libc, start: int, size: int) -> bytes:
    """What this process can read at ``[start, start + size)``: up to the first page that
    would fault, zeros after it. A file mapped beyond its end (truncated since, say) faults
    there, and a plain read would die of SIGBUS; ``process_vm_readv`` on this very process
    stops short instead. Where that call is refused, the whole range is read."""
    buffer = ctypes.create_string_buffer(size)
    local, remote = _Span(ctypes.addressof(buffer), size), _Span(start, size)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.POINTER(_Span), ctypes.c_ulong,
                                      ctypes.POINTER(_Span), ctypes.c_ulong, ctypes.c_ulong]
    if libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
        return ctypes.string_at(start, size)
    return buffer.raw


def detach_shared_memory() -> int:
    """Replace every writable shared mapping this process inherited (a tensor moved to shared
    memory, a shared ``mmap``, the semaphore of a ``multiprocessing.Lock``) by a private copy
    of it at the same address: what this process reads there is unchanged (a file mapped
    beyond its end reads as zeros past it, where it would have faulted), what it writes or
    locks there is its own. The number of mappings replaced."""
    mappings = _writable_shared_mappings()
    if not mappings:
        return 0
    libc = _libc()
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    for start, end in mappings:
        size = end - start
        contents = _readable_contents(libc, start, size)
        if libc.mmap(start, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != start:
            raise OSError(ctypes.get_errno(), "replacing a shared mapping failed")
        ctypes.memmove(start, contents, size)
    return len(mappings)
