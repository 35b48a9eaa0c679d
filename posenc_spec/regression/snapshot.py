"""Snapshot files: what an encoding returned on a grid of calls, recorded exactly.

A snapshot is one ``.npz`` (a zip of ``.npy`` members, as ``numpy.savez`` writes them).
Every array (an input or an output) is a member with a generated name (``call3_arg0``,
``call3_out0``): a 1-D uint8 array holding its payload (:mod:`.encoding`: the bits, or the
ULP distances from a prediction of sines and cosines, compressed with LZMA2). The
member ``meta`` is a uint8 array holding UTF-8 JSON::

    {"format": "posenc-spec-snapshot", "format_version": 2,
     "meta": {"target", "api", "created", "environment", ...what the caller adds},
     "calls": [{"label": "300x512",
                "args": [{"kind": "int", "value": 300},
                         {"kind": "float", "bits": "3ff0000000000000"},   (the float64's bits, exact)
                         {"kind": "array", "member", "dtype", "shape", "container", "stored", "predictor"}],
                "outputs": [{"member", "dtype", "shape", "container", "stored", "predictor"}] or null,
                "raised": "ValueError" or null}],
     "sha256": "..."}

``stored`` is the payload's size in bytes; ``predictor`` is null, or how the reader
computes the prediction (:mod:`.predict`): ``{"rows_arg": 0, "offset", "scale"} (the
float64's bits), "functions", "angle_dtype", "operation"}``, the rows being the call's
argument ``rows_arg`` (an int n: 0 .. n-1; a 1-D array: its values). ``environment`` is
:func:`posenc_spec.environment.numeric_environment`.

``sha256`` is taken over the canonical JSON of the rest of ``meta`` (sorted keys, no
spaces, ASCII) and then, for every member in the order the calls name them, its name, a
zero byte, its decoded data's length as 8 little-endian bytes and its decoded data
(little-endian, C order; bfloat16 as its uint16 bits). It detects corruption and edits
made without recomputing it, not a forger: anyone can recompute it. Format 1 stored each
array as a plain ``.npy`` member, deflated, and its environment as
:func:`posenc_spec.environment.environment`; it is still read.

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

from posenc_spec import registry
from posenc_spec.environment import numeric_environment
from posenc_spec.text import one_line

from . import encoding
from .predict import fit
from .records import RecordedArray, Snapshot, SnapshotError, SnapshotExistsError
from .ulp import COMPLEX_PARTS, bfloat16_values, holding_dtype

FORMAT = "posenc-spec-snapshot"
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)
MAX_META_BYTES = 4 * 2**20  # a grid of a few hundred calls needs a few tens of KiB
MAX_TOTAL_ELEMENTS = 2**27  # 0.5 GiB of float32; the gate's default grid records about 5.3e6 per target
MAX_NPY_HEADER = 10_000  # numpy's own default bound for parsing a header


def snapshot_meta(target: str, api: str, **extra) -> dict:
    """The metadata of a new snapshot: target, api, the time now (ISO 8601, UTC), the numeric
    environment."""
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return {"target": target, "api": api, "created": created, "environment": numeric_environment(), **extra}


# -- writing -------------------------------------------------------------------------------------


def _canonical(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def file_dtype(dtype: str) -> np.dtype:
    return holding_dtype(dtype).newbyteorder("<")


def content_hash(document: dict, members: dict[str, np.ndarray]) -> str:
    digest = hash_of_document(document)
    for name, array in members.items():
        data = little_endian_bytes(array)
        update_member_hash(digest, name, len(data))
        digest.update(data)
    return digest.hexdigest()


def hash_of_document(document: dict):
    """The content hash's state after the JSON document (without ``sha256``), before any member."""
    return hashlib.sha256(_canonical(document))


def update_member_hash(digest, name: str, size: int) -> None:
    """What precedes a member's data in the content hash: its name, a zero byte, its size in bytes."""
    digest.update(name.encode("ascii") + b"\0" + size.to_bytes(8, "little"))


def little_endian_bytes(array: np.ndarray) -> bytes:
    """The data of an array as the content hash takes it: little-endian, C order."""
    return np.asarray(array, dtype=array.dtype.newbyteorder("<")).tobytes(order="C")


def _layout(snapshot: Snapshot) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The JSON document (hash included), the payloads and the decoded arrays, both in the
    order the hash takes them."""
    payloads: dict[str, np.ndarray] = {}
    decoded: dict[str, np.ndarray] = {}
    columns = registry.snapshot_columns(snapshot.meta)

    def reference(array: RecordedArray, name: str, args: tuple = ()) -> dict:
        decoded[name] = np.asarray(array.values, dtype=file_dtype(array.dtype), order="C")  # keeps 0-d arrays 0-d
        prediction, predictor = _prediction(array, args, columns)
        payload = encoding.encode(array.values, array.dtype, prediction)
        payloads[name] = np.frombuffer(payload, dtype=np.uint8)
        return {"member": name, "dtype": array.dtype, "shape": list(array.values.shape),
                "container": array.container, "stored": len(payload), "predictor": predictor}

    def argument(value, name: str) -> dict:
        if isinstance(value, RecordedArray):
            return {"kind": "array", **reference(value, name)}
        if isinstance(value, float):
            return {"kind": "float", "bits": float_bits(value)}
        return {"kind": "int", "value": int(value)}

    calls = []
    for i, call in enumerate(snapshot.calls):
        calls.append({
            "label": call.label,
            "args": [argument(value, f"call{i}_arg{j}") for j, value in enumerate(call.args)],
            "outputs": None if call.outputs is None else [
                reference(array, f"call{i}_out{j}", call.args) for j, array in enumerate(call.outputs)],
            "raised": call.raised,
        })
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, "meta": snapshot.meta, "calls": calls}
    document["sha256"] = content_hash(document, decoded)
    return document, payloads, decoded


def float_bits(value: float) -> str:
    return struct.pack(">d", value).hex()


def rows_argument(value) -> np.ndarray | None:
    """The rows a prediction runs over from a call's argument: an int n is 0 .. n-1, a 1-D
    array its values; None for anything else."""
    if isinstance(value, int) and 0 <= value <= MAX_TOTAL_ELEMENTS:
        return np.arange(value, dtype=np.float64)
    if isinstance(value, RecordedArray) and value.values.ndim == 1 and value.dtype not in COMPLEX_PARTS:
        values = bfloat16_values(value.values) if value.dtype == "bfloat16" else value.values
        return values.astype(np.float64)
    return None


def _prediction(array: RecordedArray, args: tuple, columns):
    """The prediction of an output (a float table whose rows the call's first argument
    gives, whose columns ``columns`` says how to make) and its JSON, or ``(None, None)``."""
    if columns is None or array.dtype not in encoding.PREDICTED_DTYPES or array.values.ndim != 2 or not args:
        return None, None
    positions = rows_argument(args[0])
    if positions is None or positions.size != array.values.shape[0]:
        return None, None
    found = fit(array.values, positions, columns.members, columns.scale, columns.offsets)
    if found is None:
        return None, None
    prediction, offset = found
    return prediction, {"rows_arg": 0, "offset": float_bits(offset), "scale": float_bits(columns.scale),
                        "functions": prediction.functions, "angle_dtype": prediction.angle_dtype,
                        "operation": prediction.operation}


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
    document, payloads, decoded = _layout(snapshot)
    text = _canonical(document)
    if len(text) > MAX_META_BYTES:
        raise SnapshotError(f"cannot write snapshot {path}: its metadata takes {len(text)} bytes, "
                            f"more than the {MAX_META_BYTES} a reader accepts")
    total = sum(array.size for array in decoded.values())
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
            np.savez(stream, meta=np.frombuffer(text, dtype=np.uint8), **payloads)
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
