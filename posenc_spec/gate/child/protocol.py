"""The framed, data-only messages between the gate and its child processes.

A message is a fixed prefix, a header and payloads::

    b"PSG1" | header length (uint32, big-endian) | header (UTF-8 JSON object) | payload bytes

The header's ``"nbytes"`` lists the length of each payload that follows. Nothing is ever
unpickled or evaluated: a header is plain JSON (no NaN or Infinity) of bounded size, and
the reader refuses a payload larger than the caller allows *before* reading it, so a
child can neither run code in the gate nor make it allocate without bound. Every read
has a deadline: a partial or silent reply ends in :class:`ChannelTimeout`, never a hang.

A header over :data:`MAX_HEADER_BYTES` is never sent: :func:`encode_header` raises
:class:`HeaderTooLarge`, and the child sends :func:`in_place_of` its reply instead, so the
gate reports the limit that was hit rather than a process that died.

Both sides import this module; it needs nothing beyond the standard library.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time

MAGIC = b"PSG1"
PREFIX = struct.Struct(">4sI")
MAX_HEADER_BYTES = 1 << 16  # headers carry short texts and shapes; 64 KiB is generous
HEADER_LIMIT = f"the protocol's {MAX_HEADER_BYTES >> 10} KiB"
MAX_PAYLOADS = 16
MAX_FDS = 4


class ChannelError(Exception):
    """The other side broke the protocol: the message is malformed."""


class ChannelClosed(ChannelError):
    """The other side closed its end (it exited or died)."""


class ChannelTimeout(ChannelError):
    """The deadline passed before the whole message arrived."""


class HeaderTooLarge(ValueError):
    """A header longer than :data:`MAX_HEADER_BYTES`: the message was not sent."""

    def __init__(self, size: int):
        super().__init__(f"the reply header of {size} bytes exceeds {HEADER_LIMIT}")
        self.size = size


def in_place_of(reply: dict, problem: HeaderTooLarge) -> dict:
    """A reply within the limits, sent in place of ``reply`` whose header was too large: what
    pairs it with its request (``op``, ``id``, ``token``), the call's result refused
    (``"status": "bad"``) or the import failed (``"ok": false``), and ``problem`` as its message."""
    paired = {key: reply[key] for key in ("op", "id", "token") if key in reply}
    return {**paired, "status": "bad", "ok": False, "message": str(problem)}


def _reject_constant(name):
    raise ValueError(f"{name} is not allowed in a header")


def encode_header(header: dict, payloads=()) -> bytes:
    """Prefix and header of a message whose payloads follow (their lengths go in ``nbytes``)."""
    header = {**header, "nbytes": [memoryview(payload).nbytes for payload in payloads]}
    text = json.dumps(header, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if len(text) > MAX_HEADER_BYTES:
        raise HeaderTooLarge(len(text))
    return PREFIX.pack(MAGIC, len(text)) + text


def send(sock: socket.socket, header: dict, payloads=(), fds=()) -> None:
    """Send one message; ``fds`` travel with the prefix (SCM_RIGHTS)."""
    head = encode_header(header, payloads)
    if fds:
        socket.send_fds(sock, [head], list(fds))
    else:
        sock.sendall(head)
    for payload in payloads:
        view = memoryview(payload)
        if view.nbytes:  # an empty array's view has a zero in its shape, which cast() refuses
            sock.sendall(view.cast("B"))


def remaining(deadline) -> float | None:
    """Seconds left before ``deadline``: a ``time.monotonic()`` moment, None (no end), or an
    object whose ``remaining()`` says (the gate's :class:`~posenc_spec.gate.sandbox.OwnTime`)."""
    if deadline is None:
        return None
    if isinstance(deadline, (int, float)):
        return deadline - time.monotonic()
    return deadline.remaining()


class Reader:
    """Reads messages from one socket, each under a deadline (see :func:`remaining`; None
    waits for ever) and within a payload budget.

    ``on_wait`` (optional) is called about every ``tick`` seconds while waiting; it may
    raise to abandon the read (the gate uses it to watch the child's process count).
    """

    def __init__(self, sock: socket.socket, on_wait=None, tick: float = 0.25):
        self.sock = sock
        self.on_wait = on_wait
        self.tick = tick
        self._fds: list[int] = []

    def _wait(self, deadline):
        while True:
            left = remaining(deadline)
            if left is not None and left <= 0:
                raise ChannelTimeout("no complete reply before the deadline")
            step = self.tick if left is None else min(self.tick, left)
            ready, _, _ = select.select([self.sock], [], [], step)
            if ready:
                return
            if self.on_wait is not None:
                self.on_wait()

    def _read_exact(self, count: int, deadline, with_fds=False) -> bytearray:
        buffer = bytearray(count)
        view = memoryview(buffer)
        done = 0
        while done < count:
            self._wait(deadline)
            try:
                if with_fds and done == 0:
                    data, fds, _flags, _addr = socket.recv_fds(self.sock, count, MAX_FDS)
                    self._fds.extend(fds)
                    got = len(data)
                    view[:got] = data
                else:
                    got = self.sock.recv_into(view[done:], count - done)
            except ConnectionResetError:  # the other side died with our request unread
                got = 0
            if got == 0:
                raise ChannelClosed("the other side closed the channel")
            done += got
        return buffer

    def read(self, deadline=None, max_payload: int = 0, with_fds: bool = False):
        """``(header, payloads, fds)``; :class:`ChannelError` for anything malformed."""
        self._fds = []
        prefix = self._read_exact(PREFIX.size, deadline, with_fds)
        magic, length = PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise ChannelError("malformed reply (bad frame prefix)")
        if length > MAX_HEADER_BYTES:
            raise ChannelError(f"malformed reply (a header of {length} bytes, over {HEADER_LIMIT})")
        raw = self._read_exact(length, deadline)
        try:
            header = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ChannelError("malformed reply (header is not JSON)") from None
        if not isinstance(header, dict):
            raise ChannelError("malformed reply (header is not an object)")
        sizes = header.get("nbytes", [])
        if (not isinstance(sizes, list) or len(sizes) > MAX_PAYLOADS
                or not all(type(size) is int and size >= 0 for size in sizes)):
            raise ChannelError("malformed reply (bad payload sizes)")
        if sum(sizes) > max_payload:
            raise PayloadTooLarge(sum(sizes), max_payload)
        payloads = [self._read_exact(size, deadline) if size else b"" for size in sizes]
        fds, self._fds = self._fds, []
        return header, payloads, fds


class PayloadTooLarge(ChannelError):
    """A reply announced more bytes than the call can legitimately return."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"a reply of {size} bytes, more than the {limit} this call can return")
        self.size, self.limit = size, limit
