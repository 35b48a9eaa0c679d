"""Snapshot files: what an encoding returned on a grid of calls, recorded exactly.

A snapshot is one compressed ``.npz`` (the layout of ``numpy.savez_compressed``: a zip of
``.npy`` members). Every array (an input or an output) is a member with a generated name
(``call3_arg0``, ``call3_out0``), stored little-endian in C order; bfloat16 as its uint16
bit pattern. The member ``meta`` is a uint8 array holding UTF-8 JSON::

    {"format": "posenc-spec-snapshot", "format_version": 1,
     "meta": {"target", "api", "created", "environment", ...what the caller adds},
     "calls": [{"label": "300x512",
                "args": [{"kind": "int", "value": 300},
                         {"kind": "float", "bits": "3ff0000000000000"},   (the float64's bits, exact)
                         {"kind": "array", "member", "dtype", "shape", "container"}],
                "outputs": [{"member", "dtype", "shape", "container"}] or null,
                "raised": "ValueError" or null}],
     "sha256": "..."}

``sha256`` is taken over the canonical JSON of the rest of ``meta`` (sorted keys, no
spaces, ASCII) and then, for every member in the order the calls name them, its name, a
zero byte, its data's length as 8 little-endian bytes and its data. It detects corruption
and edits made without recomputing it, not a forger: anyone can recompute it.

Reading it back, trusting nothing in the file: :mod:`.snapshot_reader`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import secrets
import struct
from pathlib import Path

import numpy as np

from posenc_spec.environment import environment
from posenc_spec.text import one_line

from . import (
    RecordedArray,
    Snapshot,
    SnapshotError,
    SnapshotExistsError,
)
from .ulp import holding_dtype

FORMAT = "posenc-spec-snapshot"
FORMAT_VERSION = 1
MAX_META_BYTES = 4 * 2**20  # a grid of a few hundred calls needs a few tens of KiB
MAX_TOTAL_ELEMENTS = 2**27  # 0.5 GiB of float32; the gate's default grid records about 5.3e6 per target
MAX_NPY_HEADER = 10_000  # numpy's own default bound for parsing a header


def snapshot_meta(target: str, api: str, **extra) -> dict:
    """The metadata of a new snapshot: target, api, the time now (ISO 8601, UTC), the environment."""
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return {"target": target, "api": api, "created": created, "environment": environment(), **extra}


# -- writing -------------------------------------------------------------------------------------


def _canonical(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def file_dtype(dtype: str) -> np.dtype:
    return holding_dtype(dtype).newbyteorder("<")


def content_hash(document: dict, members: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256(_canonical(document))
    for name, array in members.items():
        data = np.asarray(array, dtype=array.dtype.newbyteorder("<")).tobytes(order="C")
        digest.update(name.encode("ascii") + b"\0" + len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _layout(snapshot: Snapshot) -> tuple[dict, dict[str, np.ndarray]]:
    """The JSON document (hash included) and the members, in the order the hash takes them."""
    members: dict[str, np.ndarray] = {}

    def reference(array: RecordedArray, name: str) -> dict:
        members[name] = np.asarray(array.values, dtype=file_dtype(array.dtype), order="C")  # keeps 0-d arrays 0-d
        return {"member": name, "dtype": array.dtype, "shape": list(array.values.shape),
                "container": array.container}

    def argument(value, name: str) -> dict:
        if isinstance(value, RecordedArray):
            return {"kind": "array", **reference(value, name)}
        if isinstance(value, float):
            return {"kind": "float", "bits": struct.pack(">d", value).hex()}
        return {"kind": "int", "value": int(value)}

    calls = []
    for i, call in enumerate(snapshot.calls):
        calls.append({
            "label": call.label,
            "args": [argument(value, f"call{i}_arg{j}") for j, value in enumerate(call.args)],
            "outputs": None if call.outputs is None else [
                reference(array, f"call{i}_out{j}") for j, array in enumerate(call.outputs)],
            "raised": call.raised,
        })
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, "meta": snapshot.meta, "calls": calls}
    document["sha256"] = content_hash(document, members)
    return document, members


def write_snapshot(path, snapshot: Snapshot, force: bool = False) -> Path:
    """Write ``snapshot`` to ``path`` (an ``.npz``) atomically; refuse an existing file unless ``force``.

    The file appears whole or not at all: it is written beside ``path`` under a temporary
    name (created with mode 0o666 less the umask) and renamed over it.
    """
    path = as_path(path)
    if not isinstance(snapshot, Snapshot):
        raise TypeError(f"snapshot must be a Snapshot, got {type(snapshot).__name__}")
    folder = path.parent
    if not folder.is_dir():
        raise SnapshotError(f"cannot write snapshot {path}: folder {folder} does not exist")
    if path.exists() and not force:
        raise SnapshotExistsError(f"snapshot {path} exists; pass force=True to replace it")
    document, members = _layout(snapshot)
    text = _canonical(document)
    if len(text) > MAX_META_BYTES:
        raise SnapshotError(f"cannot write snapshot {path}: its metadata takes {len(text)} bytes, "
                            f"more than the {MAX_META_BYTES} a reader accepts")
    total = sum(array.size for array in members.values())
    if total > MAX_TOTAL_ELEMENTS:
        raise SnapshotError(f"cannot write snapshot {path}: {total} elements, more than the "
                            f"{MAX_TOTAL_ELEMENTS} a reader accepts")
    temporary = folder / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except PermissionError:
        raise SnapshotError(f"cannot write snapshot {path}: folder {folder} is not writable") from None
    except OSError as error:
        raise SnapshotError(f"cannot write snapshot {path}: {one_line(error.strerror or error)}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez_compressed(stream, meta=np.frombuffer(text, dtype=np.uint8), **members)
            stream.flush()
            os.fsync(stream.fileno())
        if path.exists() and not force:  # created meanwhile by someone else
            raise SnapshotExistsError(f"snapshot {path} exists; pass force=True to replace it")
        os.replace(temporary, path)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise SnapshotError(f"cannot write snapshot {path}: {one_line(error.strerror or error)}") from None
        raise
    return path


def as_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return Path(path)
