"""The sealed child's loop: import the target, then answer each call with raw arrays.

Requests (JSON headers, see :mod:`.protocol`)::

    {"op": "load", "target": "pkg.mod:fn"}
    {"op": "call", "id": 3, "token": "...", "args": [ARG, ...], "rng": "a" | "b",
     "max_bytes": N, "allow_complex": false, "allow_integer": false, "max_items": 1}
    {"op": "sync", "token": "..."}           after the last call: the next frame must answer it
    {"op": "exercise", "framework": "jax"}   (a process of no target) start the framework and
                                             compute a table (:func:`.frameworks.exercise`)
        ARG: {"int": 50} | {"float": 1.5} |
             {"array": K, "dtype": "int64", "shape": [50], "as": "torch" | "numpy", "name": "timesteps",
              "order": [0, 2, 1, 3]}
             (payload K holds the values in C order; bfloat16 as uint16 bits; with "order" the argument
             is a non-contiguous view whose memory holds the axes in that order, as transformers hands
             over ``q``)

Replies::

    {"op": "loaded", "ok": true, "message": "...", "import_changes": [...], "import_effects": [...],
     "import_failures": [...], "where": {"file": "...", "line": 12} or null,
     "framework": "jax" | "tensorflow" | null}  (whose arrays the loaded target takes)
    {"op": "synced", "token": "..."}
    {"op": "exercised", "ok": true, "threads": 16}
    {"op": "result", "id": 3, "token": "...", "status": "ok" | "raised" | "exit" | "bad", "message": "...",
     "tuple": false, "arrays": [{"dtype": "float32", "shape": [50, 8], "description": "...",
                                 "container": "torch" | "numpy"}],
     "state": [...], "effects": [...], "imports": "...", "written": [argument names],
     "overwrote": [what of the previous call's result changed], "rng_before": {...}, "rng_after": {...}}
                                                                  + one payload per array

Each reply echoes its request's random token, and a turn ends with a ``sync`` whose answer
must be the next frame: a frame the target wrote into the socket itself is found out (a
target that rewrites this loop in its own process can fake its own replies, never another
target's). Each call starts from the generator state its request names, so a call's randomness, and
whether it reseeds, is seen from outside. After the call every other piece of global state
is compared with the state after the import: what the target changed is named and restored,
what the libraries it imported meanwhile changed is named as their side effect and kept
(:mod:`.attribution`; ``imports`` says which modules the call imported). A process
forked by the target that returns into this loop exits at once instead of answering.

What a call returned is the caller's: each result whose items are tensors or arrays is kept
with a digest of the bytes sent, read again (by its memory, as :mod:`.convert` reads it)
after the next call, and a change is named in that call's ``overwrote`` (a cache handed out
as a view and then rewritten, an output buffer reused).
"""

from __future__ import annotations

import os
import sys
import types
import zlib

import numpy as np

from posenc_spec.text import describe_exception, one_line

from . import adapters, attribution, confine_sockets, confinement, learned, limits, state, supervisor
from .convert import BadResult, is_array, to_arrays
from .library_functions import watch_libraries_of
from .protocol import ChannelError, HeaderTooLarge, Reader, in_place_of, send

try:
    import torch
except ImportError:
    torch = None

MAX_REQUEST_BYTES = 1 << 28  # the largest argument the gate sends (a RoPE x) is a few MB
MAX_STATE_LINES = 20
ISOLATION = ""  # what weakened this process's isolation, when something did (see setup)


def setup(init: dict) -> None:
    """Make this process the target's: environment, working directory, import path, limits;
    one that will run target code (``init`` has limits) and runs as root takes a user of its
    own first (:func:`.limits.drop_root`)."""
    limits.silence_output()
    state.watch_audit_hooks()
    os.environ.clear()
    os.environ.update(init["environ"])
    os.chdir(init["cwd"])
    sys.path[:] = init["sys_path"]
    attribution.RUN_STARTED = init.get("run_started")
    if torch is not None:
        # One thread: the gate judges one table while the child computes the next.
        torch.set_num_threads(1)
    if "limits" not in init:  # a slot template: it runs no target code
        confinement.BASE = init.get("private")
        supervisor.release()
        confinement.hand_over_shared_memory()
        return
    global ISOLATION
    confined = bool(init.get("confine") and (confinement.FOLDER or confinement.BASE))
    # First, as the template waits for it; before the change of user: root's mount namespace needs root's capabilities.
    shared_memory = confinement.private_shared_memory(init["limits"]["memory"]) if confined else ""
    confinement.hand_over_shared_memory()
    confinement.detach_shared_memory()  # a fork of the Python API's caller: the caller's stays the caller's
    as_root = os.geteuid() == 0 and limits.IS_LINUX
    own_user = limits.CHILD_UID_BASE + os.getpid()
    folder = confinement.make_private_folder(own_user if as_root else None) if confined else None
    if as_root:
        try:
            limits.drop_root(own_user)
        except OSError as error:  # a container without CAP_SETUID, say: the target runs as root
            ISOLATION = f"the target ran as root: it could not be given a user of its own ({one_line(str(error), 120)})"
            as_root = False
        else:
            _keep_the_login_name()
    if folder is not None:
        _confine(folder, init.get("writable", ()), has_own_user=os.geteuid() >= limits.CHILD_UID_BASE,
                 filter_signals=init.get("filter_signals", False), shared_memory=shared_memory)
    supervisor.release()  # when not confined
    bounds = init["limits"]
    limits.apply_limits(bounds.get("memory"), bounds.get("cpu_seconds"), bounds.get("processes"),
                        bounds.get("file_size"))


def _confine(folder: str, writable, has_own_user: bool, filter_signals: bool, shared_memory: str = "") -> None:
    """Confine this process to writing beneath ``folder`` (its temporary folder from here on),
    its ``/dev/shm`` (a private one unless ``shared_memory`` says why not) and ``writable``
    (:mod:`.confinement`), close new sockets to it (:mod:`.confine_sockets`), and, with
    ``filter_signals``, keep its signals among its own processes by a seccomp filter in place
    of Landlock's scoping (:mod:`.confine_signals`), and its scheduling calls too, both judged
    by its template where the kernel allows (:mod:`.supervisor`); what is not confined is said
    in the report, but what a user of its own keeps already (the files and processes of the
    gate's user, not the network; its files under ``/dev/shm``, which the gate counts and
    removes)."""
    global ISOLATION
    import tempfile

    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # asked again, it is TMPDIR
    confinement.FOLDER = folder
    missing = confinement.confine(folder, writable, scope_signals=not filter_signals)
    sockets_open = confine_sockets.close_sockets()
    signals_open, scheduling_open = supervisor.confine_processes(filter_signals)
    kept_by_own_user = () if has_own_user else (missing, signals_open, scheduling_open, shared_memory)
    # A module template's child inherits what its template said already.
    ISOLATION = "; ".join([*filter(None, [ISOLATION]),
                           *(item for item in (*kept_by_own_user, sockets_open) if item and item not in ISOLATION)])


def _keep_the_login_name() -> None:
    """The user of a target's own has no name in the password database, where
    ``getpass.getuser()`` looks when the environment names no user: there it answers as it
    would in the caller's program (root's name), through ``LOGNAME``, the first variable it
    reads."""
    if not any(os.environ.get(name) for name in ("LOGNAME", "USER", "LNAME", "USERNAME")):
        os.environ["LOGNAME"] = _ROOT_NAME


try:
    import pwd

    _ROOT_NAME = pwd.getpwuid(0).pw_name
except (ImportError, KeyError):
    _ROOT_NAME = "root"


def import_target(target: str, module_only: bool = False, framework: dict | None = None):
    """``(function or None, message, changes, effects, failures)`` after importing
    ``target`` here (only its module, with ``module_only``: the function is then ``True`` on
    success). The state the import changed is kept (the calls run after the import, as they
    would in the caller's process) and sorted by :mod:`.attribution`: ``effects`` are the
    changes installed libraries made while imported; ``changes`` and ``failures`` the
    target's own (its module's code), ``failures`` those that change what every importing
    program computes (:attr:`.state.Entry.numeric`). A declared ``framework`` is imported
    first (:func:`.frameworks.prepare`), so that its state is watched through the target's import."""
    from ..loader import import_module_of, load_target, prepare  # standard library only

    prepare(target)  # the gate's own change to sys.path, not the target's
    if framework:
        from . import frameworks

        try:
            frameworks.prepare(framework)
        except BaseException as error:  # the framework's own import failed
            return None, f"the declared framework {framework.get('name')} {describe_exception(error)}", [], [], []
    attribution.before_target_code()
    before = state.snapshot()
    module = None
    with attribution.Watch(before, target_module(target)) as watch:
        try:
            module = import_module_of(target)
            if module_only:
                function, message = True, f"imported the module of {target}"
            else:
                function, message = load_target(target), f"imported {target}"
        except BaseException as error:  # SystemExit and KeyboardInterrupt at import time too
            function, message = None, describe_exception(error)
    verdict = watch.verdict(state.snapshot())
    if function is not None:  # the libraries the module refers to are watched from here on, as torch is
        watch_libraries_of(module)
    changes = [line for name, line in verdict.own.items() if not state.is_numeric(name)]
    failures = [line for name, line in verdict.own.items() if state.is_numeric(name)]
    if state.disarm_timers():  # a timer left by the import would fire in the middle of a call
        changes.append("(the pending interval timer was disarmed)")
    return function, message, _lines(changes), _lines(verdict.effects), _lines(failures)


def _through_framework(function, framework: dict | None, message: str):
    """The target behind its framework's boundary (:mod:`.frameworks`), the load's message
    and the framework whose arrays it takes (None: NumPy's or torch's); None and why when
    the framework is not as declared. The boundary's module is imported only for a target
    whose framework is declared or whose module imports one."""
    if not framework and not {"jax", "tensorflow", "keras"} & sys.modules.keys():
        return function, message, None
    from .frameworks import FOREIGN, FrameworkError, boundary, kind_of

    try:
        kind = kind_of(function, framework)
        return boundary(function, framework), message, kind if kind in FOREIGN else None
    except FrameworkError as error:
        return None, str(error), None


def target_module(target: str) -> str | None:
    """The module a module target names (None for a file target: its code never runs
    through the import system)."""
    from ..loader import parse_target

    name = parse_target(target)
    return None if name.is_path else name.module


def _lines(lines) -> list[str]:
    return [one_line(line, 200) for line in lines[:MAX_STATE_LINES]]


def _settle(baseline: dict, verdict) -> list[str]:
    """Put back what the target changed (named in the lines returned); keep what importing
    libraries changed, during the call or while the state was put back (torch's
    ``use_deterministic_algorithms`` imports its compiler's config on its first use).
    When nothing differs from ``baseline`` at the end of the call (``verdict.changed``),
    there is nothing to put back or keep: the state is not read again."""
    if not verdict.changed:
        return []
    with attribution.Watch(state.snapshot()) as restoring:
        changes = state.compare_and_restore(baseline, keep=verdict.kept)
    state.adopt(baseline, restoring.verdict(state.snapshot()).kept)
    return changes


def _imports(verdict) -> str:
    """The modules a call imported, in a few words."""
    if not verdict.imported:
        return ""
    more = verdict.count - 1
    return verdict.imported[0] + (f" and {more} more module{'s' * (more != 1)}" if more else "")


def _where(function) -> dict | None:
    """The file and first line of the target's source, for annotations (None when unknown)."""
    import inspect

    try:
        function = inspect.unwrap(function)
        path = inspect.getsourcefile(function)
        code = getattr(function, "__code__", None)
        # A function's first line is what getsourcelines gives, without tokenizing its file.
        line = code.co_firstlineno if isinstance(code, types.CodeType) else inspect.getsourcelines(function)[1]
    except (TypeError, OSError, ValueError, AttributeError):
        return None
    return {"file": str(path), "line": int(line)} if path else None


def _arguments(specs, payloads):
    arguments, arrays = [], []
    for spec in specs:
        if "int" in spec:
            arguments.append(int(spec["int"]))
        elif "float" in spec:
            arguments.append(float(spec["float"]))
        else:
            carrier = np.uint16 if spec["dtype"] == "bfloat16" else np.dtype(spec["dtype"])
            values = np.frombuffer(payloads[spec["array"]], dtype=carrier).reshape(spec["shape"])
            order = spec.get("order")
            if order is None:
                values = values.copy()
            else:  # laid out in memory in this order of axes, then viewed back: a non-contiguous view
                values = np.ascontiguousarray(values.transpose(order))
            if spec.get("as") == "torch":
                value = torch.from_numpy(values)
                if spec["dtype"] == "bfloat16":
                    value = value.view(torch.bfloat16)
                value = value if order is None else value.permute(*np.argsort(order).tolist())
            else:
                value = values if order is None else values.transpose(np.argsort(order))
            arrays.append((spec.get("name", f"argument {len(arguments)}"), value, _bits(value)))
            arguments.append(value)
    return arguments, arrays


def _bits(value):
    try:
        if torch is not None and isinstance(value, torch.Tensor):
            tensor = value.detach().cpu().contiguous()
            return str(tensor.dtype), tuple(tensor.shape), tensor.view(torch.uint8).numpy().tobytes()
        return str(value.dtype), value.shape, np.ascontiguousarray(value).tobytes()
    except Exception as error:
        return "unreadable", (), describe_exception(error).encode()


def _written_arguments(arrays) -> list[str]:
    """The caller's arrays are the caller's: the names of those the call wrote into."""
    return [name for name, value, before in arrays if _bits(value) != before]


class Kept:
    """A call's result as the caller holds it, and the digest of each array's bytes as sent."""

    def __init__(self, result, converted, allow_complex: bool, max_items: int, allow_integer: bool = False):
        self.result, self.allow_complex, self.max_items = result, allow_complex, max_items
        self.allow_integer = allow_integer
        self.digests = [_digest(array) for array, _, _ in converted]

    @classmethod
    def of(cls, result, converted, request) -> Kept | None:
        """None for a result that cannot be read again without running its own code (an
        object NumPy's protocols convert): only tensors and arrays, alone or in a tuple or list."""
        items = list(result) if type(result) in (tuple, list) else [result]
        if not items or not all(is_array(item) for item in items):
            return None
        return cls(result, converted, request.get("allow_complex", False), request.get("max_items", 1),
                   request.get("allow_integer", False))

    def changes(self) -> list[str]:
        """What of the result no longer holds the bytes the gate was sent."""
        try:
            _, now = to_arrays(self.result, self.allow_complex, self.max_items, self.allow_integer)
        except Exception as error:  # its storage was freed or resized under the caller
            return [f"the result's storage (it can no longer be read: {describe_exception(error)})"]
        if len(now) != len(self.digests):
            return [f"the result's arrays (now {len(now)}, not {len(self.digests)})"]
        which = [index for index, ((array, _, _), digest) in enumerate(zip(now, self.digests, strict=True))
                 if _digest(array) != digest]
        return [f"array {index} of the result" if len(now) > 1 else "the result" for index in which]


def _digest(array: np.ndarray) -> tuple:
    return array.shape, array.dtype.str, zlib.crc32(np.ascontiguousarray(array).view(np.uint8).reshape(-1))


def _call(function, request, payloads, baseline, module=None, previous: Kept | None = None):
    """The reply to one call and its payloads, and what to read again after the next call."""
    reply = {"op": "result", "id": request["id"], "token": request.get("token"), "status": "ok", "message": "",
             "tuple": False, "arrays": []}
    data = []
    arguments, arrays = _arguments(request["args"], payloads)
    state.seed_generators(request.get("rng", "a"))
    reply["rng_before"] = state.generator_digests()
    me = os.getpid()
    result = None
    with attribution.Watch(baseline, module) as watch:
        try:
            result = function(*arguments)
        except Exception as error:
            reply.update(status="raised", message=describe_exception(error), exception=type(error).__name__)
        except BaseException as error:  # SystemExit, KeyboardInterrupt, GeneratorExit
            reply.update(status="exit", message=describe_exception(error), exception=type(error).__name__)
    if os.getpid() != me:  # a copy the target forked, returning here: it must not answer
        os._exit(0)
    reply["rng_after"] = state.generator_digests()
    verdict = watch.verdict(state.snapshot())
    reply["state"] = _lines(_settle(baseline, verdict))
    reply["effects"] = _lines(verdict.effects)
    reply["imports"] = one_line(_imports(verdict), 120)
    reply["written"] = [one_line(name, 40) for name in _written_arguments(arrays)]
    reply["overwrote"] = [one_line(what, 200) for what in previous.changes()][:4] if previous is not None else []
    kept = None
    if reply["status"] == "ok":
        try:
            is_tuple, converted = to_arrays(result, request.get("allow_complex", False), request.get("max_items", 1),
                                            request.get("allow_integer", False))
            size = sum(array.nbytes for array, _, _ in converted)
            if size > request["max_bytes"]:
                shapes = ", ".join("x".join(map(str, array.shape)) or "scalar" for array, _, _ in converted)
                raise BadResult(f"returned {size} bytes ({shapes}), more than this call's largest "
                                f"legitimate result ({request['max_bytes']} bytes)")
            reply["tuple"] = is_tuple
            reply["arrays"] = [{"dtype": dtype, "shape": list(array.shape), "description": one_line(description, 120),
                                "container": "torch" if description.startswith("torch ") else "numpy"}
                               for array, dtype, description in converted]
            data = [array for array, _, _ in converted]
            kept = Kept.of(result, converted, request)
        except BadResult as error:
            reply.update(status="bad", message=str(error))
        except Exception as error:  # a result whose own methods raise
            reply.update(status="bad", message=f"returned a {type(result).__name__} that cannot be read "
                                                f"({describe_exception(error)})")
            kept = None
    return reply, data, kept


def serve(sock, init: dict) -> None:
    """Answer requests on ``sock`` until the gate closes it."""
    setup(init)
    reader = Reader(sock)
    function, baseline, module, kept = None, state.snapshot(), None, None
    new_modules = learned.NewModules()
    while True:
        try:
            request, payloads, _ = reader.read(None, MAX_REQUEST_BYTES)
        except (ChannelError, OSError):
            return
        if request.get("op") == "load":
            how = request.get("how") or {}
            function, message, changes, effects, failures = import_target(request["target"],
                                                                          framework=how.get("framework"))
            baseline, module = state.snapshot(), target_module(request["target"])
            written = function  # where the target is defined, for annotations
            kind = None
            if function is not None:
                function, message, kind = _through_framework(function, how.get("framework"), message)
            if function is not None and how:
                function = adapters.adapt(function, how)
            reply, data = {"op": "loaded", "ok": function is not None, "message": message,
                           "import_changes": changes, "import_effects": effects, "import_failures": failures,
                           "isolation": ISOLATION, "where": _where(written), "learned": new_modules.take(),
                           "framework": kind}, []
        elif request.get("op") == "exercise" and function is None:  # a process of no target (see frameworks.exercise)
            from .frameworks import exercise

            reply, data = {"op": "exercised", "ok": True, "threads": exercise(request.get("framework"))}, []
        elif request.get("op") == "call" and function is not None:
            reply, data, kept = _call(function, request, payloads, baseline, module, kept)
            reply["learned"] = new_modules.take()
        elif request.get("op") == "sync":
            reply, data = {"op": "synced", "token": request.get("token")}, []
        else:
            return
        try:
            try:
                send(sock, reply, data)
            except HeaderTooLarge as problem:  # say which limit was hit: a dead child reads as a crash
                send(sock, in_place_of(reply, problem))
        except OSError:
            return

