"""What a report or a snapshot was made with, read without importing torch.

:func:`environment` holds the versions a report names. :func:`numeric_environment` adds
what decides the float results of the same code on the CPU, for snapshots
(:mod:`posenc_spec.regression`): two recordings taken where every part of it agrees are
expected to agree bit for bit, and :func:`numeric_differences` names the parts that do not.

- ``torch_cpu_capability``: the vectorised kernels torch dispatches to (``default``,
  ``avx2`` or ``avx512`` on x86-64; torch's float32 ``sin`` gives other bits under each).
  Importing torch to ask it would cost the gate's process about a second, so it is derived
  as torch derives it (``aten/src/ATen/native/DispatchStub.cpp``): ``ATEN_CPU_CAPABILITY``
  when it names one, else ``avx512`` where the CPU has AVX-512 VL, BW, DQ and FMA, ``avx2``
  where it has AVX2 and FMA, else ``default``. ``spec_tests`` checks that the derivation
  agrees with ``torch.backends.cpu.get_cpu_capability()``. None off x86-64 (the CPU flags
  and torch's version stand for it there).
- ``numpy_simd``: NumPy's baseline SIMD features (compiled in) and the dispatched ones it
  found at run time, after ``NPY_DISABLE_CPU_FEATURES`` and ``NPY_ENABLE_CPU_FEATURES``.
- ``blas``: the BLAS NumPy was built with (torch's comes with torch's version).
- ``cpu_flags``: the CPU's SIMD flags (``/proc/cpuinfo`` on Linux: sse*, avx*, fma, f16c,
  amx*, or the ``Features`` of an ARM CPU); libm and the BLAS pick their kernels by them.
- ``libc``, the versions of Python, NumPy and torch, and the platform.
- ``overrides``: the environment variables that change those choices, where set.

It is read once per process, as the gate's template process reads them once when it
starts (numpy and torch choose their kernels when imported).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
from importlib import metadata

from . import __version__

# Variables that change which kernels compute a float result; the effect of the first three
# is recorded itself (torch_cpu_capability, numpy_simd), so they are shown, not compared.
OVERRIDES = ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE",
             "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE")
_SHOWN_ONLY = {"ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES"}
# Parts of the numeric environment that do not decide a float result.
_NOT_COMPARED = {"posenc_spec", "overrides"}
TORCH_CAPABILITIES = ("default", "avx2", "avx512")
MAX_DIFFERENCE = 200  # characters of one difference in a message
_SIMD_FLAG = re.compile(r"(sse|ssse|avx|fma|f16c|amx|xop)\w*")


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict:
    """``{"posenc_spec", "python", "numpy", "torch", "platform"}``."""
    return {
        "posenc_spec": __version__,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "platform": f"{sys.platform}-{platform.machine()}",
    }


@functools.cache
def numeric_environment() -> dict:
    """:func:`environment` and what decides float results here (see the module docstring)."""
    flags = cpu_flags()
    libc, libc_version = platform.libc_ver()
    return {
        **environment(),
        "libc": f"{libc} {libc_version}".strip() or None,
        "torch_cpu_capability": torch_cpu_capability(flags, platform.machine(), os.environ.get("ATEN_CPU_CAPABILITY")),
        "numpy_simd": _numpy_simd(),
        "blas": _numpy_blas(),
        "cpu_flags": flags,
        "overrides": {name: os.environ[name] for name in OVERRIDES if os.environ.get(name)},
    }


def cpu_flags(cpuinfo: str | None = None) -> list[str] | None:
    """The SIMD flags of the first CPU in ``cpuinfo`` (default: ``/proc/cpuinfo``), sorted;
    None where it cannot be read."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as stream:
                cpuinfo = stream.read(1 << 20)
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return sorted({flag for flag in value.split() if _SIMD_FLAG.fullmatch(flag)})
        if name.strip() == "Features":  # ARM: few, and each may choose a kernel
            return sorted(set(value.split()))
    return None


def torch_cpu_capability(flags: list[str] | None, machine: str, override: str | None) -> str | None:
    """torch's CPU capability on x86-64, as torch derives it (see the module docstring)."""
    if machine.lower() not in ("x86_64", "amd64") or flags is None:
        return None
    if override and override.lower() in TORCH_CAPABILITIES:
        return override.lower()
    have = set(flags)
    if {"avx512vl", "avx512bw", "avx512dq", "fma"} <= have:
        return "avx512"
    return "avx2" if {"avx2", "fma"} <= have else "default"


def _numpy_simd() -> dict | None:
    try:
        from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__
    except ImportError:  # another NumPy layout: the version stands for it
        return None
    return {"baseline": list(__cpu_baseline__),
            "dispatched": [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]}


def _numpy_blas() -> str | None:
    try:
        from numpy.__config__ import CONFIG
        blas = CONFIG["Build Dependencies"]["blas"]
    except (ImportError, KeyError, TypeError):
        return None
    return " ".join(str(blas.get(key, "")) for key in ("name", "version")).strip() or None


def numeric_differences(recorded: dict, current: dict) -> list[str]:
    """``"key: recorded -> current"`` (one line, at most ``MAX_DIFFERENCE`` characters: a
    snapshot's environment is the file's word) for every part that decides float results and
    differs (``overrides``: those whose effect is not recorded itself); empty when none does."""
    from .text import one_line

    differences = []
    for key in sorted((set(recorded) | set(current)) - _NOT_COMPARED, key=str):
        if recorded.get(key) != current.get(key):
            differences.append(one_line(f"{key}: {_short(recorded.get(key), current.get(key))}", MAX_DIFFERENCE))
    old, new = ({name: value for name, value in (side.get("overrides") or {}).items() if name not in _SHOWN_ONLY}
                if isinstance(side.get("overrides"), dict) else {"overrides": side.get("overrides")}
                for side in (recorded, current))
    for name in sorted(set(old) | set(new), key=str):
        if old.get(name) != new.get(name):
            differences.append(one_line(f"{name}: {old.get(name, 'unset')} -> {new.get(name, 'unset')}",
                                        MAX_DIFFERENCE))
    return differences


def _short(old, new) -> str:
    """``old -> new``; for two lists, what one has and the other lacks."""
    if isinstance(old, list) and isinstance(new, list):
        gone, added = sorted(set(map(str, old)) - set(map(str, new))), sorted(set(map(str, new)) - set(map(str, old)))
        parts = ([f"without {' '.join(gone)}"] if gone else []) + ([f"with {' '.join(added)}"] if added else [])
        return ", ".join(parts) or "reordered"
    if isinstance(old, dict) and isinstance(new, dict):
        return "; ".join(f"{key} {_short(old.get(key), new.get(key))}" for key in sorted(set(old) | set(new))
                         if old.get(key) != new.get(key))
    return f"{old} -> {new}"
