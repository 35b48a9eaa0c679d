"""How a run goes, whatever its targets: lanes, shard, and what each target's child may take."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .values import fail, integer, number, plain


def memory_bytes() -> int:
    """Physical memory of this machine (0 where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# Children together may hold half the machine's memory: the gate itself, the expected
# tables and the rest of a CI job keep the other half.
MEMORY_FRACTION = 0.5
FALLBACK_MEMORY = 4 * 2**30  # where the machine's memory cannot be read
# Processes and threads alike: a table needs one; a worker pool a few dozen, and a BLAS or
# OpenMP library starts a thread per core.
DEFAULT_MAX_PROCESSES = 64 + 2 * usable_cores()
DEFAULT_MAX_FILE_SIZE = 256 * 2**20  # no position encoding writes a file near this
MAX_JOBS = 256
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
          "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40, "tib": 2**40}


def memory_size(name: str, value) -> int:
    """Bytes from an int or text such as ``"4GiB"``, ``"512M"``: at least 64 MiB."""
    value = plain(value)
    if type(value) not in (int, float, str):
        fail(name, "a size such as 4GiB, 512MiB or a number of bytes", value)
    text = str(value).strip().lower().replace(" ", "")
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(digits):]
    if isinstance(value, bool) or unit not in _UNITS or not digits:
        fail(name, "a size such as 4GiB, 512MiB or a number of bytes", value)
    size = number(name, digits, above=0) * _UNITS[unit]
    if not 2**26 <= size <= 2**50:
        fail(name, "a size from 64MiB to 1PiB", value)
    return int(size)


@dataclass(frozen=True)
class RunOptions:
    """How a run goes, whatever its targets: ``jobs`` targets at once, the ``shard`` (K, N)
    of the targets this run takes, what each target may take (memory, processes and
    threads, the size of a file it writes), the modules every child
    is forked with (``preload``), and whether a target's calls stop at its first failure."""

    jobs: int = 1
    shard: tuple[int, int] = (1, 1)
    max_memory: int = FALLBACK_MEMORY
    max_processes: int = DEFAULT_MAX_PROCESSES
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    preload: tuple[str, ...] = ()
    fail_fast: bool = False


_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def preload_modules(name: str, values) -> tuple[str, ...]:
    """Module names from a list of names, each possibly comma-separated (``--preload a,b
    --preload c``), in order, each once."""
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        values = [values]
    modules = []
    for value in values:
        if not isinstance(value, str):
            fail(name, "module names such as transformers.modeling_utils", value)
        for module in (part.strip() for part in value.split(",")):
            if not _MODULE_NAME.fullmatch(module):
                fail(name, "module names such as transformers.modeling_utils", value)
            if module not in modules:
                modules.append(module)
    return tuple(modules)


def run_options(jobs=None, shard=None, max_memory=None, max_processes=None, where: str = "",
                preload=None, fail_fast: bool = False, max_file_size=None, flags: bool = True) -> RunOptions:
    """Validated run options; None takes the default (``jobs``: the usable cores;
    ``max_memory``: half the machine's memory shared by the ``jobs`` children; ``preload``:
    nothing beyond NumPy and torch). ``fail_fast``: each target's calls stop at its first
    failed check. Errors name each option as its flag (``--max-memory``), or as its keyword
    (``max_memory``) without ``flags``."""

    def name(key: str) -> str:
        return where + ("--" + key.replace("_", "-") if flags else key)

    jobs = usable_cores() if jobs is None else integer(name("jobs"), jobs, maximum=MAX_JOBS)
    shard_index, shard_count = 1, 1
    if shard is not None:
        index, slash, count = str(shard).partition("/")
        if not slash:
            fail(name("shard"), "K/N with 1 <= K <= N", shard)
        shard_count = integer(name("shard"), count.strip())
        shard_index = integer(name("shard"), index.strip(), maximum=shard_count)
    if max_memory is None:
        total = memory_bytes()
        memory = int(total * MEMORY_FRACTION / jobs) if total else FALLBACK_MEMORY
    else:
        memory = memory_size(name("max_memory"), max_memory)
    processes = DEFAULT_MAX_PROCESSES if max_processes is None else integer(
        name("max_processes"), max_processes, maximum=4096)
    file_size = DEFAULT_MAX_FILE_SIZE if max_file_size is None else memory_size(name("max_file_size"), max_file_size)
    preload = preload_modules(name("preload"), preload)
    return RunOptions(jobs, (shard_index, shard_count), memory, processes, file_size, preload, bool(fail_fast))
