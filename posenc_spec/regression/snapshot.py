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

Reading (:func:`read_snapshot`) executes nothing from the file: no pickles, and every size
is checked before anything of that size is allocated. ``meta`` is bounded
(:data:`MAX_META_BYTES`) and validated completely first, including a cap on the total
number of elements (:data:`MAX_TOTAL_ELEMENTS`); then each member's zip entry size and
``.npy`` header must agree with ``meta`` before its data is read; then the hash must
match. Every problem is a :class:`SnapshotError` with one line naming the file.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import re
import secrets
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import numpy.lib.format as npy

from posenc_spec.environment import environment

from . import (
    CONTAINERS,
    MAX_DIMENSIONS,
    RecordedArray,
    RecordedCall,
    Snapshot,
    SnapshotError,
    SnapshotExistsError,
    check_meta,
    one_line,
)
from .ulp import DTYPES, holding_dtype

FORMAT = "posenc-spec-snapshot"
FORMAT_VERSION = 1
MAX_META_BYTES = 4 * 2**20  # a grid of a few hundred calls needs a few tens of KiB
MAX_TOTAL_ELEMENTS = 2**27  # 0.5 GiB of float32; the gate's default grid records about 5.3e6 per target
MAX_NPY_HEADER = 10_000  # numpy's own default bound for parsing a header
_MEMBER_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_TOP_KEYS = {"format", "format_version", "meta", "calls", "sha256"}


def snapshot_meta(target: str, api: str, **extra) -> dict:
    """The metadata of a new snapshot: target, api, the time now (ISO 8601, UTC), the environment."""
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return {"target": target, "api": api, "created": created, "environment": environment(), **extra}


# -- writing -------------------------------------------------------------------------------------


def _canonical(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def _file_dtype(dtype: str) -> np.dtype:
    return holding_dtype(dtype).newbyteorder("<")


def _content_hash(document: dict, members: dict[str, np.ndarray]) -> str:
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
        members[name] = np.asarray(array.values, dtype=_file_dtype(array.dtype), order="C")  # keeps 0-d arrays 0-d
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
    document["sha256"] = _content_hash(document, members)
    return document, members


def write_snapshot(path, snapshot: Snapshot, force: bool = False) -> Path:
    """Write ``snapshot`` to ``path`` (an ``.npz``) atomically; refuse an existing file unless ``force``.

    The file appears whole or not at all: it is written beside ``path`` under a temporary
    name (created with mode 0o666 less the umask) and renamed over it.
    """
    path = _as_path(path)
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


def _as_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


# -- reading -------------------------------------------------------------------------------------


def read_snapshot(path, expect_api: str | None = None) -> Snapshot:
    """The snapshot in ``path``, checked as the module docstring says; with ``expect_api``, a
    snapshot recorded for another API is refused."""
    path = _as_path(path)
    if expect_api is not None and not isinstance(expect_api, str):
        raise TypeError(f"expect_api must be a str or None, got {expect_api!r}")
    if not path.exists():
        raise SnapshotError(f"snapshot {path} does not exist")
    if not path.is_file():
        raise SnapshotError(f"snapshot {path} is not a file")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise SnapshotError(f"snapshot {path}: {_why_not_zip(path)}") from None
    except (NotImplementedError, ValueError, EOFError) as error:  # e.g. a damaged version field
        raise SnapshotError(f"snapshot {path} is damaged: {one_line(error)}") from None
    except OSError as error:
        raise SnapshotError(f"snapshot {path} cannot be read: {one_line(error.strerror or error)}") from None
    with archive:
        try:
            return _read(archive, path, expect_api)
        except SnapshotError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError,
                RuntimeError) as error:
            raise SnapshotError(f"snapshot {path} is damaged: {one_line(error)}") from None


def _why_not_zip(path: Path) -> str:
    with open(path, "rb") as stream:
        start = stream.read(4)
    if not start:
        return "the file is empty"
    if start == b"PK\x03\x04":
        return "truncated or damaged: the zip directory at its end is missing"
    return "not a .npz snapshot (not a zip file)"


def _read(archive: zipfile.ZipFile, path: Path, expect_api: str | None) -> Snapshot:
    def fail(problem: str) -> SnapshotError:
        return SnapshotError(f"snapshot {path}: {problem}")

    entries: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        if info.filename in entries:
            raise fail(f"member {info.filename} appears twice")
        entries[info.filename] = info
    if "meta.npy" not in entries:
        raise fail("no meta member: not a posenc-spec snapshot")
    text = _read_member(archive, entries["meta.npy"], "uint8", None, fail)
    try:
        document = json.loads(text.tobytes().decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise fail(f"meta is not UTF-8 JSON ({one_line(error)})") from None
    members = _check_document(document, fail)
    if expect_api is not None and document["meta"]["api"] != expect_api:
        raise fail(f"recorded for the {document['meta']['api']} API, checked as {expect_api}")
    expected = {f"{name}.npy" for name in members} | {"meta.npy"}
    missing, extra = sorted(expected - set(entries)), sorted(set(entries) - expected)
    if missing:
        raise fail(f"member {missing[0]} is missing")
    if extra:
        raise fail(f"unexpected member {extra[0]}")
    arrays = {name: _read_member(archive, entries[f"{name}.npy"], dtype, shape, fail)
              for name, (dtype, shape) in members.items()}
    recorded_hash = document.pop("sha256")
    if _content_hash(document, arrays) != recorded_hash:
        raise fail("content hash mismatch: the file was changed after it was written")
    try:
        return _snapshot(document, arrays)
    except (TypeError, ValueError) as error:
        raise fail(one_line(error)) from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _check_document(document, fail) -> dict[str, tuple[str, tuple]]:
    """Validate the JSON's shape; the members it names, in order, with their dtype and shape."""
    if not isinstance(document, dict):
        raise fail("meta is not a JSON object")
    if document.get("format") != FORMAT:
        raise fail(f"not a posenc-spec snapshot (format {document.get('format')!r})")
    version = document.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise fail(f"format version {version!r}; this posenc-spec reads version {FORMAT_VERSION}")
    if set(document) != _TOP_KEYS:
        raise fail(f"meta has the keys {sorted(document)}, expected {sorted(_TOP_KEYS)}")
    if not isinstance(document["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", document["sha256"]):
        raise fail(f"sha256 is not 64 hex digits: {document['sha256']!r}")
    try:
        check_meta(document["meta"])
    except (TypeError, ValueError) as error:
        raise fail(one_line(error)) from None
    if not isinstance(document["calls"], list):
        raise fail("calls is not a list")
    members: dict[str, tuple[str, tuple]] = {}
    labels: set = set()
    total = 0

    def reference(ref, where: str, keys: set) -> None:
        nonlocal total
        if not isinstance(ref, dict) or set(ref) != keys:
            raise fail(f"{where} must be an object with the keys {sorted(keys)}")
        name, dtype, shape = ref["member"], ref["dtype"], ref["shape"]
        if not isinstance(name, str) or not _MEMBER_NAME.fullmatch(name) or name == "meta" or name in members:
            raise fail(f"{where}: member name {name!r} is not a new name of 1 to 64 letters, digits or _")
        if dtype not in DTYPES:
            raise fail(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        if ref["container"] not in CONTAINERS:
            raise fail(f"{where}: container {ref['container']!r} is not one of {', '.join(CONTAINERS)}")
        if (not isinstance(shape, list) or len(shape) > MAX_DIMENSIONS
                or not all(type(n) is int and 0 <= n <= MAX_TOTAL_ELEMENTS for n in shape)):
            raise fail(f"{where}: shape {shape!r} is not a list of at most {MAX_DIMENSIONS} "
                       f"ints in [0, {MAX_TOTAL_ELEMENTS}]")
        members[name] = (dtype, tuple(shape))
        total += math.prod(shape)
        if total > MAX_TOTAL_ELEMENTS:
            raise fail(f"{where}: the arrays declare {total} elements in all, more than the cap {MAX_TOTAL_ELEMENTS}")

    reference_keys = {"member", "dtype", "shape", "container"}
    for i, call in enumerate(document["calls"]):
        where = f"calls[{i}]"
        if not isinstance(call, dict) or set(call) != {"label", "args", "outputs", "raised"}:
            raise fail(f"{where} must be an object with the keys args, label, outputs, raised")
        if not isinstance(call["label"], str):
            raise fail(f"{where}: label {call['label']!r} is not a string")
        if call["label"] in labels:
            raise fail(f"{where}: label {call['label']!r} appears twice")
        labels.add(call["label"])
        if not isinstance(call["args"], list) or not (call["outputs"] is None or isinstance(call["outputs"], list)):
            raise fail(f"{where}: args must be a list and outputs a list or null")
        for j, arg in enumerate(call["args"]):
            kind = arg.get("kind") if isinstance(arg, dict) else None
            if kind == "array":
                reference(arg, f"{where}.args[{j}]", reference_keys | {"kind"})
            elif kind == "int" and set(arg) == {"kind", "value"} and type(arg["value"]) is int:
                continue
            elif not (kind == "float" and set(arg) == {"kind", "bits"} and isinstance(arg["bits"], str)
                      and re.fullmatch(r"[0-9a-f]{16}", arg["bits"])):
                raise fail(f"{where}.args[{j}] is not an int, a float (16 hex digits) or an array reference")
        for j, output in enumerate(call["outputs"] or ()):
            reference(output, f"{where}.outputs[{j}]", reference_keys)
    return members


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: str, shape, fail) -> np.ndarray:
    """One ``.npy`` member, after its entry size and header agree with ``dtype`` and ``shape``
    (``shape=None``: the meta member, a 1-D uint8 array of at most MAX_META_BYTES)."""
    name, expected = info.filename, _file_dtype(dtype)
    if info.flag_bits & 0x1:
        raise fail(f"member {name} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise fail(f"member {name} uses compression method {info.compress_type}, not stored or deflated")
    most_bytes = (MAX_META_BYTES if shape is None else math.prod(shape)) * expected.itemsize
    if info.file_size > most_bytes + MAX_NPY_HEADER + 16:  # 16: the magic string and header length
        raise fail(f"member {name} unpacks to {info.file_size} bytes, more than its "
                   f"{most_bytes} bytes of data and a header")
    with archive.open(info) as stream:
        try:
            version = npy.read_magic(stream)
            if version not in ((1, 0), (2, 0)):
                raise fail(f"member {name} is .npy version {version}, not 1.0 or 2.0")
            reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            found_shape, fortran_order, found_dtype = reader(stream, max_header_size=MAX_NPY_HEADER)
        except (ValueError, EOFError) as error:
            if isinstance(error, SnapshotError):
                raise
            raise fail(f"member {name} is not a .npy array ({one_line(error)})") from None
        if found_dtype.hasobject:
            raise fail(f"member {name} holds pickled Python objects; refused")
        if shape is None:
            if found_dtype != expected or len(found_shape) != 1 or found_shape[0] > MAX_META_BYTES:
                raise fail(f"member {name} is {found_dtype} {tuple(found_shape)}, not UTF-8 text "
                           f"(1-D uint8) of at most {MAX_META_BYTES} bytes")
            shape = found_shape
        if found_dtype != expected or tuple(found_shape) != tuple(shape) or fortran_order:
            order = " in Fortran order" if fortran_order else ""
            raise fail(f"member {name}: its header says {found_dtype} {tuple(found_shape)}{order}, "
                       f"its metadata {dtype} {tuple(shape)}")
        data_bytes = math.prod(shape) * expected.itemsize
        if info.file_size - stream.tell() != data_bytes:
            raise fail(f"member {name} holds {info.file_size - stream.tell()} bytes of data where its "
                       f"header needs {data_bytes}")
        buffer = bytearray(data_bytes)
        view, filled = memoryview(buffer), 0
        while filled < data_bytes:
            count = stream.readinto(view[filled:])
            if not count:
                raise fail(f"member {name} is truncated")
            filled += count
        if stream.read(1):  # reading to the end also makes zipfile check the CRC
            raise fail(f"member {name} holds more data than its zip entry declares")
    return np.frombuffer(buffer, dtype=expected).reshape(shape).astype(holding_dtype(dtype), copy=False)


def _snapshot(document: dict, arrays: dict[str, np.ndarray]) -> Snapshot:
    def array(ref: dict) -> RecordedArray:
        return RecordedArray(arrays[ref["member"]], ref["dtype"], ref["container"])

    def argument(arg: dict):
        if arg["kind"] == "array":
            return array(arg)
        if arg["kind"] == "float":
            return struct.unpack(">d", bytes.fromhex(arg["bits"]))[0]
        return arg["value"]

    calls = tuple(RecordedCall(call["label"], tuple(argument(arg) for arg in call["args"]),
                               None if call["outputs"] is None else tuple(array(out) for out in call["outputs"]),
                               call["raised"])
                  for call in document["calls"])
    return Snapshot(document["meta"], calls)
