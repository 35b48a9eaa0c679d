"""The global state a call must leave as it found it, read and restored in the child.

Each entry is ``(name, read, restore)``; ``read`` returns something comparable with ``==``.
Around every call the child reads every entry, and afterwards names each one that changed
and puts it back, so that one call cannot change what the next call of the same target
sees. (Nothing reaches another target: each target runs in a child of its own.)

The random number generators are handled apart (:func:`seed_generators`,
:func:`generator_digests`): a call may draw from them (constructing a ``torch.nn.Module``
does), which the gate reports as a warning; whether a call *reseeded* one, or depends on
it, the gate tells from the digests of two calls started from different states.
"""

from __future__ import annotations

import _signal
import array
import ctypes
import ctypes.util
import decimal
import functools
import gc
import hashlib
import locale
import logging
import os
import random
import resource
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.random  # noqa: F401 -- NumPy imports it lazily: here it is in the template, not in each child

from . import library_functions, loaded_modules

try:
    import torch
except ImportError:  # the table API needs no torch
    torch = None

GENERATOR_SEEDS = {"a": 20240229, "b": 31415926}
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.setenv.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
_LIBC.unsetenv.argtypes = [ctypes.c_char_p]


def _libm():
    """The C math library, where its rounding mode can be read and set (else None)."""
    try:
        library = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        library.fegetround.restype = ctypes.c_int
        library.fesetround.argtypes = [ctypes.c_int]
        return library
    except (OSError, AttributeError):
        return None


_LIBM = _libm()


# -- the generators ----------------------------------------------------------------------


def seed_generators(start: str) -> None:
    """Put Python's, NumPy's and torch's global generators in the named starting state."""
    seed = GENERATOR_SEEDS[start]
    random.seed(seed)
    np.random.seed(seed)
    if torch is not None:
        torch.random.default_generator.manual_seed(seed)
        _seed_started_accelerators(seed)


def _seed_started_accelerators(seed: int) -> None:
    # torch.manual_seed also seeds every accelerator, and queues the seed (recording a stack
    # trace) for one not started yet: a few ms per call. A device a call starts takes
    # torch's fixed initial seed, so that each call still starts from a known state.
    for name in ("cuda", "xpu", "mtia"):
        device = getattr(torch, name, None)
        if device is not None and device.is_initialized():
            device.manual_seed_all(seed)
    if torch.backends.mps.is_available():
        torch.mps.manual_seed(seed)


def _python_state() -> bytes:
    version, words, gauss = random.getstate()
    return array.array("Q", words).tobytes() + repr((version, gauss)).encode()  # 625 words: not repr'd


def _numpy_state() -> bytes:
    name, keys, position, has_gauss, cached = np.random.get_state()
    return keys.tobytes() + repr((name, position, has_gauss, cached)).encode()


def _torch_state() -> bytes:
    return torch.random.get_rng_state().numpy().tobytes()


def generator_digests() -> dict[str, str]:
    """A digest of each global generator's state, by the owner's name ("NumPy's global random
    number generator"); a state that cannot be read (a target replaced the getter) has a
    digest of its own, so that the call is seen to have changed it."""
    readers = {"Python's": _python_state, "NumPy's": _numpy_state}
    if torch is not None:
        readers["torch's"] = _torch_state
    digests = {}
    for name, read in readers.items():
        try:
            digests[name] = hashlib.sha256(read()).hexdigest()[:32]
        except Exception as error:
            digests[name] = f"unreadable ({type(error).__name__})"
    return digests


# -- everything else -----------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One piece of global state: ``read`` returns something comparable with ``==``,
    ``restore`` puts a read value back. ``numeric`` marks state that changes what later
    code computes (torch's modes and flags, NumPy's error state): a module that leaves it
    changed when imported changes every program that imports it."""

    name: str
    read: Callable[[], object]
    restore: Callable[[object], object]
    numeric: bool = False


def _flush_denormal_enabled() -> bool:
    # torch has no getter: a denormal float32 survives a multiplication by 1 unless flushed.
    return float(torch.tensor([1e-40], dtype=torch.float32).mul(1.0)[0]) == 0.0


def _set_inference_mode(enabled: bool) -> None:
    # A target may enter inference mode and never leave; a guard of our own (kept alive)
    # turns it off again for the calls that follow.
    guard = torch.inference_mode(enabled)
    guard.__enter__()
    _GUARDS.append(guard)


_GUARDS: list = []
# Read through the C module: signal.getsignal converts every answer to an enum, which made
# this the costliest entry to read (the state is read at every module a call imports).
_SIGNALS = [(sig, int(sig)) for sig in signal.valid_signals() if sig not in (signal.SIGKILL, signal.SIGSTOP)]
_TIMERS = {"ITIMER_REAL": signal.ITIMER_REAL, "ITIMER_VIRTUAL": signal.ITIMER_VIRTUAL,
           "ITIMER_PROF": signal.ITIMER_PROF}


def _signal_handlers():
    handlers = {}
    for sig, number in _SIGNALS:
        try:
            handlers[sig] = _signal.getsignal(number)
        except (OSError, ValueError):
            pass
    return handlers


def _restore_signal_handlers(handlers):
    for sig, handler in handlers.items():
        if handler is not None and _signal.getsignal(sig) != handler:
            signal.signal(sig, handler)


def _umask() -> str:
    value = os.umask(0o022)
    os.umask(value)
    return f"{value:04o}"


def _timers():
    return {name: signal.getitimer(which) for name, which in _TIMERS.items()}


def disarm_timers() -> bool:
    """Stop every interval timer; whether one was pending."""
    pending = any(value != (0.0, 0.0) for value in _timers().values())
    for which in _TIMERS.values():
        signal.setitimer(which, 0)
    return pending


def _restore_timers(values):
    for name, which in _TIMERS.items():
        signal.setitimer(which, *values[name])


def _environ() -> dict:
    # The encoded names and values: decoding every variable at each reading cost more than
    # all of torch's flags together.
    return dict(os.environ._data)


def _restore_environ(values):
    os.environ.clear()
    os.environ.update({os.fsdecode(name): os.fsdecode(value) for name, value in values.items()})


def _c_environ() -> dict:
    """The C library's environment (what child processes and C code read), name -> value."""
    pointer = ctypes.POINTER(ctypes.c_char_p).in_dll(_LIBC, "environ")
    items, index = {}, 0
    while pointer[index] is not None:
        name, _, value = pointer[index].partition(b"=")
        items[name], index = value, index + 1
    return items


def _c_only_environ() -> dict:
    """Where the C library's environment differs from ``os.environ`` (``os.putenv`` and
    ``unsetenv``, C code's ``setenv``): name -> its value there, None where it is missing."""
    python, c = os.environ._data, _c_environ()  # os.environb's own table (reading through it decodes each item)
    return {name: c.get(name) for name in {*python, *c} if c.get(name) != python.get(name)}


def _restore_c_only_environ(value: dict) -> None:
    for name in {*_c_only_environ(), *value}:
        wanted = value[name] if name in value else os.environb.get(name)
        if wanted is None:
            _LIBC.unsetenv(name)
        else:
            _LIBC.setenv(name, wanted, 1)


def _signal_mask() -> tuple:
    return tuple(sorted(signal.Signals(number).name for number in signal.pthread_sigmask(signal.SIG_BLOCK, ())))


def _restore_signal_mask(names) -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, [signal.Signals[name] for name in names])


def _restore_hooks(hooks) -> None:
    sys.settrace(hooks[0])
    sys.setprofile(hooks[1])


def _restore_collector(value) -> None:
    enabled, threshold = value
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()


_DECIMAL_SETTINGS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")


def _decimal_context() -> tuple:
    """The settings of this thread's ``decimal`` context and the signals it traps (not its
    flags: they record what was computed, as a result does)."""
    context = decimal.getcontext()
    return (*(getattr(context, name) for name in _DECIMAL_SETTINGS),
            tuple(sorted(kind.__name__ for kind, trapped in context.traps.items() if trapped)))


def _restore_decimal_context(value) -> None:
    context = decimal.getcontext()
    for name, setting in zip(_DECIMAL_SETTINGS, value, strict=False):
        setattr(context, name, setting)
    for kind in context.traps:
        context.traps[kind] = kind.__name__ in value[-1]


def _attribute(owner, name: str):
    """``(get, set)`` of an attribute."""
    return (lambda: getattr(owner, name)), (lambda value: setattr(owner, name, value))


def named_settings(**settings):
    """An entry's read and restore over named settings, each ``(get, set)``: read as a dict
    by name, so that a change names the setting."""
    def read():
        return {name: get() for name, (get, _) in settings.items()}

    def restore(values):
        for name, (get, put) in settings.items():
            if name in values and get() != values[name]:
                put(values[name])

    return read, restore


def _stack(names, length, pop):
    """An entry over a stack of modes: read as the modes' type names; restored by popping
    what was pushed since (a stack that lost modes cannot be put back)."""
    def restore(value):
        while length() > len(value):
            pop()
        if names() != value:
            raise RuntimeError("modes were removed from the stack")

    return names, restore


_RESOURCES = {name: getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}


def _resource_limits() -> dict:
    return {name: resource.getrlimit(number) for name, number in _RESOURCES.items()}


def _restore_resource_limits(values: dict) -> None:
    """Each limit as it was; a hard limit lowered since cannot be raised again without privileges."""
    for name, limit in values.items():
        if resource.getrlimit(_RESOURCES[name]) != limit:
            resource.setrlimit(_RESOURCES[name], limit)


def _logging_settings():
    """The root logger's level and handlers, and the level ``logging.disable`` set."""
    root = logging.getLogger()
    return named_settings(
        root_level=(lambda: root.level, root.setLevel),
        root_handlers=(lambda: list(root.handlers), lambda value: root.handlers.__setitem__(slice(None), value)),
        disabled_below=(lambda: root.manager.disable, logging.disable))


def _interpreter_settings():
    return named_settings(
        switch_interval=(sys.getswitchinterval, sys.setswitchinterval),
        int_max_str_digits=(sys.get_int_max_str_digits, sys.set_int_max_str_digits),
        dlopen_flags=(sys.getdlopenflags, sys.setdlopenflags),
        dont_write_bytecode=_attribute(sys, "dont_write_bytecode"))


def _interpreter_hooks():
    """What the interpreter calls on an uncaught exception (in any thread), an unraisable one,
    ``breakpoint()`` and an expression's value at the prompt."""
    return named_settings(**{f"sys.{name}": _attribute(sys, name)
                        for name in ("excepthook", "unraisablehook", "breakpointhook", "displayhook")},
                     **{"threading.excepthook": _attribute(threading, "excepthook")})


# How many audit hooks were added in this process since :func:`watch_audit_hooks` (a list:
# the hook counts in place). The interpreter has no way to list or remove one: a hook added
# stays for the rest of the caller's program, so the attempt is what is watched.
_AUDIT_HOOKS_ADDED = [0]
_AUDIT_HOOKS_WATCHED = False  # whether this process counts them (a fork inherits the hook)


def _count_audit_hooks(event: str, _arguments) -> None:
    if event == "sys.addaudithook":  # raised to the hooks already there before a new one is added
        _AUDIT_HOOKS_ADDED[0] += 1


def watch_audit_hooks() -> None:
    """Count the audit hooks added from here on (once a process; before any target code):
    the interpreter tells the hooks it has of each new one."""
    global _AUDIT_HOOKS_WATCHED
    if not _AUDIT_HOOKS_WATCHED:
        sys.addaudithook(_count_audit_hooks)
        _AUDIT_HOOKS_WATCHED = True


def _python_entries() -> list[Entry]:
    return [
        # First: the entries after it are read and put back through library functions.
        Entry("library functions", library_functions.Reading, library_functions.restore, numeric=True),
        Entry("environment variables", _environ, _restore_environ),
        Entry("sys.path", lambda: list(sys.path), lambda value: sys.path.__setitem__(slice(None), value)),
        Entry("imported modules (sys.modules)", loaded_modules.Reading, loaded_modules.restore, numeric=True),
        Entry("import hooks", lambda: (list(sys.meta_path), list(sys.path_hooks)),
              lambda value: (sys.meta_path.__setitem__(slice(None), value[0]),
                             sys.path_hooks.__setitem__(slice(None), value[1]))),
        Entry("standard streams", lambda: (sys.stdin, sys.stdout, sys.stderr),
              lambda value: setattr(sys, "stdin", value[0]) or setattr(sys, "stdout", value[1])
              or setattr(sys, "stderr", value[2])),
        Entry("working directory", os.getcwd, os.chdir),
        Entry("umask", _umask, lambda value: os.umask(int(value, 8))),
        Entry("signal handlers", _signal_handlers, _restore_signal_handlers),
        Entry("interval timer", _timers, _restore_timers),
        Entry("warnings filters", lambda: list(warnings.filters),
              lambda value: warnings.filters.__setitem__(slice(None), value)),
        Entry("recursion limit", sys.getrecursionlimit, sys.setrecursionlimit),
        Entry("locale", lambda: locale.setlocale(locale.LC_ALL), lambda value: locale.setlocale(locale.LC_ALL, value)),
        Entry("NumPy error state", lambda: (np.geterr(), np.geterrcall()),
              lambda value: (np.seterr(**value[0]), np.seterrcall(value[1])), numeric=True),
        Entry("NumPy print options", np.get_printoptions, lambda value: np.set_printoptions(**value)),
        Entry("C library environment", _c_only_environ, _restore_c_only_environ),
        Entry("signal mask", _signal_mask, _restore_signal_mask),
        Entry("trace and profile hooks", lambda: (sys.gettrace(), sys.getprofile()), _restore_hooks),
        Entry("garbage collector", lambda: (gc.isenabled(), gc.get_threshold()), _restore_collector),
        Entry("decimal context", _decimal_context, _restore_decimal_context),
        Entry("resource limits", _resource_limits, _restore_resource_limits),
        Entry("logging", *_logging_settings()),
        Entry("thread trace and profile hooks", lambda: (threading.gettrace(), threading.getprofile()),
              lambda value: threading.settrace(value[0]) or threading.setprofile(value[1])),
        Entry("interpreter settings", *_interpreter_settings()),
        Entry("interpreter hooks", *_interpreter_hooks()),
        # The count is put back; the hook itself stays (the entry's name says so in the report).
        Entry("the count of audit hooks added (the hook stays: none can be removed)", lambda: _AUDIT_HOOKS_ADDED[0],
              lambda value: _AUDIT_HOOKS_ADDED.__setitem__(0, value)),
        *([Entry("floating-point rounding mode", _LIBM.fegetround, _LIBM.fesetround, numeric=True)]
          if _LIBM is not None else []),
    ]


def _autocast_devices() -> list[str]:
    devices = []
    for device in ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "ipu", "mtia", "maia", "privateuseone"):
        try:
            torch.is_autocast_enabled(device)
            torch.get_autocast_dtype(device)
        except (RuntimeError, TypeError, ValueError):
            continue
        devices.append(device)
    return devices


def _autocast():
    def setting(device):
        def put(value):
            torch.set_autocast_enabled(device, value[0])
            torch.set_autocast_dtype(device, value[1])

        return (lambda: (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))), put

    return named_settings(cache=(torch.is_autocast_cache_enabled, torch.set_autocast_cache_enabled),
                     **{device: setting(device) for device in _autocast_devices()})


def _deterministic():
    def enabled(value):
        torch.use_deterministic_algorithms(value, warn_only=torch.is_deterministic_algorithms_warn_only_enabled())

    def warn_only(value):
        torch.use_deterministic_algorithms(torch.are_deterministic_algorithms_enabled(), warn_only=value)

    return named_settings(enabled=(torch.are_deterministic_algorithms_enabled, enabled),
                     warn_only=(torch.is_deterministic_algorithms_warn_only_enabled, warn_only),
                     fill_uninitialized_memory=_attribute(torch.utils.deterministic, "fill_uninitialized_memory"))


def _anomaly():
    return named_settings(enabled=(torch.is_anomaly_enabled,
                              lambda value: torch.set_anomaly_enabled(value, torch.is_anomaly_check_nan_enabled())),
                     check_nan=(torch.is_anomaly_check_nan_enabled,
                                lambda value: torch.set_anomaly_enabled(torch.is_anomaly_enabled(), value)))


def _fp32_precision():
    """torch 2.9's per-backend float32 precision settings, those this torch has."""
    backends = torch.backends
    places = {"fp32_precision": backends, "cuda.matmul": backends.cuda.matmul, "cudnn": backends.cudnn,
              "cudnn.conv": backends.cudnn.conv, "cudnn.rnn": backends.cudnn.rnn, "mkldnn": backends.mkldnn,
              "mkldnn.matmul": backends.mkldnn.matmul, "mkldnn.conv": backends.mkldnn.conv,
              "mkldnn.rnn": backends.mkldnn.rnn}
    return named_settings(**{name: _attribute(owner, "fp32_precision") for name, owner in places.items()
                        if hasattr(owner, "fp32_precision")})


def _torch_entries() -> list[Entry]:
    from torch.utils import _python_dispatch as dispatch

    backends, cuda = torch.backends, torch.backends.cuda
    modes = (
        ("torch default dtype", torch.get_default_dtype, torch.set_default_dtype),
        ("torch default device", lambda: str(torch.get_default_device()), torch.set_default_device),
        ("torch grad mode", torch.is_grad_enabled, torch.set_grad_enabled),
        ("torch inference mode", torch.is_inference_mode_enabled, _set_inference_mode),
        ("torch forward-mode AD", torch._C._is_fwd_grad_enabled, torch._C._set_fwd_grad_enabled),
        ("torch autocast", *_autocast()),
        ("torch anomaly detection", *_anomaly()),
        ("torch deterministic algorithms", *_deterministic()),
        ("torch flush-denormal", _flush_denormal_enabled, torch.set_flush_denormal),
        ("torch float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        ("torch float32 precision settings", *_fp32_precision()),
        ("torch TF32 and reduced-precision flags",
         *named_settings(allow_tf32=_attribute(cuda.matmul, "allow_tf32"),
                    allow_fp16_reduced_precision_reduction=_attribute(cuda.matmul,
                                                                      "allow_fp16_reduced_precision_reduction"),
                    allow_bf16_reduced_precision_reduction=_attribute(cuda.matmul,
                                                                      "allow_bf16_reduced_precision_reduction"),
                    allow_fp16_accumulation=_attribute(cuda.matmul, "allow_fp16_accumulation"))),
        ("torch cuDNN flags", *named_settings(**{name: _attribute(backends.cudnn, name) for name in (
            "enabled", "allow_tf32", "deterministic", "benchmark", "benchmark_limit")})),
        ("torch SDPA kernels",
         *named_settings(flash=(cuda.flash_sdp_enabled, cuda.enable_flash_sdp),
                    mem_efficient=(cuda.mem_efficient_sdp_enabled, cuda.enable_mem_efficient_sdp),
                    math=(cuda.math_sdp_enabled, cuda.enable_math_sdp),
                    cudnn=(cuda.cudnn_sdp_enabled, cuda.enable_cudnn_sdp),
                    fp16_bf16_reduction_math=(cuda.fp16_bf16_reduction_math_sdp_allowed,
                                              cuda.allow_fp16_bf16_reduction_math_sdp))),
        ("torch preferred linear algebra and BLAS libraries",
         *named_settings(linalg=(cuda.preferred_linalg_library, cuda.preferred_linalg_library),
                    blas=(cuda.preferred_blas_library, cuda.preferred_blas_library))),
        ("torch oneDNN flags", *named_settings(enabled=_attribute(backends.mkldnn, "enabled"),
                                          deterministic=_attribute(backends.mkldnn, "deterministic"))),
        ("torch multi-head attention fast path",
         backends.mha.get_fastpath_enabled, backends.mha.set_fastpath_enabled),
        ("torch opt_einsum flags", *named_settings(enabled=_attribute(backends.opt_einsum, "enabled"),
                                              strategy=_attribute(backends.opt_einsum, "strategy"))),
        ("torch function overrides", torch._C._get_torch_function_state, torch._C._set_torch_function_state),
        ("torch function modes",
         *_stack(lambda: tuple(type(mode).__qualname__ for mode in torch.overrides._get_current_function_mode_stack()),
                 torch._C._len_torch_function_stack, torch._C._pop_torch_function_stack)),
        ("torch dispatch modes",
         *_stack(lambda: tuple(type(mode).__qualname__ for mode in dispatch._get_current_dispatch_mode_stack()),
                 lambda: len(dispatch._get_current_dispatch_mode_stack()), dispatch._pop_mode)),
    )
    process = (
        ("torch thread count", torch.get_num_threads, torch.set_num_threads),
        ("torch inter-op thread count", torch.get_num_interop_threads, torch.set_num_interop_threads),
        ("torch warn-always", torch.is_warn_always_enabled, torch.set_warn_always),
        ("torch print options", lambda: dict(vars(torch._tensor_str.PRINT_OPTS)),
         lambda value: torch.set_printoptions(**value)),
    )
    return ([Entry(name, read, restore, numeric=True) for name, read, restore in modes]
            + [Entry(name, read, restore) for name, read, restore in process])


@functools.cache
def entries() -> tuple[Entry, ...]:
    """Every piece of global state a call must leave as it found it (built once a process:
    in the template, before it forks)."""
    from . import framework_state  # JAX's, TensorFlow's and Keras's: read only once imported

    return tuple(_python_entries() + (_torch_entries() if torch is not None else []) + framework_state.entries())


def is_numeric(name: str) -> bool:
    """Whether the entry called ``name`` changes what later code computes."""
    return any(entry.numeric for entry in entries() if entry.name == name)


def snapshot() -> dict:
    """Every entry's current value, by name (an entry that cannot be read is left out)."""
    values = {}
    for entry in entries():
        try:
            values[entry.name] = entry.read()
        except Exception:  # a getter the target broke: nothing to compare against
            pass
    return values


def warm_up() -> None:
    """Read every entry and generator once, in the template before it forks: the first reads
    in a process set torch up and import modules its getters load lazily (about 3 ms), which
    every child would otherwise pay again."""
    snapshot()
    generator_digests()


def _short(value) -> str:
    text = str(value).removeprefix("torch.")
    return text if len(text) <= 60 else text[:57] + "..."


def _key(key) -> str:
    """A mapping's key as a user names it: a signal's or an environment variable's name."""
    return os.fsdecode(key) if isinstance(key, bytes) else str(getattr(key, "name", key))


def _plain(value) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def _difference(before, after) -> str:
    """What differs, in a few words: a mapping's changed keys (with their values where both
    are plain numbers or words, never an environment variable's: it may hold a secret), a
    list's length, else ``before -> after``."""
    if isinstance(before, loaded_modules.Reading | library_functions.Reading):
        return f"({before.difference(after)})"
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted({*before, *after} - {key for key in before if key in after and before[key] == after[key]},
                      key=str)
        shown = ", ".join(_key(key) + (f" {_short(before[key])} -> {_short(after[key])}"
                                       if not isinstance(key, bytes) and key in before and key in after
                                       and _plain(before[key]) and _plain(after[key]) else "")
                          for key in keys[:3])
        return f"({shown}{', ...' if len(keys) > 3 else ''})"
    if isinstance(before, list) and isinstance(after, list):
        return f"({len(before)} -> {len(after)} entries)" if len(before) != len(after) else "(reordered)"
    if (isinstance(before, tuple) and isinstance(after, tuple) and len(before) == len(after)
            and not all(map(_plain, before + after))):
        return ", ".join(_difference(old, new) for old, new in zip(before, after, strict=True) if old != new)
    return f"{_short(before)} -> {_short(after)}"


def describe_change(name, before, after) -> str:
    """One entry's change, named: ``"torch grad mode True -> False"``."""
    return f"{name} {_difference(before, after)}"


def changed_entries(baseline: dict, now: dict) -> list[str]:
    """The entries of ``baseline`` that differ in ``now`` or are missing from it (could not be read)."""
    return [name for name, value in baseline.items() if name not in now or now[name] != value]


def compare_and_restore(baseline: dict, keep=frozenset()) -> list[str]:
    """Name every entry that differs from ``baseline`` and put it back; an entry named in
    ``keep`` (changed by imports alone: see :mod:`.attribution`) is taken into ``baseline``
    instead, as the caller's program would keep it."""
    changes = []
    for entry in entries():
        name = entry.name
        if name not in baseline:
            continue
        try:
            now = entry.read()
            changed = now != baseline[name]
        except Exception as error:
            changes.append(f"{name} (now unreadable: {type(error).__name__})")
            continue
        if not changed:
            continue
        if name in keep:
            baseline[name] = now
            continue
        changes.append(describe_change(name, baseline[name], now))
        try:
            entry.restore(baseline[name])
        except Exception as error:
            changes.append(f"(could not restore {name}: {type(error).__name__}: {error})")
    return changes


def adopt(baseline: dict, names) -> None:
    """Take the current value of the entries ``names`` into ``baseline``."""
    now = snapshot()
    baseline.update({name: now[name] for name in names if name in now})
