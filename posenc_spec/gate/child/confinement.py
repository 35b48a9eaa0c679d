"""Confinement without privileges: what a process that runs target code may still do to the
world around it, narrowed by the kernel before the target's import (Linux Landlock, through
its system calls; no privilege needed).

A confined process (a sealed child, or a module template that imports a target's module):

- writes only beneath a private folder of its own (``TMPDIR`` names it, so ``tempfile``
  and the caches kept there, torch's compiler cache among them, work), ``/dev/shm`` (torch's
  and ``multiprocessing``'s shared memory), the null, zero and full devices, and the
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

from .limits import CHILD_UID_BASE

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


def remove_left_behind(pid: int) -> None:
    """Remove what the finished process ``pid`` (forked from this one) left behind: its
    private folder and, where it had a user of its own (this process runs as root: see
    :func:`.limits.drop_root`), every file of that user under ``/dev/shm``, memory that no
    process holds any more and no limit counts. (As an ordinary user the files there are
    the user's alike, and are left alone.)"""
    remove_private_folder(pid)
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
            if os.lstat(path).st_uid != own_user:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                remove_tree(path)
            else:
                os.unlink(path)
        except OSError:
            continue


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
