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
import functools
import hashlib
import locale
import os
import random
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.random  # noqa: F401 -- NumPy imports it lazily: here it is in the template, not in each child

try:
    import torch
except ImportError:  # the table API needs no torch
    torch = None

GENERATOR_SEEDS = {"a": 20240229, "b": 31415926}


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


def _setter(owner, attribute):
    return lambda value: setattr(owner, attribute, value)


def _attributes(*places):
    """An entry's read and restore over ``(object, attribute)`` pairs, read as one tuple."""
    def read():
        return tuple(getattr(owner, attribute) for owner, attribute in places)

    def restore(values):
        for (owner, attribute), value in zip(places, values, strict=True):
            if getattr(owner, attribute) != value:
                setattr(owner, attribute, value)

    return read, restore


def _calls(*pairs):
    """An entry's read and restore over ``(getter, setter)`` pairs, read as one tuple."""
    def read():
        return tuple(get() for get, _ in pairs)

    def restore(values):
        for (get, put), value in zip(pairs, values, strict=True):
            if get() != value:
                put(value)

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


def _python_entries() -> list[Entry]:
    return [
        Entry("environment variables", _environ, _restore_environ),
        Entry("sys.path", lambda: list(sys.path), lambda value: sys.path.__setitem__(slice(None), value)),
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
    devices = _autocast_devices()

    def read():
        return (torch.is_autocast_cache_enabled(),
                {device: (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)) for device in devices})

    def restore(value):
        torch.set_autocast_cache_enabled(value[0])
        for device, (enabled, dtype) in value[1].items():
            torch.set_autocast_enabled(device, enabled)
            torch.set_autocast_dtype(device, dtype)

    return read, restore


def _fp32_precision_places():
    """Where torch 2.9+ keeps its per-backend float32 precision settings."""
    backends = torch.backends
    places = [(backends, "fp32_precision"), (backends.cuda.matmul, "fp32_precision"),
              (backends.cudnn, "fp32_precision"), (backends.cudnn.conv, "fp32_precision"),
              (backends.cudnn.rnn, "fp32_precision"), (backends.mkldnn, "fp32_precision"),
              (backends.mkldnn.matmul, "fp32_precision"), (backends.mkldnn.conv, "fp32_precision"),
              (backends.mkldnn.rnn, "fp32_precision")]
    return [(owner, name) for owner, name in places if hasattr(owner, name)]


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
        ("torch anomaly detection", lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
         lambda value: torch.set_anomaly_enabled(*value)),
        ("torch deterministic algorithms",
         *_calls((lambda: (torch.are_deterministic_algorithms_enabled(),
                           torch.is_deterministic_algorithms_warn_only_enabled()),
                  lambda value: torch.use_deterministic_algorithms(value[0], warn_only=value[1])),
                 (lambda: torch.utils.deterministic.fill_uninitialized_memory,
                  _setter(torch.utils.deterministic, "fill_uninitialized_memory")))),
        ("torch flush-denormal", _flush_denormal_enabled, torch.set_flush_denormal),
        ("torch float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        ("torch float32 precision settings", *_attributes(*_fp32_precision_places())),
        ("torch TF32 and reduced-precision flags",
         *_attributes((cuda.matmul, "allow_tf32"), (cuda.matmul, "allow_fp16_reduced_precision_reduction"),
                      (cuda.matmul, "allow_bf16_reduced_precision_reduction"),
                      (cuda.matmul, "allow_fp16_accumulation"))),
        ("torch cuDNN flags", *_attributes((backends.cudnn, "enabled"), (backends.cudnn, "allow_tf32"),
                                           (backends.cudnn, "deterministic"), (backends.cudnn, "benchmark"),
                                           (backends.cudnn, "benchmark_limit"))),
        ("torch SDPA kernels",
         *_calls((cuda.flash_sdp_enabled, cuda.enable_flash_sdp),
                 (cuda.mem_efficient_sdp_enabled, cuda.enable_mem_efficient_sdp),
                 (cuda.math_sdp_enabled, cuda.enable_math_sdp), (cuda.cudnn_sdp_enabled, cuda.enable_cudnn_sdp),
                 (cuda.fp16_bf16_reduction_math_sdp_allowed, cuda.allow_fp16_bf16_reduction_math_sdp))),
        ("torch preferred linear algebra and BLAS libraries",
         *_calls((cuda.preferred_linalg_library, cuda.preferred_linalg_library),
                 (cuda.preferred_blas_library, cuda.preferred_blas_library))),
        ("torch oneDNN flags", *_attributes((backends.mkldnn, "enabled"), (backends.mkldnn, "deterministic"))),
        ("torch multi-head attention fast path",
         backends.mha.get_fastpath_enabled, backends.mha.set_fastpath_enabled),
        ("torch opt_einsum flags", *_attributes((backends.opt_einsum, "enabled"), (backends.opt_einsum, "strategy"))),
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
    return tuple(_python_entries() + (_torch_entries() if torch is not None else []))


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


def _scalar(value) -> bool:
    return not isinstance(value, dict | list | tuple)


def _difference(before, after) -> str:
    """What differs, in a few words: a mapping's changed keys (never their values: an
    environment variable may hold a secret), a list's length, else ``before -> after``."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted({*before, *after} - {key for key in before if key in after and before[key] == after[key]},
                      key=str)
        shown = ", ".join(_key(key) for key in keys[:3])
        return f"({shown}{', ...' if len(keys) > 3 else ''})"
    if isinstance(before, list) and isinstance(after, list):
        return f"({len(before)} -> {len(after)} entries)" if len(before) != len(after) else "(reordered)"
    if (isinstance(before, tuple) and isinstance(after, tuple) and len(before) == len(after)
            and not all(map(_scalar, before + after))):
        return ", ".join(_difference(old, new) for old, new in zip(before, after, strict=True) if old != new)
    return f"{_short(before)} -> {_short(after)}"


def describe_change(name, before, after) -> str:
    """One entry's change, named: ``"torch grad mode True -> False"``."""
    return f"{name} {_difference(before, after)}"


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
