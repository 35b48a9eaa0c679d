"""Targets that forge the child's replies: they write frames of their own into the socket
the child answers on (the only socket among the child's descriptors, in /proc/self/fd).

Frames are built with the gate's own protocol module, so they are well formed. The gate
numbers a target's calls 0, 1, ... in the grid's order; the targets count their calls to
claim the right ids. Whatever the frames claim, a target that returns a wrong table must
never conform.
"""

from __future__ import annotations

import itertools
import os
import stat

import numpy as np
from hostile_tables import vaswani

from posenc_spec.gate.child.protocol import MAGIC, PREFIX, encode_header

# The cap the tests declare: forge_whole_run forges the replies of that grid.
DECLARED_MAX_POSITIONS = 64
_CALLS = itertools.count()
_SIZES_SEEN: set = set()


def reply_socket() -> int:
    """The descriptor of the socket the child answers the gate on."""
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISSOCK(os.fstat(fd).st_mode):
                return fd
        except OSError:  # the descriptor listdir itself used
            continue
    raise RuntimeError("no socket among this process's descriptors")


def result_frame(call_id: int, table: np.ndarray) -> bytes:
    """A well-formed ``ok`` reply to call ``call_id`` carrying ``table``."""
    header = {"op": "result", "id": call_id, "status": "ok", "message": "", "tuple": False,
              "arrays": [{"dtype": table.dtype.name, "shape": list(table.shape), "description": "forged"}],
              "state": [], "rng_before": {}, "rng_after": {}}
    data = np.ascontiguousarray(table).tobytes()
    return encode_header(header, [data]) + data


def raised_frame(call_id: int) -> bytes:
    """A well-formed reply saying call ``call_id`` raised (what odd widths must do)."""
    header = {"op": "result", "id": call_id, "status": "raised", "message": "raised ValueError: odd width",
              "exception": "ValueError", "state": [], "rng_before": {}, "rng_after": {}}
    return encode_header(header)


def _write(data: bytes) -> None:
    os.write(reply_socket(), data)


def forge_every_call(num_positions, dim):
    """Writes a reply carrying the correct table for each call, then returns zeros.

    Verdict: does not conform. The child's own reply to call 0 is read as the answer to
    call 1: ``call[50x4]`` fails with "malformed reply"."""
    _write(result_frame(next(_CALLS), vaswani(num_positions, dim)))
    return np.zeros((num_positions, dim), np.float32)


def forge_the_repeat(num_positions, dim):
    """Correct on every call but the last (the determinism repeat, the second call of one
    size), where it writes a reply carrying the correct table and returns zeros.

    Verdict: does not conform (the last table returned is wrong). The gate reads the
    forged frame and never the child's reply that follows it."""
    call_id = next(_CALLS)
    if (num_positions, dim) in _SIZES_SEEN:
        _write(result_frame(call_id, vaswani(num_positions, dim)))
        return np.zeros((num_positions, dim), np.float32)
    _SIZES_SEEN.add((num_positions, dim))
    return vaswani(num_positions, dim)


def forge_whole_run(num_positions, dim):
    """On its first call writes a correct reply for every call of the grid (``raised`` for
    the odd widths), then returns zeros on every call.

    Verdict: does not conform (every table returned is zeros)."""
    if next(_CALLS) == 0:
        from posenc_spec.families.sinusoidal.grid import table_probes

        for call_id, probe in enumerate(table_probes(DECLARED_MAX_POSITIONS)):
            odd = probe.role == "odd"
            _write(raised_frame(call_id) if odd else result_frame(call_id, vaswani(probe.length, probe.width)))
    return np.zeros((num_positions, dim), np.float32)


def garbage_prefix(num_positions, dim):
    """Writes bytes that are no frame, then returns the correct table.

    Verdict: does not conform; ``call[50x8]`` fails with "malformed reply" (bad prefix)."""
    _write(b"this is not a frame of the gate's protocol\n" * 4)
    return vaswani(num_positions, dim)


def garbage_header(num_positions, dim):
    """Writes a well-formed prefix announcing a header that is not JSON, then returns the
    correct table.

    Verdict: does not conform; ``call[50x8]`` fails with "malformed reply" (not JSON)."""
    junk = b"{this is not JSON"
    _write(PREFIX.pack(MAGIC, len(junk)) + junk)
    return vaswani(num_positions, dim)
