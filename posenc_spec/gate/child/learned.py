"""Libraries a run imports once: what a target's process imported, and its import in a template.

A target's import and calls often import installed libraries the template has not (a
lazy module of transformers loads a model's code on first call). The sealed child names the
modules that appeared in ``sys.modules`` since its last reply (:class:`NewModules`), those
an installed library's files hold; the gate checks each name
(:mod:`posenc_spec.gate.learned`) and its slot template imports them (:func:`import_learned`)
before the next target's child is forked, so that the next target starts with them as a
long-running program would. No target code runs in the template: only installed modules,
imported by name, and never a module a target of the run is in.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading

from . import attribution
from .memory_words import version_tag
from .site_folders import in_site_folder

# Per reply, beside its other fields within the protocol's 64 KiB header: transformers with a
# model's code is about 2,000 modules, 60 KiB of names. They come in the order their imports
# started, outer modules first, and importing those imports most of the rest.
MAX_NAME_BYTES = 32 * 1024
MAX_NAME_LENGTH = 200


class NewModules:
    """The modules imported in this process since the last :meth:`take`."""

    def __init__(self):
        self.tag = version_tag(sys.modules)  # read first: a change made after it shows at the next take
        self.known = set(sys.modules)

    def take(self) -> list[str]:
        """The names of installed libraries' modules imported since the last call, in the order
        they were imported (none while ``sys.modules`` keeps its version tag)."""
        tag = version_tag(sys.modules)
        if tag is not None and tag == self.tag:
            return []
        self.tag = tag
        names = [name for name in list(sys.modules) if name not in self.known]
        self.known.update(names)
        learned, size = [], 0
        for name in names:
            spec = getattr(sys.modules.get(name), "__spec__", None)
            if (spec is None or not spec.origin or len(name) > MAX_NAME_LENGTH or not attribution.installed(spec)
                    or not in_site_folder(spec.origin)):
                continue
            size += len(name) + 4  # quotes, comma, space
            if size > MAX_NAME_BYTES:
                break
            learned.append(name)
        return learned


def import_learned(names, keep_out) -> dict:
    """Import ``names`` here, in order: ``{"ok": true}``, or ``{"ok": false, "tainted": name}``
    the moment an import also imports a module of ``keep_out`` (a target's own module) or
    leaves a thread running (every child is forked from here: a fork copies one thread, and
    a lock another held stays held; OpenBLAS's pool excepted, which shuts itself down before a
    fork): this process may then fork no more targets. What the
    imports change of the global state is the starting state of every child forked from
    here, as with ``--preload``: the target whose process imported the module first was told
    of it. A module that cannot be imported is left out (each target that imports it is
    told, as before)."""
    keep_out = [module for module in keep_out if module not in sys.modules]  # --preload may have imported some
    threads = _threads() - _blas_pool_threads()
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 -- its importer is told, not the template
            pass
        if any(module in sys.modules for module in keep_out) or _threads() - _blas_pool_threads() > threads:
            return {"ok": False, "tainted": name}
    return {"ok": True}


def _threads() -> int:
    """The threads of this process (Linux; elsewhere Python's own)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


# OpenBLAS (NumPy's and SciPy's own copies among them) starts its pool of threads when loaded
# and shuts it down before every fork (its pthread_atfork handler); a child starts the pool
# again on its first call. Those threads are the one kind a fork does not lose.
_OPENBLAS_THREADS = ("openblas_get_num_threads", "openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                     "scipy_openblas_get_num_threads64_")


def _blas_pool_threads() -> int:
    """The worker threads of the OpenBLAS libraries loaded in this process (Linux)."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return 0
    workers = 0
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)  # loaded already: nothing runs
        except OSError:
            continue
        for symbol in _OPENBLAS_THREADS:
            count = getattr(library, symbol, None)
            if count is not None:
                count.restype = ctypes.c_int
                workers += max(count() - 1, 0)  # the calling thread is one of the pool's
                break
    return workers
