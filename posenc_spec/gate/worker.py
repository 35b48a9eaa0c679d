"""Run the target in a separate process, so that nothing it does can take the gate down.

The parent (:class:`Worker`) asks a child process to import the target and to call it; the
child (:func:`serve`) answers each call with a header and, when the call returned a table
of the right shape, the table's bytes in the dtype it was produced in (bfloat16 travels
as the float32 it converts to exactly, but is reported as bfloat16: the tolerance follows
the dtype). Exceptions, ``sys.exit``, ``os._exit``, a crash, a hang past the per-call
timeout, and results that are not a table of floating-point numbers all come back as a
one-line reason; the parent never sees a traceback.

The child is forked from a ``forkserver`` that has already imported NumPy and torch (a
clean process that never ran a torch operation, so forking it is safe and takes a few
milliseconds). A run keeps one child for all its targets and starts another only when one
dies or hangs. Around every call the child compares global state with the state it
started with, reports what changed and restores it, so that one target cannot change what
the next one sees. The child sends its stdout and stderr to the null device: the gate's
output stays the gate's.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
import threading
import time
import types

import numpy as np

_FLOATS = ("float16", "float32", "float64")
_FORKSERVER_PRELOAD = ["numpy", "torch", "posenc_spec.gate.worker"]


def one_line(text, limit: int = 300) -> str:
    """``text`` on one line, shortened to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_exception(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r})"
    message = one_line(error)
    return f"raised {type(error).__name__}" + (f": {message}" if message else "")


# -- global state ------------------------------------------------------------------------------
# What a call must leave as it found it. Each entry: (name, getter, setter); the getter
# returns something comparable with ==. A table of sines and cosines draws no random
# numbers: a call that draws from (or reseeds) a global generator changes the caller's
# random stream, so the generators' states are part of the state too.

_RANDOM = "random number generator"


def _numpy_random_state():
    name, keys, position, has_gauss, cached = np.random.get_state()
    return name, keys.tobytes(), position, has_gauss, cached


def _set_numpy_random_state(value):
    name, keys, position, has_gauss, cached = value
    np.random.set_state((name, np.frombuffer(keys, dtype=np.uint32).copy(), position, has_gauss, cached))


def _state_entries():
    import random

    entries = [
        ("numpy error state", np.geterr, lambda value: np.seterr(**value)),
        ("numpy print options", np.get_printoptions, lambda value: np.set_printoptions(**value)),
        (f"numpy global {_RANDOM}", _numpy_random_state, _set_numpy_random_state),
        (f"Python {_RANDOM}", random.getstate, random.setstate),
        ("working directory", os.getcwd, os.chdir),
    ]
    torch = sys.modules.get("torch")
    if torch is not None:
        entries += [
            ("torch default dtype", torch.get_default_dtype, torch.set_default_dtype),
            ("torch grad mode", torch.is_grad_enabled, torch.set_grad_enabled),
            ("torch deterministic algorithms", torch.are_deterministic_algorithms_enabled,
             torch.use_deterministic_algorithms),
            ("torch anomaly detection", torch.is_anomaly_enabled, torch.set_anomaly_enabled),
            (f"torch {_RANDOM}", lambda: torch.random.get_rng_state().numpy().tobytes(),
             lambda value: torch.random.set_rng_state(torch.frombuffer(bytearray(value), dtype=torch.uint8))),
        ]
        if hasattr(torch, "get_default_device"):
            entries.append(("torch default device", lambda: str(torch.get_default_device()), torch.set_default_device))
    return entries


def snapshot() -> dict:
    return {name: getter() for name, getter, _ in _state_entries()}


def restore(baseline: dict) -> list[str]:
    """Put back every entry that differs from ``baseline``; return what had changed."""
    changes = []
    for name, getter, setter in _state_entries():
        if name not in baseline:
            continue
        now = getter()
        if now != baseline[name]:
            if name.endswith(_RANDOM):
                changes.append(f"the {name} (drew from it or reseeded it)")
            else:
                changes.append(f"{name} {_short(baseline[name])} -> {_short(now)}")
            try:
                setter(baseline[name])
            except Exception as error:  # a state the target broke beyond repair
                changes.append(f"(could not restore {name}: {describe_exception(error)})")
    return changes


def _short(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={v}" for k, v in value.items()) + "}"
    return str(value).removeprefix("torch.")


# -- results -----------------------------------------------------------------------------------


class BadResult(Exception):
    """The call returned, but not a table the gate can check."""


def shape_problem(shape: tuple, expected: tuple) -> str | None:
    """None when ``shape`` is ``expected``, else a reason with a hint for the common slips."""
    if shape == expected:
        return None
    length, width = expected
    got = "x".join(map(str, shape)) if shape else "a scalar"
    want = f"{length}x{width}"
    squeezed = tuple(n for n in shape if n != 1)
    if len(shape) > 2 and squeezed == tuple(n for n in expected if n != 1):
        axes = [i for i, n in enumerate(shape) if n == 1]
        if axes and axes[0] == 0:
            return f"returned shape {got}, expected {want}: an extra leading batch axis (return table[0])"
        return f"returned shape {got}, expected {want}: an extra batch axis of size 1 at axis {axes[0]} (squeeze it)"
    if shape == (width, length):
        return f"returned shape {got}, expected {want}: transposed (rows must be positions, columns features)"
    if len(shape) == 2 and shape[0] == length:
        return f"returned shape {got}, expected {want}: {shape[1]} columns for width {width}"
    if len(shape) == 2 and shape[1] == width:
        return f"returned shape {got}, expected {want}: {shape[0]} rows for {length} positions"
    return f"returned shape {got}, expected {want}"


def as_table(result, expected_shape: tuple) -> tuple[np.ndarray, str, str]:
    """``(array, dtype name, description)`` of a call's result, or :class:`BadResult`.

    The array keeps the dtype the target produced (bfloat16 becomes float32, exactly).
    """
    if result is None:
        raise BadResult("returned None, not a table")
    if isinstance(result, (str, bytes)):
        raise BadResult(f"returned a {type(result).__name__} ({one_line(repr(result), 60)}), not a table")
    torch = sys.modules.get("torch")
    dtype_label = None
    if torch is not None and isinstance(result, torch.Tensor):
        tensor = result.detach()
        description = (f"torch {str(tensor.dtype).removeprefix('torch.')} tensor on {tensor.device}"
                       + (" (requires grad)" if result.requires_grad else ""))
        if tensor.is_complex():
            raise BadResult(f"returned a complex tensor ({tensor.dtype}), not a table of real numbers")
        if not tensor.is_floating_point():
            raise BadResult(f"returned {str(tensor.dtype).removeprefix('torch.')} values: "
                            "a table of sines and cosines needs floating point")
        problem = shape_problem(tuple(tensor.shape), expected_shape)
        if problem:
            raise BadResult(problem)
        if tensor.dtype == torch.bfloat16:
            tensor, dtype_label = tensor.float(), "bfloat16"
        array = tensor.cpu().numpy()
    else:
        kind = type(result).__name__
        try:
            array = np.asarray(result)
        except Exception as error:
            raise BadResult(f"returned a {kind} that NumPy cannot convert ({describe_exception(error)})") from None
        description = f"{kind} of {array.dtype}" if isinstance(result, np.ndarray) else f"{kind} (as {array.dtype})"
        if array.dtype == object or array.dtype.kind in "USV":
            raise BadResult(f"returned a {kind} that is not an array of numbers")
        if array.dtype.kind in "biu":
            raise BadResult(f"returned {array.dtype} values: a table of sines and cosines needs floating point")
        if array.dtype.kind == "c":
            raise BadResult(f"returned complex values ({array.dtype}), not a table of real numbers")
        problem = shape_problem(array.shape, expected_shape)
        if problem:
            raise BadResult(problem)
        if array.dtype.name not in _FLOATS:  # longdouble and friends: checked as float64
            array = array.astype(np.float64)
    return np.ascontiguousarray(array), dtype_label or array.dtype.name, description


# -- the child ---------------------------------------------------------------------------------


def _silence_output():
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _call_arguments(request):
    """``fn``'s arguments: ``(num_positions, width)``, or ``(timesteps tensor, width)``."""
    if request["timesteps"] is None:
        return (request["length"], request["width"])
    import torch

    # A fresh tensor every call: a target may write into its input.
    return (torch.from_numpy(np.array(request["timesteps"])), request["width"])


def _argument_changes(passed, original: np.ndarray) -> list[str]:
    """The caller's timesteps are the caller's: writing into them is a change of state."""
    try:
        now = passed.detach().cpu().numpy()
    except Exception as error:
        return [f"its timesteps argument (now unreadable: {describe_exception(error)})"]
    if now.shape == original.shape and now.dtype == original.dtype and np.array_equal(now, original):
        return []
    if now.shape != original.shape or now.dtype != original.dtype:
        return [f"its timesteps argument in place ({original.dtype}{list(original.shape)} -> "
                f"{now.dtype}{list(now.shape)})"]
    where = int(np.flatnonzero(now != original)[0])
    return [f"its timesteps argument in place (timesteps[{where}] {original[where]} -> {now[where]})"]


def serve(conn, init: dict) -> None:
    """The child's loop: ``("load", target)`` and ``("call", request)`` until EOF."""
    _silence_output()
    os.environ.clear()
    os.environ.update(init["environ"])
    os.chdir(init["cwd"])
    sys.path[:] = init["sys_path"]
    import warnings

    warnings.simplefilter("ignore")
    try:
        import torch  # present in the forkserver already; the state snapshot needs it
    except ImportError:
        pass
    else:
        # One thread: the parent checks one table while the child computes the next, on
        # machines with few cores; spinning OpenMP threads would slow both down.
        torch.set_num_threads(1)
    baseline = snapshot()
    functions = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        kind, payload = message
        if kind == "load":
            try:
                from .loader import load_target

                if payload not in functions:
                    functions[payload] = load_target(payload)
                reply = {"ok": True, "message": f"imported {payload}"}
            except BaseException as error:
                reply = {"ok": False, "message": describe_exception(error)}
            restore(baseline)  # import-time changes are not the call's; do not let them leak
            conn.send(reply)
        elif kind == "call":
            header, data = _run_call(functions[payload["target"]], payload, baseline)
            conn.send(header)
            if data is not None:
                conn.send_bytes(data)


def _run_call(function, request, baseline):
    header = {"id": request["id"], "status": "ok", "message": "", "dtype": None, "state": []}
    data = None
    arguments = _call_arguments(request)
    try:
        result = function(*arguments)
    except Exception as error:
        header.update(status="raised", message=describe_exception(error))
        result = None
    except BaseException as error:  # SystemExit, KeyboardInterrupt, GeneratorExit
        header.update(status="exit", message=describe_exception(error))
        result = None
    header["state"] = restore(baseline)
    if request["timesteps"] is not None:
        header["state"] += _argument_changes(arguments[0], request["timesteps"])
    if header["status"] == "ok":
        try:
            array, dtype, description = as_table(result, request["shape"])
            header.update(dtype=dtype, message=description)
            data = memoryview(array).cast("B") if array.size else b""
        except BadResult as error:
            header.update(status="bad", message=str(error))
        except Exception as error:  # a result whose own methods raise
            header.update(status="bad", message=f"returned a {type(result).__name__} that cannot be read "
                                                f"({describe_exception(error)})")
    return header, data


# -- the parent --------------------------------------------------------------------------------


class WorkerDied(Exception):
    """The child ended (``os._exit``, a signal, ...) or hung and was killed."""

    def __init__(self, message: str, hung: bool = False):
        super().__init__(message)
        self.hung = hung


def _context():
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_FORKSERVER_PRELOAD)
        return context
    return multiprocessing.get_context("spawn")


_booted = False


def _boot():
    try:
        multiprocessing.forkserver.ensure_running()
    except Exception:  # the worker's own start reports it
        pass


def boot_in_background() -> threading.Thread | None:
    """Start the forkserver (a Python importing NumPy and torch, about as long as the
    parent's own start) in a thread, so that the parent can work meanwhile. None when this
    process has booted it already or has no forkserver."""
    global _booted
    if _booted or "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    _booted = True
    _context()  # sets the preload list before the server starts
    thread = threading.Thread(target=_boot, name="posenc-spec-forkserver-boot", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def _main_module_hidden():
    """Start the child without re-running the caller's ``__main__``: multiprocessing would
    otherwise import the calling script in the child (running a script without a
    ``__name__ == "__main__"`` guard again), and the child needs nothing from it."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class Worker:
    """One child process, started on demand and restarted after a death or a hang."""

    def __init__(self):
        self._process = None
        self._conn = None
        self.loaded: str | None = None
        self.starts = 0

    def start(self) -> None:
        context = _context()
        parent_end, child_end = context.Pipe()
        init = {"cwd": os.getcwd(), "sys_path": [os.getcwd(), *sys.path], "environ": dict(os.environ)}
        process = context.Process(target=serve, args=(child_end, init), daemon=True, name="posenc-spec-gate-worker")
        with _main_module_hidden():
            process.start()
        child_end.close()
        self._process, self._conn, self.loaded = process, parent_end, None
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def stop(self) -> None:
        if self._process is None:
            return
        try:
            self._conn.close()
        except OSError:
            pass
        self._process.join(timeout=1)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=5)
        self._process = self._conn = self.loaded = None

    def kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(timeout=5)
            try:
                self._conn.close()
            except OSError:
                pass
        self._process = self._conn = self.loaded = None

    def send(self, message) -> None:
        if self._process is None:
            self.start()
        try:
            self._conn.send(message)
        except (BrokenPipeError, OSError, ValueError):
            raise WorkerDied(self._death()) from None

    def receive(self, deadline: float, what: str, timeout: float):
        """The next message, or :class:`WorkerDied` on death or when ``deadline`` passes
        (``timeout`` is the per-call limit the deadline came from, for the message)."""
        remaining = max(deadline - time.monotonic(), 0.0)
        try:
            ready = self._conn.poll(remaining)
        except (OSError, ValueError):
            ready = True
        if not ready:
            self.kill()
            raise WorkerDied(f"{what} did not return within the {timeout:g} s timeout (killed)", hung=True)
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise WorkerDied(self._death()) from None

    def receive_bytes(self) -> bytes:
        try:
            return self._conn.recv_bytes()
        except (EOFError, OSError):
            raise WorkerDied(self._death()) from None

    def _death(self) -> str:
        process = self._process
        process.join(timeout=5)
        code = process.exitcode
        self._process = self._conn = self.loaded = None
        if code is None:
            return "the worker process stopped answering"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the process died from {name}"
        return f"the process exited with status {code} (os._exit or a crash)"


def kill_quietly(worker: Worker) -> None:
    try:
        worker.kill()
    except Exception:
        pass


# -- calls as a stream of outcomes ------------------------------------------------------------


class Outcome:
    """What one call did. ``status``: ``ok`` (``table`` holds it, in the produced dtype;
    ``dtype`` names it, bfloat16 included), ``raised``, ``exit`` (sys.exit and other
    BaseExceptions), ``bad`` (returned something that is not an expected table), ``died``,
    ``hung`` or ``not-run``; ``message`` says it in one line; ``state`` lists the global
    state the call changed (and the worker restored)."""

    __slots__ = ("status", "message", "dtype", "table", "state")

    def __init__(self, status, message, dtype=None, table=None, state=()):
        self.status, self.message, self.dtype, self.table, self.state = status, message, dtype, table, list(state)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __repr__(self):
        return f"Outcome({self.status!r}, {self.message!r})"


def load(worker: Worker, target: str, timeout: float) -> tuple[bool, str]:
    """Import ``target`` in the worker: ``(True, message)`` or ``(False, reason)``."""
    try:
        worker.send(("load", target))
        reply = worker.receive(time.monotonic() + timeout, f"importing {target}", timeout)
    except WorkerDied as death:
        return False, f"importing {target}: {death}"
    return reply["ok"], reply["message"]


MAX_DEATHS = 3


def run_calls(worker: Worker, target: str, requests: list[dict], timeout: float):
    """Yield one :class:`Outcome` per request, in order, for a target already loaded.

    A request is ``{"label", "length", "width", "timesteps", "shape"}``. All requests go
    out at once, so the child computes the next table while the parent checks this one.
    After a death the worker restarts, re-imports the target and goes on, up to
    ``MAX_DEATHS`` deaths (each restart re-imports the target's modules); after a hang the
    remaining calls are not run (each would wait out the timeout too).
    """
    pending = list(enumerate(requests))
    deaths = 0

    def send_pending():
        for index, request in pending:
            worker.send(("call", {**request, "id": index, "target": target}))
        return time.monotonic()

    stop_reason = None
    try:
        mark = send_pending()
        while pending:
            index, request = pending[0]
            if stop_reason:
                pending.pop(0)
                yield Outcome("not-run", stop_reason)
                continue
            what = f"the call for {request['label']}"
            try:
                header = worker.receive(mark + timeout, what, timeout)
                table = None
                if header["status"] == "ok":
                    data = worker.receive_bytes()
                    carrier = "float32" if header["dtype"] == "bfloat16" else header["dtype"]
                    table = np.frombuffer(data, dtype=carrier).reshape(request["shape"])
                mark = time.monotonic()
            except WorkerDied as death:
                pending.pop(0)
                yield Outcome("hung" if death.hung else "died", str(death))
                deaths += not death.hung
                if death.hung:
                    stop_reason = f"not run: the target hung on the call for {request['label']}"
                elif deaths >= MAX_DEATHS:
                    stop_reason = f"not run: the process died on {deaths} calls of this target"
                elif pending:
                    ok, message = load(worker, target, timeout)
                    if ok:
                        mark = send_pending()
                    else:
                        stop_reason = f"not run: the worker died and the target failed to import again ({message})"
                continue
            if header["id"] != index:  # cannot happen unless the protocol is broken
                raise RuntimeError(f"worker answered call {header['id']} where {index} was expected")
            pending.pop(0)
            yield Outcome(header["status"], header["message"], header["dtype"], table, header["state"])
    finally:
        if pending:  # the consumer stopped early: unanswered calls must not reach the next target
            kill_quietly(worker)


# -- one worker for several runs ----------------------------------------------------------------

_shared: Worker | None = None


@contextlib.contextmanager
def session():
    """Share one worker among every check and identify run inside the ``with`` block
    (a test module gating several targets imports their modules once)."""
    global _shared
    if _shared is not None:
        yield _shared
        return
    _shared = Worker()
    try:
        yield _shared
    finally:
        worker, _shared = _shared, None
        worker.stop()


@contextlib.contextmanager
def run_worker():
    """The session's worker, or a new one stopped at the end of the run."""
    if _shared is not None:
        yield _shared
        return
    worker = Worker()
    try:
        yield worker
    finally:
        worker.stop()
