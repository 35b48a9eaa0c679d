"""Targets that put memory in ``/dev/shm`` (a tmpfs: its files are memory), where no
process's resident memory shows it, and targets that use it as correct programs do.

Every name a target makes there starts with ``POSENC_HOSTILE_SHM_PREFIX`` (the test's own,
so that it can look for leftovers in the real ``/dev/shm``); ``POSENC_HOSTILE_USERS_FILE``
names a file of the gate's user there that a target must not change. The attackers write
on their first call and hold what they wrote for ``HOLD_SECONDS`` (the gate watches a
target's memory while it waits for a reply); every call returns the correct table.
"""

from __future__ import annotations

import errno
import itertools
import os
import time

from hostile_tables import vaswani

SHARED_MEMORY = "/dev/shm"
TOTAL_BYTES = 800 * 2**20  # over the suite's 512 MiB --max-memory
FILE_BYTES = 64 * 2**20  # under the default 256 MiB --max-file-size
SMALL_FILE_BYTES = 64 * 2**10
CHUNK = b"\1" * 2**20
HOLD_SECONDS = 10.0
_CALLS = itertools.count()


def _name(suffix: str) -> str:
    return os.environ["POSENC_HOSTILE_SHM_PREFIX"] + suffix


def _fill(fd: int, size: int) -> bool:
    """Write ``size`` bytes to ``fd``; False when the file system is full (a private
    ``/dev/shm`` is as large as the memory limit) or refuses the size."""
    try:
        for start in range(0, size, len(CHUNK)):
            os.write(fd, CHUNK[:size - start])
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EFBIG):
            return False
        raise
    return True


def _write_closed_files(count: int, size: int, folder: str = SHARED_MEMORY) -> list[str]:
    """``count`` files of ``size`` bytes under ``folder``, closed; stops when it is full."""
    paths = []
    for index in range(count):
        path = os.path.join(folder, _name(f"-{index}"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        paths.append(path)
        try:
            room = _fill(fd, size)
        finally:
            os.close(fd)
        if not room:
            break
    return paths


def fills_closed_files(num_positions, dim):
    """Writes ``TOTAL_BYTES`` into closed files of ``FILE_BYTES`` under ``/dev/shm`` and holds.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-memory limit, and no
    file is left."""
    if next(_CALLS):
        return vaswani(num_positions, dim)
    _write_closed_files(TOTAL_BYTES // FILE_BYTES, FILE_BYTES)
    time.sleep(HOLD_SECONDS)
    return vaswani(num_positions, dim)


def fills_many_small_files(num_positions, dim):
    """Writes ``TOTAL_BYTES`` into closed files of ``SMALL_FILE_BYTES`` each (thousands of
    them) under ``/dev/shm`` and holds.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-memory limit, and no
    file is left."""
    if next(_CALLS):
        return vaswani(num_positions, dim)
    _write_closed_files(TOTAL_BYTES // SMALL_FILE_BYTES, SMALL_FILE_BYTES)
    time.sleep(HOLD_SECONDS)
    return vaswani(num_positions, dim)


def keeps_unlinked_files_open(num_positions, dim):
    """Writes ``TOTAL_BYTES`` into files under ``/dev/shm``, removes their names and keeps
    them open (no name to find, no mapping to show them) while it holds.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-memory limit."""
    if next(_CALLS):
        return vaswani(num_positions, dim)
    kept = []
    for index in range(TOTAL_BYTES // FILE_BYTES):
        path = os.path.join(SHARED_MEMORY, _name(f"-open-{index}"))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.unlink(path)
        kept.append(fd)
        if not _fill(fd, FILE_BYTES):
            break
    time.sleep(HOLD_SECONDS)
    return vaswani(num_positions, dim)


def moves_files_out(num_positions, dim):
    """Writes ``TOTAL_BYTES`` into closed files under ``/dev/shm`` and tries to take each
    out of it: a hard link in its private folder (``TMPDIR``) with the name under
    ``/dev/shm`` removed, else a rename there; where both are refused, it stays. Then holds.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-memory limit (a move
    out of a tmpfs is refused: another file system), and no file is left."""
    if next(_CALLS):
        return vaswani(num_positions, dim)
    for path in _write_closed_files(TOTAL_BYTES // FILE_BYTES, FILE_BYTES):
        elsewhere = os.path.join(os.environ["TMPDIR"], os.path.basename(path))
        try:
            os.link(path, elsewhere)
            os.unlink(path)
        except OSError:
            try:
                os.rename(path, elsewhere)
            except OSError:
                pass
    time.sleep(HOLD_SECONDS)
    return vaswani(num_positions, dim)


def leaves_a_semaphore(num_positions, dim):
    """On its first call creates a named POSIX semaphore (``sem_open``: a file
    ``sem.<name>`` under ``/dev/shm``) and a ``shm_open`` segment, removes neither; every
    call returns the correct table.

    Verdict: conforms; neither is left under ``/dev/shm`` after its turn."""
    import _multiprocessing
    from multiprocessing import shared_memory

    if next(_CALLS):
        return vaswani(num_positions, dim)
    _multiprocessing.SemLock(1, 1, 1, "/" + _name("-semaphore"), False)  # kind 1: a plain semaphore
    segment = shared_memory.SharedMemory(_name("-segment"), create=True, size=2**16)
    segment.buf[:4] = b"kept"
    segment.close()
    from multiprocessing import resource_tracker

    resource_tracker.unregister(segment._name, "shared_memory")  # left behind on purpose
    return vaswani(num_positions, dim)


def sees_no_earlier_files(num_positions, dim):
    """Returns the correct table while its ``/dev/shm`` holds nothing an earlier target of
    the run made there (a semaphore and segment left behind, the attackers' files), the
    table negated otherwise.

    Verdict: conforms where each target's ``/dev/shm`` starts clean (its own, or a module
    template's that removed what each earlier target added)."""
    prefix = os.environ["POSENC_HOSTILE_SHM_PREFIX"]
    earlier = [name for name in os.listdir(SHARED_MEMORY) if prefix in name and "users-file" not in name]
    return -vaswani(num_positions, dim) if earlier else vaswani(num_positions, dim)


def changes_the_users_file(num_positions, dim):
    """Tries to overwrite, then to remove, the file of the gate's user under ``/dev/shm``
    that ``POSENC_HOSTILE_USERS_FILE`` names, and returns the correct table.

    Verdict: conforms (the table is right); the user's file is as it was."""
    path = os.environ["POSENC_HOSTILE_USERS_FILE"]
    try:
        with open(path, "w") as handle:
            handle.write("changed by a target")
    except OSError:
        pass
    try:
        os.unlink(path)
    except OSError:
        pass
    return vaswani(num_positions, dim)


def shares_memory_correctly(num_positions, dim):
    """Computes the table as a correct program that uses shared memory would: a
    ``multiprocessing.Lock`` (a POSIX semaphore) held while a forked worker writes the table
    into a ``multiprocessing.shared_memory`` segment (``shm_open``), and a torch tensor moved
    to shared memory; everything removed after.

    Verdict: conforms."""
    import multiprocessing
    from multiprocessing import shared_memory

    import numpy as np
    import torch

    table = vaswani(num_positions, dim)
    context = multiprocessing.get_context("fork")
    lock = context.Lock()
    segment = shared_memory.SharedMemory(create=True, size=table.nbytes)
    try:
        shared = np.ndarray(table.shape, table.dtype, buffer=segment.buf)
        worker = context.Process(target=_copy_under_lock, args=(lock, segment.name, table))
        worker.start()
        worker.join()
        with lock:
            result = torch.from_numpy(np.array(shared)).share_memory_()
        del shared
    finally:
        segment.close()
        segment.unlink()
    return result.numpy().copy() if worker.exitcode == 0 else None


def _copy_under_lock(lock, name, table):
    from multiprocessing import shared_memory

    import numpy as np

    segment = shared_memory.SharedMemory(name)
    with lock:
        np.ndarray(table.shape, table.dtype, buffer=segment.buf)[...] = table
    segment.close()
