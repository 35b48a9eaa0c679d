"""Targets that exhaust what their process may take: memory, processes, the reply channel.

Each must fail one ``call[...]`` with a reason naming the limit, and leave nothing
behind: the gate, and the next target, carry on. The fork bomb is bounded
(``FORK_BOMB_SIZE`` processes that exit after ``FORK_BOMB_SLEEP`` seconds), so that a gate
that failed to stop it could not harm the machine.
"""

from __future__ import annotations

import itertools
import json
import os
import time

import numpy as np
from forged import reply_socket
from hostile_tables import vaswani

from posenc_spec.gate.child.protocol import MAGIC, PREFIX

CHUNK_BYTES = 64 * 2**20
FORK_BOMB_SIZE = 40
FORK_BOMB_SLEEP = 30.0
# What announces_huge_reply claims to send: far beyond any table the grid asks for.
ANNOUNCED_BYTES = 2**30
_CALLS = itertools.count()


def grows_without_bound(num_positions, dim):
    """On its first call reserves memory in 64 MiB arrays until the allocation fails; the
    other calls return the correct table.

    Verdict: does not conform; ``call[50x8]`` fails naming the memory limit."""
    if next(_CALLS) == 0:
        hoard = []
        while True:
            hoard.append(np.empty(CHUNK_BYTES, dtype=np.uint8))
    return vaswani(num_positions, dim)


def fork_bomb(num_positions, dim):
    """Forks ``FORK_BOMB_SIZE`` sleeping processes, appending each pid to the file that
    ``POSENC_HOSTILE_PIDS`` names, then sleeps itself.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-processes limit, and
    every process it forked is gone when the gate returns."""
    with open(os.environ["POSENC_HOSTILE_PIDS"], "a") as record:
        for _ in range(FORK_BOMB_SIZE):
            pid = os.fork()
            if pid == 0:
                time.sleep(FORK_BOMB_SLEEP)
                os._exit(0)
            record.write(f"{pid}\n")
            record.flush()
    time.sleep(FORK_BOMB_SLEEP)
    return vaswani(num_positions, dim)


def oversized_result(num_positions, dim):
    """Returns 64 times the rows asked for (honestly: the child measures it).

    Verdict: does not conform; ``call[50x8]`` fails: more than the call's largest legitimate result."""
    return np.zeros((64 * num_positions, dim), np.float32)


def announces_huge_reply(num_positions, dim):
    """Writes a reply header announcing ``ANNOUNCED_BYTES`` of data (and sends none), then
    returns the correct table.

    Verdict: does not conform; ``call[50x8]`` fails naming the size, and the gate never
    reserves memory for it."""
    header = {"op": "result", "id": 0, "status": "ok", "tuple": False, "state": [], "nbytes": [ANNOUNCED_BYTES],
              "arrays": [{"dtype": "float32", "shape": [ANNOUNCED_BYTES // 4], "description": "huge"}]}
    text = json.dumps(header).encode()
    os.write(reply_socket(), PREFIX.pack(MAGIC, len(text)) + text)
    return vaswani(num_positions, dim)


SPREAD_PROCESSES = 4
SPREAD_BYTES = 200 * 2**20  # each: under the suite's per-process 512 MiB, together over it
SPREAD_SLEEP = 10.0
THREAD_STORM = 64


def _hold(seconds: float) -> None:
    """Sleep in the call for ``seconds``: what a target holds meanwhile is watched."""
    time.sleep(seconds)


def spreads_memory_over_processes(num_positions, dim):
    """Forks ``SPREAD_PROCESSES`` processes that each fill ``SPREAD_BYTES`` (every page
    touched) and sleep: each is within the per-process memory limit, all together are not.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-memory limit."""
    for _ in range(SPREAD_PROCESSES):
        if os.fork() == 0:
            block = np.ones(SPREAD_BYTES, dtype=np.uint8)
            _hold(SPREAD_SLEEP + float(block[-1]))
            os._exit(0)
    _hold(SPREAD_SLEEP)
    return vaswani(num_positions, dim)


def keeps_memory_files(num_positions, dim):
    """Writes ``SPREAD_PROCESSES`` memory-only files (``memfd``) of ``SPREAD_BYTES`` each,
    keeps them open and unmapped (no process's resident memory shows them), and sleeps.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-memory limit."""
    chunk = b"\1" * 2**20
    kept = []
    for index in range(SPREAD_PROCESSES):
        descriptor = os.memfd_create(f"posenc-hostile-{index}")
        for _ in range(SPREAD_BYTES // len(chunk)):
            os.write(descriptor, chunk)
        kept.append(descriptor)
    _hold(SPREAD_SLEEP)
    return vaswani(num_positions, dim)


def starts_threads(num_positions, dim):
    """Starts ``THREAD_STORM`` threads that sleep, more than the suite's process limit.

    Verdict: does not conform; ``call[50x8]`` fails naming the --max-processes limit (a
    thread counts as a process), whether or not the gate runs as root."""
    import threading

    for _ in range(THREAD_STORM):
        threading.Thread(target=_hold, args=(SPREAD_SLEEP,), daemon=True).start()
    _hold(SPREAD_SLEEP)
    return vaswani(num_positions, dim)


def writes_a_huge_file(num_positions, dim):
    """Writes a file of 300 MiB into the folder ``POSENC_HOSTILE_SCRATCH`` names, over the
    default 256 MiB file-size limit.

    Verdict: does not conform; ``call[50x8]`` fails naming the file-size limit."""
    chunk = b"\0" * 2**20
    with open(os.path.join(os.environ["POSENC_HOSTILE_SCRATCH"], f"huge-{os.getpid()}"), "wb") as handle:
        for _ in range(300):
            handle.write(chunk)
    return vaswani(num_positions, dim)
