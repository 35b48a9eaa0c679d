"""The template: a clean process that forks sealed children for the gate.

The gate starts one template with ``python -c`` (see :func:`command`), or, for a target
that is a Python object, forks one from the calling process
(:mod:`posenc_spec.gate.callables`, through :func:`announce_and_loop`); it imports the
modules the user preloads, NumPy, torch and this package, and runs nothing else, so forking
it costs milliseconds and every child starts from the same clean state. Requests arrive on its control socket, with the
child's own socket passed along (SCM_RIGHTS)::

    {"op": "spawn", "init": {...}}          fork a sealed child serving the passed socket
    {"op": "template", "init": {...}, "subreaper": true}
                                            fork another template on the passed socket
    {"op": "import", "target": "pkg.mod:fn", "framework": {...}}
                                            import the target's module here (a per-module
                                            template: its children share that import only),
                                            after its declared framework (``frameworks.prepare``);
                                            the reply's ``learned`` names the installed modules
                                            it imported (:mod:`.learned`);
                                            the reply's ``threads`` says what started threads
                                            that a fork would lose (JAX's backend): then no
                                            child is forked from it
    {"op": "learned", "modules": [...], "keep_out": [...]}
                                            import installed modules an earlier target's
                                            process imported (:mod:`.learned`; a slot template)
    {"op": "finish", "pid": P}             kill child P's process group, reap it, and kill
                                            every other descendant
each answered with ``{"ok": ..., ...}``. A sealed child leads its own session and process
group, dies with its template, and inherits no descriptor but its socket. Every template
is a subreaper: it receives every orphaned descendant (Linux), so nothing a target starts
outlives the target's turn (a slot template's) or the run (the root's, for what a killed
slot template left). When the control socket closes, the template kills everything below
it and exits. While it waits for a request, a template answers the calls its confined
children aim at other processes (:mod:`.supervisor`): their listeners come to it on a
socket pair made for each fork.
"""

from __future__ import annotations

import gc
import os
import signal
import sys


def command(package_root: str) -> list[str]:
    """The command line that starts a template importing this package from ``package_root``."""
    code = (f"import sys; sys.path.insert(0, {package_root!r}); "
            "from posenc_spec.gate.child.template import main; main()")
    return [sys.executable, "-c", code]


# What was in this template's private /dev/shm (a module template's) when it forked each process.
_shared_before: dict[int, frozenset[str] | None] = {}
# How long a template waits for a child it forked to hand over its private /dev/shm: the
# child does that first thing, before any target code (see serve.setup).
REPORT_SECONDS = 20.0


def _fork(fd: int, judge, body, *arguments) -> tuple[int, int | None]:
    """Fork; the child runs ``body(fd, *arguments)`` in a session of its own and exits. The
    child's process id, and a descriptor of its private ``/dev/shm`` when it made one
    (:func:`.confinement.hand_over_shared_memory`). A confined child sends its filter's
    listener to ``judge``, this template's :class:`.supervisor.Supervisor`."""
    import socket

    from .confinement import shared_memory_names

    channel = judge.channel()
    receiving, sending = socket.socketpair()
    shared_before = shared_memory_names()
    pid = os.fork()
    if pid:
        os.close(fd)
        sending.close()
        judge.expect(channel, pid, template=body is _serve_template)
        _shared_before[pid] = shared_before
        return pid, _received_folder(receiving)
    status = 0
    try:
        from . import confinement, limits, supervisor

        receiving.close()
        confinement.REPORT_FD = sending.detach()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the root ignores it; its children need their statuses
        os.setsid()
        limits.die_with_parent()
        limits.close_other_fds({fd, confinement.REPORT_FD, *((supervisor.take_channel(channel),) if channel else ())})
        body(fd, *arguments)
    except BaseException:
        status = 70
        if os.environ.get("POSENC_SPEC_DEBUG"):
            import traceback

            with open(os.environ["POSENC_SPEC_DEBUG"], "a") as log:
                traceback.print_exc(file=log)
    finally:
        os._exit(status)


def _received_folder(receiving) -> int | None:
    """The descriptor a forked child sends on ``receiving`` (None: it closed it without one)."""
    import socket

    with receiving:
        receiving.settimeout(REPORT_SECONDS)
        try:
            _, fds, _, _ = socket.recv_fds(receiving, 1, 1)
        except OSError:
            return None
    for extra in fds[1:]:
        os.close(extra)
    return fds[0] if fds else None


def _serve_child(fd: int, init: dict) -> None:
    import socket

    from .serve import serve

    serve(socket.socket(fileno=fd), init)


def _serve_template(fd: int, init: dict, subreaper: bool) -> None:
    import socket

    from . import supervisor
    from .serve import setup

    supervisor.FORKS_TARGETS = True
    setup(init)
    loop(socket.socket(fileno=fd), subreaper)


def _spawn(request: dict, fd: int, judge) -> tuple[int, int | None]:
    """Fork what a ``spawn`` or ``template`` request asks for, serving ``fd``, its listener
    judged by ``judge`` (see :func:`_fork`)."""
    if request["op"] == "spawn":
        return _fork(fd, judge, _serve_child, request["init"])
    return _fork(fd, judge, _serve_template, request["init"], request.get("subreaper", False))


def loop(sock, subreaper: bool) -> None:
    from . import confinement, limits
    from .protocol import ChannelError, Reader, send
    from .supervisor import Supervisor

    if subreaper:
        limits.become_subreaper()
    reader = Reader(sock)
    supervisor = Supervisor()
    statuses: dict[int, int] = {}
    forked: set[int] = set()  # whose private folders this template removes
    while True:
        try:
            supervisor.wait_for(sock)
            request, _, fds = reader.read(None, 0, with_fds=True)
        except (ChannelError, OSError):
            break
        op = request.get("op")
        reply = {"ok": True}
        shared_memory = None
        if op in ("spawn", "template") and len(fds) == 1:
            reply["pid"], shared_memory = _spawn(request, fds[0], supervisor)
            forked.add(reply["pid"])
        elif op in ("import", "learned"):
            reply = _import_here(request)
        elif op == "finish":
            pid = request["pid"]
            limits.kill_group(pid)
            try:
                statuses[pid] = os.waitpid(pid, 0)[1]
            except ChildProcessError:
                pass
            limits.sweep()
            statuses.update(limits.reap())
            reply["status"] = statuses.pop(pid, None)
            confinement.remove_left_behind(pid, _shared_before.pop(pid, None))
            supervisor.forget(pid)
            forked.discard(pid)
        else:
            for fd in fds:
                os.close(fd)
            reply = {"ok": False, "message": f"unknown request {op!r}"}
        try:
            send(sock, reply, fds=[shared_memory] if shared_memory is not None else ())
        except OSError:
            break
        finally:
            if shared_memory is not None:
                os.close(shared_memory)
    limits.sweep()
    for pid in forked:
        confinement.remove_left_behind(pid, _shared_before.pop(pid, None))
    os._exit(0)


def _import_here(request: dict) -> dict:
    """The answer to an ``import`` request (a module template's target module) or a
    ``learned`` one (a slot template's learned modules); what they import stays for the
    children forked from here, frozen for the garbage collector."""
    if request["op"] == "learned":
        from .learned import import_learned

        reply = import_learned(request.get("modules", []), request.get("keep_out", []))
    else:
        from .learned import NewModules
        from .serve import import_target

        imported = NewModules()
        function, message, changes, effects, failures = import_target(request["target"], module_only=True,
                                                                      framework=request.get("framework"))
        # The libraries the module imported, for the slot template to import before the next
        # module's template is forked (this process ran target code: the gate checks each name).
        reply = {"ok": function is not None, "message": message, "import_changes": changes,
                 "import_effects": effects, "import_failures": failures, "threads": _started_threads(),
                 "learned": imported.take()}
        from . import state

        state.warm_up()  # the copies the state's next reading compares with, made once here, not in every child
    gc.freeze()
    return reply


def _started_threads() -> str | None:
    """What started threads a forked child would lack (a module that computes with JAX when
    imported starts its backend), or None: its children must import the module themselves."""
    if "jax" not in sys.modules:
        return None
    from .frameworks import started_threads

    return started_threads()


def _preload(names) -> str | None:
    """Import the modules the user asked to preload; why one could not be, else None."""
    import importlib

    from posenc_spec.text import describe_exception

    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as error:  # SystemExit at import time too
            return f"--preload {name}: {describe_exception(error)}"
    return None


def main() -> None:
    import socket

    fd = int(os.environ.pop("POSENC_SPEC_TEMPLATE_FD"))
    sock = socket.socket(fileno=fd)
    announce_and_loop(sock, [name for name in os.environ.pop("POSENC_SPEC_PRELOAD", "").split(",") if name])


def announce_and_loop(sock, preload) -> None:
    """A root template's life once its process is sealed (here, or forked from a caller by
    :mod:`posenc_spec.gate.callables`): import the ``preload`` modules, NumPy and torch,
    announce itself on ``sock`` and serve until the socket closes; it never returns."""
    from .confinement import private_shared_memory_possible
    from .limits import not_dumpable
    from .protocol import send

    not_dumpable()  # no process of the same user traces it or reads it through /proc
    # Learned while this process is small (a fork of it costs little yet), for every process forked from it.
    private_shared_memory_possible()
    # The user's modules first: one that cannot be imported is said at once, not after torch.
    failure = _preload(preload)
    # Every child forked from here would hang at its first JAX computation: refused for the
    # modules the user preloads. A caller's own process (the Python API's template is forked
    # from it) may have used JAX for its own work: its NumPy and torch targets run as ever.
    threads = _started_threads() if failure is None and preload else None
    if threads is not None:
        failure = (f"--preload {','.join(preload)}: {threads} while imported, and a forked child loses its "
                   "threads; preload jax itself, or the modules that do not compute when imported")
    if failure is not None:
        send(sock, {"ok": False, "message": failure})
        os._exit(0)
    try:
        import numpy  # noqa: F401  -- what every child needs, imported once here
        import torch  # noqa: F401
    except ImportError:
        pass
    from . import convert, serve, state  # noqa: F401

    state.warm_up()
    gc.freeze()
    send(sock, {"ok": True, "pid": os.getpid()})
    # The root template needs no child's exit status: the kernel collects each slot template
    # as it exits, where waiting for it would leave a zombie until the next request.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # A subreaper too: what a target leaves running after killing its slot template comes
    # here, not to init, and is killed when this template's socket closes.
    loop(sock, subreaper=True)
