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

import array
import hashlib
import os
import random
import signal
import sys
import warnings

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
_SIGNALS = [sig for sig in signal.valid_signals() if sig not in (signal.SIGKILL, signal.SIGSTOP)]
_TIMERS = {"ITIMER_REAL": signal.ITIMER_REAL, "ITIMER_VIRTUAL": signal.ITIMER_VIRTUAL,
           "ITIMER_PROF": signal.ITIMER_PROF}


def _signal_handlers():
    handlers = {}
    for sig in _SIGNALS:
        try:
            handlers[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            pass
    return handlers


def _restore_signal_handlers(handlers):
    for sig, handler in handlers.items():
        if handler is not None and signal.getsignal(sig) is not handler:
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


def _restore_environ(values):
    os.environ.clear()
    os.environ.update(values)


def _entries():
    entries = [
        ("environment variables", lambda: dict(os.environ), _restore_environ),
        ("sys.path", lambda: list(sys.path), lambda value: sys.path.__setitem__(slice(None), value)),
        ("working directory", os.getcwd, os.chdir),
        ("umask", _umask, lambda value: os.umask(int(value, 8))),
        ("signal handlers", _signal_handlers, _restore_signal_handlers),
        ("interval timer", _timers, _restore_timers),
        ("warnings filters", lambda: list(warnings.filters),
         lambda value: warnings.filters.__setitem__(slice(None), value)),
        ("NumPy error state", np.geterr, lambda value: np.seterr(**value)),
        ("NumPy print options", np.get_printoptions, lambda value: np.set_printoptions(**value)),
    ]
    if torch is None:
        return entries
    entries += [
        ("torch default dtype", torch.get_default_dtype, torch.set_default_dtype),
        ("torch default device", lambda: str(torch.get_default_device()), torch.set_default_device),
        ("torch grad mode", torch.is_grad_enabled, torch.set_grad_enabled),
        ("torch inference mode", torch.is_inference_mode_enabled, _set_inference_mode),
        ("torch CPU autocast", lambda: (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")),
         lambda value: (torch.set_autocast_enabled("cpu", value[0]), torch.set_autocast_dtype("cpu", value[1]))),
        ("torch thread count", torch.get_num_threads, torch.set_num_threads),
        ("torch inter-op thread count", torch.get_num_interop_threads, torch.set_num_interop_threads),
        ("torch float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        ("torch deterministic algorithms",
         lambda: (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
         lambda value: torch.use_deterministic_algorithms(value[0], warn_only=value[1])),
        ("torch flush-denormal", _flush_denormal_enabled, torch.set_flush_denormal),
        ("torch anomaly detection", torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        ("torch TF32 matmul flag", lambda: torch.backends.cuda.matmul.allow_tf32,
         lambda value: setattr(torch.backends.cuda.matmul, "allow_tf32", value)),
        ("torch reduced-precision reduction flags",
         lambda: (torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
                  torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
         lambda value: (setattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", value[0]),
                        setattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", value[1]))),
        ("torch cuDNN flags", lambda: (torch.backends.cudnn.allow_tf32, torch.backends.cudnn.deterministic,
                                       torch.backends.cudnn.benchmark),
         lambda value: (setattr(torch.backends.cudnn, "allow_tf32", value[0]),
                        setattr(torch.backends.cudnn, "deterministic", value[1]),
                        setattr(torch.backends.cudnn, "benchmark", value[2]))),
    ]
    return entries


def snapshot() -> dict:
    """Every entry's current value, by name (an entry that cannot be read is left out)."""
    values = {}
    for name, read, _ in _entries():
        try:
            values[name] = read()
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


def describe_change(name, before, after) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted({*before, *after} - {key for key in before if key in after and before[key] == after[key]},
                      key=str)
        shown = ", ".join(str(getattr(key, "name", key)) for key in keys[:3])
        return f"{name} ({shown}{', ...' if len(keys) > 3 else ''})"
    if isinstance(before, list) and isinstance(after, list):
        return f"{name} ({len(before)} -> {len(after)} entries)" if len(before) != len(after) else f"{name} (reordered)"
    return f"{name} {_short(before)} -> {_short(after)}"


def compare_and_restore(baseline: dict) -> list[str]:
    """Name every entry that differs from ``baseline`` and put it back."""
    changes = []
    for name, read, restore in _entries():
        if name not in baseline:
            continue
        try:
            now = read()
            changed = now != baseline[name]
        except Exception as error:
            changes.append(f"{name} (now unreadable: {type(error).__name__})")
            continue
        if not changed:
            continue
        changes.append(describe_change(name, baseline[name], now))
        try:
            restore(baseline[name])
        except Exception as error:
            changes.append(f"(could not restore {name}: {type(error).__name__}: {error})")
    return changes
