"""Targets that are Python objects, not import paths: a function defined in a notebook cell
or a script's ``__main__``, a closure, a lambda, a bound method, a ``functools.partial``, an
instance with ``__call__``.

Such an object cannot be imported by name in a process the gate starts with ``python -c``,
so for it the template of the run is forked from the calling process itself
(:class:`CallerTemplate`): the object is registered here under a private name
(:func:`registered`, the target ``posenc_spec.gate.callables:target_N``), the fork serves
the template protocol of :mod:`posenc_spec.gate.child.template`, and each sealed child below
it finds the object by that name, as it finds any module's attribute. From there on the
target is run, limited and judged as an import-path target is.

What the target sees, forked from the caller: the caller's memory as it was at the fork
(its globals, the notebook's variables, the objects its closure holds, torch's settings and
modes as the caller left them: ``global-state`` compares each call with that state), never
changed by what the target does, which stays in the child (the caller's shared memory too:
each sealed child replaces every writable shared mapping it inherited, a tensor moved to
shared memory, a shared ``mmap``, the semaphore of a ``multiprocessing.Lock``, by a private
copy before the target runs, :func:`~posenc_spec.gate.child.confinement.detach_shared_memory`;
and, where the kernel confines it, it cannot signal the caller); none of the caller's threads (a
fork copies only the thread that forks: a lock another thread held, say inside a library,
stays held in the child); none of the caller's open files, sockets or standard streams (its
standard streams are the null device, as in every child). The caller's own modules are
imported already, so the ``import`` check has nothing to watch. What every template imports
(NumPy, torch, the child's modules) is imported into the calling process at its first
callable target, so that each fork has it; ``preload`` modules are imported in each fork,
not in the caller. The limits (``max_memory``, ``max_processes``, ``max_file_size``,
``timeout``) count from the caller's size: each process may add ``max_memory`` to what it
was forked with.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import socket
import sys
import threading
import time
import warnings

from posenc_spec.text import one_line

from .preimport import import_gate_modules
from .sandbox import PreloadError, SandboxError, Template, run_folder

_numbers = itertools.count(1)
_lock = threading.Lock()
REAP_SECONDS = 10.0  # a template whose socket closed kills what is below it and exits at once


@contextlib.contextmanager
def registered(function):
    """The target under which ``function`` is found in a process forked from this one
    while the ``with`` block lasts: ``posenc_spec.gate.callables:target_N``."""
    with _lock:
        name = f"target_{next(_numbers)}"
        setattr(sys.modules[__name__], name, function)
    try:
        yield f"{__name__}:{name}"
    finally:
        with _lock:
            delattr(sys.modules[__name__], name)


def label(function) -> str:
    """How reports name a callable target, as a target is written: ``__main__:table``,
    ``__main__:Encoder.table`` (a bound method), ``__main__:make.<locals>.table`` (a closure),
    ``__main__:<lambda>``, ``functools.partial(__main__:table)``, ``__main__:Encoder()`` (an
    instance that is called)."""
    try:
        if isinstance(function, functools.partial):
            return f"functools.partial({label(function.func)})"
        inner = getattr(function, "__func__", function)  # a bound method's function
        module, qualname = getattr(inner, "__module__", None), getattr(inner, "__qualname__", None)
        if not (isinstance(module, str) and isinstance(qualname, str)):
            kind = type(function)
            module, qualname = kind.__module__, f"{kind.__qualname__}()"
        return one_line(f"{module}:{qualname}", 200)
    except Exception:  # an object whose attributes raise: its type still names it
        return one_line(f"{type(function).__module__}:{type(function).__qualname__}()", 200)


def past_started_jax(function, framework: str | None, keras_backend: str | None) -> str | None:
    """The import path (``module:qualname``) under which ``function``, a JAX target (declared
    so, a Keras target on JAX, or a function whose module imports JAX), runs in a fresh
    interpreter when this process has started JAX's backend: a process forked from this one
    holds JAX's state without XLA's threads, and its first JAX computation never returns.
    None when JAX's backend is not started here or the target is not JAX's; a
    :class:`~posenc_spec.gate.errors.UsageError` saying what to do when it cannot be
    imported by name (a notebook's function, a closure, a lambda, a bound method)."""
    from .child import frameworks
    from .errors import UsageError
    from .values import plain

    if "jax" not in sys.modules or frameworks.started_threads() is None:
        return None
    # what is not text is the declaration's to refuse, never asked here
    framework, keras_backend = (value if type(value) is str else None
                                for value in map(plain, (framework, keras_backend)))
    name = framework or ("keras" if keras_backend else None) or frameworks.infer(function)
    if name == "keras" and keras_backend is None and "keras" in sys.modules:
        keras_backend = sys.modules["keras"].backend.backend()
    if name != "jax" and (name != "keras" or keras_backend != "jax"):
        return None
    path = import_path(function)
    if path is None:
        raise UsageError(f"{label(function)} computes with JAX, and this process has started JAX's backend: a "
                         "child forked from it cannot compute with JAX (XLA's threads are not forked); define it "
                         "in a module and pass it (or 'module:name'), call check() before this process computes "
                         "with JAX, or run posenc-spec check")
    return path


def import_path(function) -> str | None:
    """``module:qualname`` when importing that module and following that name gives
    ``function`` itself (a module's function or class), else None."""
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or module == "__main__" or "<" in qualname:
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module}:{qualname}" if found is function else None


class CallerTemplate(Template):
    """A root template forked from the calling process (see the module docstring). It
    serves the same requests as a root template started with ``python -c``; closing it
    kills everything below it, and the fork is reaped here."""

    forked: int = 0

    @classmethod
    def fork(cls, preload: tuple[str, ...] = ()) -> CallerTemplate:
        """Fork this process into a template that imports ``preload`` (as a root template
        does), announces itself and serves; :meth:`ready` waits for it."""
        parent_end, child_end = socket.socketpair()
        with warnings.catch_warnings():
            # Python 3.12+ warns of forking a process with threads: the child's share of that
            # (no thread but the forking one) is what the module docstring states.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            _serve_forked(child_end, parent_end, preload)  # never returns
        child_end.close()
        template = cls(parent_end, None, None, tuple(preload))
        template.forked = pid
        return template

    def _process_id(self) -> int | None:
        return self.forked

    def close(self) -> None:
        super().close()
        deadline = time.monotonic() + REAP_SECONDS
        while True:
            try:
                pid, _ = os.waitpid(self.forked, os.WNOHANG)
            except ChildProcessError:  # reaped already (a SIGCHLD handler of the caller's)
                return
            if pid:
                return
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.forked, signal.SIGKILL)
            time.sleep(0.002)


@contextlib.contextmanager
def caller_template(preload: tuple[str, ...] = ()):
    """A :class:`CallerTemplate` for one run, started and ready (a ``preload`` module that
    cannot be imported is a :class:`~posenc_spec.gate.sandbox.PreloadError`), closed after it."""
    _import_what_templates_hold()
    import_gate_modules()  # no module is read after the target ran (see .preimport)
    run_folder()  # made here, so that its removal at exit follows the fork's
    template = CallerTemplate.fork(tuple(preload))
    try:
        try:
            template.ready()
        except SandboxError as error:  # a preload module's import killed the fork
            if not preload:
                raise
            raise PreloadError(f"--preload {','.join(preload)}: {error}") from None
        yield template
    finally:
        template.close()


def _import_what_templates_hold() -> None:
    """NumPy, torch and the child's modules, imported into the calling process once: every
    template imports them, and a fork that has them already is ready in milliseconds, where
    a cold ``import torch`` in each fork takes a second."""
    import numpy  # noqa: F401

    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    from .child import convert, serve, state  # noqa: F401


def _serve_forked(sock: socket.socket, other: socket.socket, preload: tuple[str, ...]) -> None:
    """The forked side: seal the process as a root template is sealed, then serve."""
    status = 0
    try:
        from .child import limits, template

        limits.not_dumpable()
        os.setsid()
        limits.die_with_parent()
        other.close()
        limits.close_other_fds({sock.fileno()})
        limits.silence_output()
        # The caller's stream objects write elsewhere (a notebook's go through its kernel's
        # threads, which are not here): new ones over the null device.
        sys.stdin, sys.stdout, sys.stderr = (open(fd, mode, closefd=False)
                                             for fd, mode in ((0, "r"), (1, "w"), (2, "w")))
        template.announce_and_loop(sock, preload)
    except BaseException:
        status = 70
    finally:
        os._exit(status)
