"""Reading a snapshot file back, trusting nothing in it (the format: :mod:`.snapshot`).

Reading executes nothing from the file: no pickles, and every size is checked before
anything of that size is allocated. ``meta`` is bounded (:data:`.snapshot.MAX_META_BYTES`)
and validated completely first, including a cap on the total number of elements
(:data:`.snapshot.MAX_TOTAL_ELEMENTS`); then each member's zip entry size and ``.npy``
header must agree with ``meta`` before its data is read; then the hash must match. Every
problem is a :class:`SnapshotError` with one line naming the file.
"""

from __future__ import annotations

import json
import math
import re
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import numpy.lib.format as npy

from posenc_spec.text import one_line

from . import (
    CONTAINERS,
    MAX_DIMENSIONS,
    RecordedArray,
    RecordedCall,
    Snapshot,
    SnapshotError,
    check_meta,
)
from .snapshot import (
    FORMAT,
    FORMAT_VERSION,
    MAX_META_BYTES,
    MAX_NPY_HEADER,
    MAX_TOTAL_ELEMENTS,
    as_path,
    content_hash,
    file_dtype,
)
from .ulp import DTYPES, holding_dtype

_MEMBER_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_TOP_KEYS = {"format", "format_version", "meta", "calls", "sha256"}
_CALL_KEYS = {"label", "args", "outputs", "raised"}
_REFERENCE_KEYS = {"member", "dtype", "shape", "container"}
_NPY_PREFIX = 16  # the magic string, the version and the header length before the header


def read_snapshot(path, expect_api: str | None = None) -> Snapshot:
    """The snapshot in ``path``, checked as the module docstring says; with ``expect_api``, a
    snapshot recorded for another API is refused."""
    path = as_path(path)
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
    _check_header(document, fail)
    members = _Members(fail)
    for i, call in enumerate(document["calls"]):
        members.check_call(call, f"calls[{i}]")
    if expect_api is not None and document["meta"]["api"] != expect_api:
        raise fail(f"recorded for the {document['meta']['api']} API, checked as {expect_api}")
    expected = {f"{name}.npy" for name in members.declared} | {"meta.npy"}
    missing, extra = sorted(expected - set(entries)), sorted(set(entries) - expected)
    if missing:
        raise fail(f"member {missing[0]} is missing")
    if extra:
        raise fail(f"unexpected member {extra[0]}")
    arrays = {name: _read_member(archive, entries[f"{name}.npy"], dtype, shape, fail)
              for name, (dtype, shape) in members.declared.items()}
    recorded_hash = document.pop("sha256")
    if content_hash(document, arrays) != recorded_hash:
        raise fail("content hash mismatch: the file was changed after it was written")
    try:
        return _snapshot(document, arrays)
    except (TypeError, ValueError) as error:
        raise fail(one_line(error)) from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _check_header(document, fail) -> None:
    """Everything in the JSON but the calls: format, version, keys, hash syntax, ``meta``."""
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


class _Members:
    """The calls' array references, validated one call at a time: ``declared`` maps each
    member name, in the order the calls name them, to its dtype and shape."""

    def __init__(self, fail):
        self.fail = fail
        self.declared: dict[str, tuple[str, tuple]] = {}
        self.labels: set[str] = set()
        self.total = 0

    def check_call(self, call, where: str) -> None:
        fail = self.fail
        if not isinstance(call, dict) or set(call) != _CALL_KEYS:
            raise fail(f"{where} must be an object with the keys {', '.join(sorted(_CALL_KEYS))}")
        if not isinstance(call["label"], str):
            raise fail(f"{where}: label {call['label']!r} is not a string")
        if call["label"] in self.labels:
            raise fail(f"{where}: label {call['label']!r} appears twice")
        self.labels.add(call["label"])
        if not isinstance(call["args"], list) or not (call["outputs"] is None or isinstance(call["outputs"], list)):
            raise fail(f"{where}: args must be a list and outputs a list or null")
        for j, arg in enumerate(call["args"]):
            self.check_argument(arg, f"{where}.args[{j}]")
        for j, output in enumerate(call["outputs"] or ()):
            self.check_reference(output, f"{where}.outputs[{j}]", _REFERENCE_KEYS)

    def check_argument(self, arg, where: str) -> None:
        kind = arg.get("kind") if isinstance(arg, dict) else None
        if kind == "array":
            self.check_reference(arg, where, _REFERENCE_KEYS | {"kind"})
        elif kind == "int" and set(arg) == {"kind", "value"} and type(arg["value"]) is int:
            return
        elif not (kind == "float" and set(arg) == {"kind", "bits"} and isinstance(arg["bits"], str)
                  and re.fullmatch(r"[0-9a-f]{16}", arg["bits"])):
            raise self.fail(f"{where} is not an int, a float (16 hex digits) or an array reference")

    def check_reference(self, ref, where: str, keys: set) -> None:
        fail = self.fail
        if not isinstance(ref, dict) or set(ref) != keys:
            raise fail(f"{where} must be an object with the keys {sorted(keys)}")
        name, dtype, shape = ref["member"], ref["dtype"], ref["shape"]
        if not isinstance(name, str) or not _MEMBER_NAME.fullmatch(name) or name == "meta" or name in self.declared:
            raise fail(f"{where}: member name {name!r} is not a new name of 1 to 64 letters, digits or _")
        if dtype not in DTYPES:
            raise fail(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        if ref["container"] not in CONTAINERS:
            raise fail(f"{where}: container {ref['container']!r} is not one of {', '.join(CONTAINERS)}")
        if (not isinstance(shape, list) or len(shape) > MAX_DIMENSIONS
                or not all(type(n) is int and 0 <= n <= MAX_TOTAL_ELEMENTS for n in shape)):
            raise fail(f"{where}: shape {shape!r} is not a list of at most {MAX_DIMENSIONS} "
                       f"ints in [0, {MAX_TOTAL_ELEMENTS}]")
        self.declared[name] = (dtype, tuple(shape))
        self.total += math.prod(shape)
        if self.total > MAX_TOTAL_ELEMENTS:
            raise fail(f"{where}: the arrays declare {self.total} elements in all, "
                       f"more than the cap {MAX_TOTAL_ELEMENTS}")


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: str, shape, fail) -> np.ndarray:
    """One ``.npy`` member, after its entry size and header agree with ``dtype`` and ``shape``
    (``shape=None``: the meta member, a 1-D uint8 array of at most MAX_META_BYTES)."""
    name, expected = info.filename, file_dtype(dtype)
    if info.flag_bits & 0x1:
        raise fail(f"member {name} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise fail(f"member {name} uses compression method {info.compress_type}, not stored or deflated")
    most_bytes = (MAX_META_BYTES if shape is None else math.prod(shape)) * expected.itemsize
    if info.file_size > most_bytes + MAX_NPY_HEADER + _NPY_PREFIX:
        raise fail(f"member {name} unpacks to {info.file_size} bytes, more than its "
                   f"{most_bytes} bytes of data and a header")
    with archive.open(info) as stream:
        shape = _read_npy_header(stream, name, expected, dtype, shape, fail)
        data_bytes = math.prod(shape) * expected.itemsize
        if info.file_size - stream.tell() != data_bytes:
            raise fail(f"member {name} holds {info.file_size - stream.tell()} bytes of data where its "
                       f"header needs {data_bytes}")
        buffer = _read_exactly(stream, data_bytes, name, fail)
    return np.frombuffer(buffer, dtype=expected).reshape(shape).astype(holding_dtype(dtype), copy=False)


def _read_npy_header(stream, name: str, expected: np.dtype, dtype: str, shape, fail) -> tuple:
    """The member's shape, once its ``.npy`` header agrees with ``dtype`` and ``shape``."""
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
    return tuple(shape)


def _read_exactly(stream, size: int, name: str, fail) -> bytearray:
    """``size`` bytes, then the end of the member (reading to the end makes zipfile check the CRC)."""
    buffer = bytearray(size)
    view, filled = memoryview(buffer), 0
    while filled < size:
        count = stream.readinto(view[filled:])
        if not count:
            raise fail(f"member {name} is truncated")
        filled += count
    if stream.read(1):
        raise fail(f"member {name} holds more data than its zip entry declares")
    return buffer


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
