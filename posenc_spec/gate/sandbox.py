"""The gate's side of its child processes: templates, sealed children, limits and clean-up.

One *root* template is started per process (:func:`root_template`, in the background: it
imports torch while the gate prepares) and kept for later runs; a run that preloads modules
(``--preload``) gets a root of its own that has imported them too, kept as well. Each slot
of a run (``-j N`` slots) forks a *slot* template from it; a slot template is a subreaper, so whatever a
target leaves running, double-forked or in a new session, is re-parented to it and killed
when the target's turn ends. Targets that share a module may share a *module* template, forked from the slot
template, that has imported that module once (not where a seccomp filter keeps the targets'
signals: :func:`signals_filtered`); every target still runs in a sealed child of its own
(:class:`~posenc_spec.gate.runner._Child`), forked for it and killed after it.

A module template has run the target's import, so the gate trusts nothing it says beyond
the protocol: it may only make its own targets fail. The root and slot templates run no
target code.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from posenc_spec.text import one_line

from . import options
from .child import limits as os_limits
from .child.confinement import SCOPE_ABI, SHARED_MEMORY, landlock_abi, remove_tree, shared_memory_bytes
from .child.protocol import ChannelError, Reader, send
from .child.template import command
from .errors import UsageError
from .preimport import import_gate_modules

# Both are of the template's own time (OwnTime): a cold `import torch` takes seconds of it.
TEMPLATE_START_SECONDS = 300.0
TEMPLATE_REPLY_SECONDS = 30.0  # fork, kill and reap: milliseconds


CONFINEMENT_SWITCH = "POSENC_SPEC_CONFINEMENT"  # "off": targets run unconfined (child.confinement)
WRITABLE_FOLDERS = "POSENC_SPEC_WRITABLE"  # folders, os.pathsep apart, that confined targets may also write
# "on" (for testing): a confined target's signals are kept by the seccomp filter
# (child.confine_signals), as on a kernel whose Landlock does not scope them, whatever this kernel offers
SIGNAL_FILTER_SWITCH = "POSENC_SPEC_SIGNAL_FILTER"


def confinement_wanted() -> bool:
    """Whether target code runs confined (:mod:`posenc_spec.gate.child.confinement`): unless
    ``POSENC_SPEC_CONFINEMENT=off``."""
    return os.environ.get(CONFINEMENT_SWITCH, "").strip().lower() != "off"


def signals_filtered() -> bool:
    """Whether a confined target's signals are kept by the seccomp filter
    (:mod:`posenc_spec.gate.child.confine_signals`) rather than by Landlock's scoping: where
    the kernel's Landlock has no signal scoping (ABI 6, Linux 6.12) and the gate is not root
    (under root each target is a user of its own, whom the kernel refuses every other user's
    processes), or with ``POSENC_SPEC_SIGNAL_FILTER=on`` (for testing). The filter is made
    for the process that runs the target, so no module template imports a target's module
    for the processes forked from it (:meth:`posenc_spec.gate.runner.Slot.share_module`)."""
    if not confinement_wanted():
        return False
    if os.environ.get(SIGNAL_FILTER_SWITCH, "").strip().lower() == "on":
        return True
    return _landlock_abi() < SCOPE_ABI and not (os_limits.IS_LINUX and os.geteuid() == 0)


@functools.cache
def _landlock_abi() -> int:
    return landlock_abi()


def writable_folders() -> list[str]:
    """The folders ``POSENC_SPEC_WRITABLE`` names, absolute."""
    return [os.path.abspath(path) for path in os.environ.get(WRITABLE_FOLDERS, "").split(os.pathsep) if path]


_run_folder: tuple[int, str] | None = None
_folder_lock = threading.Lock()
FILE_CLOCK = 5  # Linux's CLOCK_REALTIME_COARSE, which the kernel stamps file times with (time does not name it)
_runs = {"going": 0, "started": None}  # how many runs are going on, and when the first of them began


@contextlib.contextmanager
def a_run():
    """Around a run: while one goes on, :func:`run_started` is when the first began."""
    with _folder_lock:
        if not _runs["going"]:
            _runs["started"] = time.clock_gettime_ns(FILE_CLOCK)
        _runs["going"] += 1
    try:
        yield
    finally:
        with _folder_lock:
            _runs["going"] -= 1


def run_started() -> int | None:
    """When the runs going on (or the last one) began, on the clock file times are taken
    from (the kernel's coarse clock): a module file created or changed since is the target's
    (:mod:`posenc_spec.gate.child.attribution`). None before the first run."""
    return _runs["started"]


def run_folder() -> str:
    """This process's run folder, made on first use and removed at exit: each confined
    process keeps its private folder beneath it (others may pass through it, not list it)."""
    global _run_folder
    with _folder_lock:
        if _run_folder is None or _run_folder[0] != os.getpid() or not os.path.isdir(_run_folder[1]):
            folder = tempfile.mkdtemp(prefix="posenc-spec-")
            os.chmod(folder, 0o711)  # a target with a user of its own (as root) reaches its folder inside
            atexit.register(remove_tree, folder)  # before the root templates' atexit: it runs after them
            _run_folder = (os.getpid(), folder)
        return _run_folder[1]


class SandboxError(RuntimeError):
    """A template process failed: the gate cannot run targets (an internal error)."""


class PreloadError(UsageError):
    """A module named by ``--preload`` could not be imported."""


class TargetLimitExceeded(Exception):
    """A target's processes together took more than its limits allow."""


class OwnTime:
    """A limit of ``seconds`` of process ``pid``'s own time, from now: the gate's deadline
    for a reply of that process (a target's import or call, a template's answer).

    Its own time is the wall-clock time less the time its main thread spent ready to run
    but waiting for a CPU (Linux scheduler statistics): on a machine with more runnable
    processes than cores each runs a fraction of the time, and a correct call that takes
    one second alone takes five at a load of ten on two cores; that wait is the machine's,
    not the target's. The wait of the gate's own thread counts the same way (a reply the
    gate was too starved to read). A process that hangs still runs out of its time: asleep
    or blocked its own time is the wall-clock time, and spinning it gets its share of a
    CPU. Where the statistics cannot be read, own time is wall-clock time."""

    def __init__(self, seconds: float, pid: int | None):
        self.seconds, self.pid = seconds, pid
        self.start = time.monotonic()
        self._waited_before = self._waited()
        self._end = self.start + seconds

    def _waited(self) -> tuple[float, float]:
        process = os_limits.waited_for_cpu(self.pid) if self.pid is not None and self.pid > 0 else 0.0
        return process, os_limits.waited_for_cpu(None)

    def remaining(self) -> float:
        """Seconds of wall-clock time before the limit, if neither waits for a CPU from now on;
        the statistics are read only once the time would otherwise be up."""
        left = self._end - time.monotonic()
        if left <= 0:
            waited = max(after - before for before, after in zip(self._waited_before, self._waited(), strict=True))
            self._end = self.start + self.seconds + max(0.0, waited)
            left = self._end - time.monotonic()
        return left


@dataclass(frozen=True)
class Limits:
    """What one target may take: ``memory`` bytes beyond the imported libraries (of address
    space in each of its processes, and resident in all of them together), ``processes``
    tasks (processes and threads) beyond its first, ``timeout`` seconds of its own time
    (:class:`OwnTime`) per import and per call (CPU time is capped at the timeout times the
    number of calls), and files of at most ``file_size`` bytes."""

    memory: int
    processes: int
    timeout: float
    file_size: int = options.DEFAULT_MAX_FILE_SIZE

    @classmethod
    def of_run(cls, run, timeout: float) -> Limits:
        """The limits a run's options (:class:`~posenc_spec.gate.options.RunOptions`) give a
        target declared with ``timeout``."""
        return cls(run.max_memory, run.max_processes, timeout, run.max_file_size)

    def init(self, calls: int | None, search_path=()) -> dict:
        """The start-up record a child applies to itself (see ``child.serve.setup``): for a
        process that makes ``calls`` calls after its import, or for a slot template (None),
        which runs no target code and takes no limits. ``search_path`` goes first on its
        import path."""
        init = {"environ": dict(os.environ), "cwd": os.getcwd(),
                "sys_path": [*search_path, os.getcwd(), *sys.path], "private": run_folder(),
                "confine": confinement_wanted(), "filter_signals": signals_filtered(), "writable": writable_folders(),
                "run_started": run_started()}
        if calls is not None:
            cpu = int(self.timeout * (calls + 2)) + 1
            init["limits"] = {"memory": self.memory, "cpu_seconds": cpu, "processes": self.processes,
                              "file_size": self.file_size}
        return init


class Template:
    """A handle on one template process (see :mod:`posenc_spec.gate.child.template`).

    A target's code can reach the templates above it (as the same user it may stop or kill
    them): a template that is gone or stopped while the gate waits for it is killed and
    reported as a :class:`SandboxError` at once, and the gate replaces it
    (:meth:`posenc_spec.gate.runner.Slot.ensure`)."""

    def __init__(self, sock: socket.socket, pid: int | None, popen=None, preload: tuple[str, ...] = ()):
        self.sock, self.pid, self.popen, self.preload = sock, pid, popen, preload
        self.reader = Reader(sock, on_wait=self._watch)
        self._lock = threading.Lock()  # lanes share the root template: one request at a time
        self._shared_memory: dict[int, int] = {}  # a forked child's private /dev/shm, by its process id

    @classmethod
    def start(cls, preload: tuple[str, ...] = ()) -> Template:
        """Start a root template that imports ``preload`` (first, so that a module that
        cannot be imported is said at once), then NumPy and torch; it announces itself when
        its imports are done."""
        parent_end, child_end = socket.socketpair()
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "POSENC_SPEC_TEMPLATE_FD": str(child_end.fileno()),
               "POSENC_SPEC_PRELOAD": ",".join(preload)}
        stderr = None if os.environ.get("POSENC_SPEC_DEBUG") else subprocess.DEVNULL
        popen = subprocess.Popen(command(package_root), pass_fds=[child_end.fileno()], env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                 start_new_session=True, close_fds=True)
        child_end.close()
        return cls(parent_end, None, popen, preload)

    def _process_id(self) -> int | None:
        return self.popen.pid if self.popen is not None else self.pid

    def alive(self) -> bool:
        """Whether the process is there and not stopped (a stopped one is killed: it would
        never answer)."""
        if self.popen is not None and self.popen.poll() is not None:
            return False
        pid = self._process_id()
        if pid is None or pid <= 0:
            return True  # starting: ready() says whether it started
        state = os_limits.process_state(pid)
        if state in ("T", "t"):
            os_limits.kill_group(pid)
        return state not in (None, "Z", "X", "T", "t")

    def _watch(self) -> None:
        """While the gate waits for this template: a template that died or was stopped ends the wait."""
        if not self.alive():
            raise ChannelError(f"the process {self._process_id()} died or was stopped")

    def ready(self) -> None:
        """Wait until the template has started; :class:`PreloadError` when it could not import
        a module it was asked to preload."""
        if self.pid is None:
            reply = self._reply(OwnTime(TEMPLATE_START_SECONDS, self._process_id()), "starting")
            if reply.get("ok") is False:
                self.close()
                message = reply.get("message") or "a --preload module could not be imported"
                raise PreloadError(one_line(str(message), 300))
            self.pid = reply.get("pid") if type(reply.get("pid")) is int else -1

    def _reply(self, deadline, what: str, with_fds: bool = False) -> dict:
        try:
            header, _, fds = self.reader.read(deadline, 0, with_fds=with_fds)
        except (ChannelError, OSError) as error:
            raise SandboxError(f"the gate's template process failed while {what}: {error}") from None
        if with_fds:
            header["fds"] = fds
        return header

    def request(self, header: dict, fds=(), deadline: OwnTime | None = None) -> dict:
        """The template's answer to ``header``, within ``deadline`` (by default
        ``TEMPLATE_REPLY_SECONDS`` of its own time from when the request is sent); a fork's
        answer holds the descriptors that came with it under ``fds``."""
        with self._lock:
            self.ready()
            try:
                send(self.sock, header, fds=fds)
            except OSError as error:
                raise SandboxError(f"the gate's template process is gone ({error})") from None
            return self._reply(deadline or OwnTime(TEMPLATE_REPLY_SECONDS, self._process_id()), header.get("op", "?"),
                               with_fds=bool(fds))

    def _fork(self, header: dict) -> tuple[socket.socket, int]:
        parent_end, child_end = socket.socketpair()
        try:
            reply = self.request(header, fds=[child_end.fileno()])
        finally:
            child_end.close()
        pid = reply.get("pid")
        received = reply.get("fds", [])
        if type(pid) is not int or pid <= 1:
            parent_end.close()
            for fd in received:
                os.close(fd)
            raise SandboxError(f"a template answered {header['op']} without a process id")
        if header["op"] == "spawn" and len(received) == 1:
            self._shared_memory[pid] = received.pop()
        for fd in received:  # a module template's own /dev/shm: its children hand over theirs
            os.close(fd)
        return parent_end, pid

    def shared_memory(self, pid: int) -> int | None:
        """A descriptor of the private ``/dev/shm`` of ``pid`` (a sealed child this template
        forked), until it is finished; None where it has none."""
        return self._shared_memory.get(pid)

    def _forget_shared_memory(self, pid: int) -> None:
        """Let go of ``pid``'s ``/dev/shm``: with its last process and this descriptor gone, the
        kernel frees it with every file in it."""
        fd = self._shared_memory.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def fork_template(self, limits: Limits, calls: int | None, search_path=()) -> Template:
        """A subreaper template below this one: a slot template (``calls`` None), or a
        module template that will import a module and fork children (``calls`` 0)."""
        sock, pid = self._fork({"op": "template", "init": limits.init(calls, search_path), "subreaper": True})
        return Template(sock, pid)

    def spawn(self, limits: Limits, calls: int, search_path=()) -> tuple[socket.socket, int]:
        """A sealed child serving the returned socket."""
        return self._fork({"op": "spawn", "init": limits.init(calls, search_path)})

    def finish(self, pid: int) -> int | None:
        """Kill ``pid`` (a process this template forked) with its group and every other
        descendant; its wait status, when known."""
        try:
            reply = self.request({"op": "finish", "pid": pid})
        finally:
            self._forget_shared_memory(pid)
        status = reply.get("status")
        return status if type(status) is int else None

    def close(self) -> None:
        """Closing the socket makes the template kill everything below it and exit."""
        try:
            self.sock.close()
        except OSError:
            pass
        for pid in list(self._shared_memory):
            self._forget_shared_memory(pid)
        if self.popen is not None:
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


_roots: dict[tuple[str, ...], Template] = {}
_root_lock = threading.Lock()


@contextlib.contextmanager
def root_template(preload: tuple[str, ...] = ()):
    """The process's root template for ``preload``, started on first use (it imports
    ``preload``, then torch, in the background) and kept for later runs: it runs no target code, so
    runs share it safely. ``preload`` is the user's own choice of trusted libraries (every
    child forks from what they left behind); one that cannot be imported is a
    :class:`PreloadError`, raised here, before any target runs. Every root stops, and takes
    everything below it along, when this process exits. Every module the gate's process will
    need is imported here, before any target runs (:mod:`.preimport`)."""
    preload = tuple(preload)
    run_folder()
    with a_run():
        yield _started_root(preload)


def start_root(preload: tuple[str, ...] = ()) -> Template:
    """The process's root template for ``preload``, started now if none is running, not
    waited for: a command that knows its ``preload`` first starts it before reading its
    targets, so that its imports (torch's above all, the longest part of a first run) go on
    meanwhile; :func:`root_template` finds it."""
    with _root_lock:
        root = _roots.get(preload)
        if root is None or not root.alive():
            root = _roots[preload] = Template.start(preload)
            atexit.register(root.close)
    return root


def _started_root(preload: tuple[str, ...]) -> Template:
    root = start_root(preload)
    import_gate_modules()  # while the root template imports torch
    if preload:
        try:
            root.ready()
        except (PreloadError, SandboxError) as error:  # SandboxError: the import killed the process
            with _root_lock:
                _roots.pop(preload, None)
            if isinstance(error, SandboxError):
                raise PreloadError(f"--preload {','.join(preload)}: {error}") from None
            raise
    return root


def revive_root(dead: Template) -> Template:
    """A running root template in place of ``dead`` (one its targets' code killed or
    stopped): started anew, or the one another lane started already."""
    with _root_lock:
        root = _roots.get(dead.preload)
        if root is None or root is dead or not root.alive():
            dead.close()
            root = _roots[dead.preload] = Template.start(dead.preload)
            atexit.register(root.close)
    root.ready()
    return root


def guard_descendants() -> None:
    """Make this process (the command line's gate) a subreaper that kills every descendant
    left at exit: what escapes the templates (a daemon started after killing its template)
    is re-parented here instead of to init, and killed after the root templates closed."""
    if os_limits.become_subreaper():
        atexit.register(os_limits.sweep)  # registered first: runs after the templates' close


def check_preload(preload: tuple[str, ...]) -> None:
    """Start the root template for ``preload`` now (nothing to do without one):
    :class:`PreloadError` before any target runs when a module cannot be imported."""
    if preload:
        with root_template(preload):
            pass


def root_template_pids() -> frozenset[int]:
    """The process ids of all of this process's running root templates, one per ``preload``."""
    with _root_lock:
        return frozenset(root.popen.pid for root in _roots.values() if root.alive())


def target_watch(slot_pid: int, parent_pid: int, limits: Limits, shared_memory: int | None = None):
    """A ``Reader.on_wait`` hook for a target's child forked by ``parent_pid`` below the slot
    template ``slot_pid``: raise :class:`TargetLimitExceeded` when the target's processes
    together (everything below the slot template but a module template) run more than
    ``limits.processes`` tasks beyond the child, or hold more than ``limits.memory`` bytes
    beyond what the process they were forked from held: anonymous and shared memory
    resident, memory-only files (``memfd``, ``/dev/shm``) kept open, and every file in its
    ``/dev/shm``, closed or not: the private one ``shared_memory`` (a descriptor of it) is,
    or, for a target with a user of its own, the files of that user in the real one. The
    per-process limits cannot see this: each forked process may take the whole limit again.
    Linux only; elsewhere a no-op. Read about every ``Reader.tick`` while the gate waits."""
    helpers = {parent_pid} if parent_pid != slot_pid else set()
    baseline = os_limits.usage(parent_pid)[1]
    private_device = os.fstat(shared_memory).st_dev if shared_memory is not None else None
    # Without a private /dev/shm, only a target with a user of its own (a gate run as root) has files to tell apart.
    users_apart = shared_memory is None and os_limits.IS_LINUX and os.geteuid() == 0

    def check():
        threads, held, files, own_users = 0, 0, {}, set()
        for pid in os_limits.descendants(slot_pid):
            if pid in helpers:
                continue
            count, resident = os_limits.usage(pid)
            threads += count
            held += max(0, resident - baseline)
            files.update(os_limits.memory_files(pid))
            if users_apart:
                own_users.add(os_limits.own_user(pid))
        if threads > limits.processes + 1:
            raise TargetLimitExceeded(f"ran more than {limits.processes} processes and threads beyond its first "
                                      "(the --max-processes limit)")
        if shared_memory is not None:
            files = {key: size for key, size in files.items() if key[0] != private_device}  # counted whole below
            held += shared_memory_bytes(shared_memory)
        else:
            files.update(os_limits.files_of_users(SHARED_MEMORY, own_users - {None}))
        if held + sum(files.values()) > limits.memory:
            raise TargetLimitExceeded(f"held more than {limits.memory / 2**30:.3g} GiB in its processes together "
                                      f"and its files under {SHARED_MEMORY} (the --max-memory limit)")

    return check


def describe_status(status: int | None) -> str:
    """A child's wait status in words."""
    import signal

    if status is None:
        return "the process stopped answering"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if name == "SIGXCPU":
            return "the process exceeded its CPU-time limit (SIGXCPU)"
        if name == "SIGXFSZ":
            return "the process exceeded its file-size limit (SIGXFSZ)"
        return f"the process died from {name}"
    if os.WIFEXITED(status):
        return f"the process exited with status {os.WEXITSTATUS(status)} (os._exit or a crash)"
    return "the process stopped answering"
