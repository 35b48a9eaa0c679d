"""Reading a snapshot file back, trusting nothing in it (the format: :mod:`.snapshot`).

Reading executes nothing from the file: no pickles, and every size is checked before
anything of that size is allocated. The path must name a regular file (opened without
blocking, so that a FIFO or a device is refused, not waited on). ``meta`` is bounded
(:data:`.snapshot.MAX_META_BYTES`, nested at most :data:`MAX_JSON_DEPTH` deep) and
validated completely first, including a cap on the total number of elements
(:data:`.snapshot.MAX_TOTAL_ELEMENTS`); then each member's zip entry size and ``.npy``
header must agree with ``meta`` before its data is read; a payload must unpack to exactly
the size its dtype and shape need (:func:`.encoding.decode`, which never unpacks more);
then the hash must match. Every problem is a :class:`SnapshotError` with one line naming
the file. Formats 1 and 2 are read.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import numpy.lib.format as npy

from posenc_spec.text import one_line

from . import encoding
from .encoding import (
    MOST_RATIO,
    PREDICTED_DTYPES,
    EncodingError,
    decode_blocks,
    most_stored_bytes,
    unpacked_bytes,
)
from .predict import ANGLE_DTYPES, FUNCTIONS, OPERATIONS, Prediction, rows_of
from .records import (
    CONTAINERS,
    MAX_DIMENSIONS,
    MAX_JSON_DEPTH,
    RecordedArray,
    RecordedCall,
    Snapshot,
    SnapshotError,
    check_meta,
)
from .snapshot import (
    FORMAT,
    MAX_META_BYTES,
    MAX_NPY_HEADER,
    MAX_TOTAL_ELEMENTS,
    READ_VERSIONS,
    as_path,
    file_dtype,
    hash_of_document,
    little_endian_bytes,
    update_member_hash,
)
from .ulp import DTYPES, bfloat16_values, holding_dtype

_MEMBER_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_TOP_KEYS = {"format", "format_version", "meta", "calls", "sha256"}
_CALL_KEYS = {"label", "args", "outputs", "raised"}
_REFERENCE_KEYS = {1: {"member", "dtype", "shape", "container"},
                   2: {"member", "dtype", "shape", "container", "stored", "predictor"}}
_PREDICTOR_KEYS = {"rows_arg", "offset", "scale", "functions", "angle_dtype", "operation"}
_HEX64 = re.compile(r"[0-9a-f]{16}")
_NPY_PREFIX = 16  # the magic string, the version and the header length before the header
# Deflate codes a match of at most 258 bytes as at least a bit of length code and a bit of distance code.
DEFLATE_MOST_RATIO = 258 * 8 // 2


def read_snapshot(path, expect_api: str | None = None) -> Snapshot:
    """The snapshot in ``path``, checked as the module docstring says; with ``expect_api``, a
    snapshot recorded for another API is refused."""
    with opened_snapshot(path, expect_api) as snapshot:
        return snapshot.whole()


@contextlib.contextmanager
def opened_snapshot(path, expect_api: str | None = None):
    """``path`` open as a :class:`SnapshotFile`: its metadata checked, its arrays not yet read."""
    path = as_path(path)
    if expect_api is not None and not isinstance(expect_api, str):
        raise TypeError(f"expect_api must be a str or None, got {expect_api!r}")
    with _open_regular(path) as stream:
        try:
            archive = zipfile.ZipFile(stream)
        except zipfile.BadZipFile:
            raise SnapshotError(f"snapshot {path}: {_why_not_zip(stream)}") from None
        except (NotImplementedError, ValueError, EOFError) as error:  # e.g. a damaged version field
            raise SnapshotError(f"snapshot {path} is damaged: {one_line(error)}") from None
        except OSError as error:
            raise SnapshotError(f"snapshot {path} cannot be read: {one_line(error.strerror or error)}") from None
        with archive:
            with _damage_said(path):
                snapshot = SnapshotFile(archive, path, expect_api, os.fstat(stream.fileno()).st_size)
            yield snapshot


@contextlib.contextmanager
def _damage_said(path: Path):
    """What zipfile, zlib and NumPy raise on a damaged file, as one line naming ``path``."""
    try:
        yield
    except SnapshotError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError,
            RuntimeError) as error:
        raise SnapshotError(f"snapshot {path} is damaged: {one_line(error)}") from None


def _open_regular(path: Path):
    """``path`` opened for reading, once it is known to be a regular file: opened without
    blocking (a FIFO with no writer would block an ordinary open), then checked with fstat."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise SnapshotError(f"snapshot {path} does not exist") from None
    except OSError as error:
        raise SnapshotError(f"snapshot {path} cannot be read: {one_line(error.strerror or error)}") from None
    mode = os.fstat(handle).st_mode
    if not stat.S_ISREG(mode):
        os.close(handle)
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        raise SnapshotError(f"snapshot {path} is not a file: it is {kind}" if kind != "not a regular file"
                            else f"snapshot {path} is not a regular file")
    return os.fdopen(handle, "rb")


def _why_not_zip(stream) -> str:
    stream.seek(0)
    start = stream.read(4)
    if not start:
        return "the file is empty"
    if start == b"PK\x03\x04":
        return "truncated or damaged: the zip directory at its end is missing"
    return "not a .npz snapshot (not a zip file)"


def json_depth(text: bytes) -> int:
    """How deeply the JSON ``text`` nests arrays and objects (brackets inside strings do not count)."""
    codes = np.frombuffer(text, dtype=np.uint8)
    backslash = codes == ord("\\")
    # A quote after an odd run of backslashes is part of the string: the length of the run
    # ending at each position is its index less that of the last other character before it.
    position = np.arange(codes.size)
    last_other = np.maximum.accumulate(np.where(backslash, -1, position))
    escaped = np.zeros(codes.size, dtype=bool)
    escaped[1:] = backslash[:-1] & ((position[:-1] - last_other[:-1]) % 2 == 1)
    quote = codes == ord('"')
    inside = np.cumsum(quote & ~escaped) % 2 == 1  # the closing quote counts as inside: it is no bracket
    step = np.zeros(codes.size, dtype=np.int64)
    step[np.isin(codes, (ord("["), ord("{")))] = 1
    step[np.isin(codes, (ord("]"), ord("}")))] = -1
    step[inside] = 0
    return int(np.cumsum(step).max(initial=0))


class SnapshotFile:
    """An open snapshot whose metadata is checked: ``meta``, ``api``, ``calls`` (the JSON of
    its calls), and its arrays read a block at a time (:meth:`blocks`) or whole
    (:meth:`whole`). The content hash covers every array: :meth:`check_hash` once they are
    read; the arrays streamed in the order the calls name them are hashed as they pass."""

    def __init__(self, archive: zipfile.ZipFile, path: Path, expect_api: str | None, file_size: int):
        self.archive, self.path = archive, path
        self.entries: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            if info.filename in self.entries:
                raise self.fail(f"member {info.filename} appears twice")
            self.entries[info.filename] = info
        packed = sum(info.compress_size for info in self.entries.values())
        if packed > file_size:
            raise self.fail(f"its members claim {packed} bytes of a file of {file_size}")
        if "meta.npy" not in self.entries:
            raise self.fail("no meta member: not a posenc-spec snapshot")
        meta_entry = self.entries["meta.npy"]
        document = _document(self._read_whole(meta_entry, "uint8", None), self.fail)
        self.members = _Members(self.fail, document["format_version"])
        for i, call in enumerate(document["calls"]):
            self.members.check_call(call, f"calls[{i}]")
        if expect_api is not None and document["meta"]["api"] != expect_api:
            raise self.fail(f"recorded for the {document['meta']['api']} API, checked as {expect_api}")
        expected = {f"{name}.npy" for name in self.members.declared} | {"meta.npy"}
        missing, extra = sorted(expected - set(self.entries)), sorted(set(self.entries) - expected)
        if missing:
            raise self.fail(f"member {missing[0]} is missing")
        if extra:
            raise self.fail(f"unexpected member {extra[0]}")
        self.recorded_hash = document.pop("sha256")
        self.document, self.calls, self.meta = document, document["calls"], document["meta"]
        self.rows = {ref["member"]: call["args"][ref["predictor"]["rows_arg"]] for call in self.calls
                     for ref in call["outputs"] or () if ref.get("predictor")}
        self._order = list(self.members.declared)
        self._hashed, self._hash_broken, self._digest = 0, False, hash_of_document(document)
        self._data_starts: dict[str, int] = {}

    @property
    def api(self) -> str:
        return self.meta["api"]

    def fail(self, problem: str) -> SnapshotError:
        return SnapshotError(f"snapshot {self.path}: {problem}")

    def blocks(self, ref: dict, hashed: bool = True):
        """The array ``ref`` (an array reference of :attr:`calls`) flat in C order, as held, at
        most :data:`.encoding.BLOCK_ELEMENTS` elements at a time."""
        name = ref["member"]
        in_order = hashed and not self._hash_broken and self._order[self._hashed:self._hashed + 1] == [name]
        self._hash_broken = self._hash_broken or hashed  # until the member is hashed to its end
        dtype, shape = self.members.declared[name]
        if in_order:
            update_member_hash(self._digest, name, math.prod(shape) * holding_dtype(dtype).itemsize)
        with _damage_said(self.path):
            for block in self._decoded(ref, dtype, shape):
                if in_order:
                    self._digest.update(little_endian_bytes(block))
                yield block
        if in_order:
            self._hashed, self._hash_broken = self._hashed + 1, False

    def whole(self) -> Snapshot:
        """The snapshot, every array read whole and the hash checked."""
        arrays = {}
        for call in self.calls:
            for ref in [*call["args"], *(call["outputs"] or ())]:
                if ref.get("kind", "array") == "array":
                    dtype, shape = self.members.declared[ref["member"]]
                    values = np.empty(math.prod(shape), dtype=holding_dtype(dtype))
                    filled = 0
                    for block in self.blocks(ref):
                        values[filled:filled + block.size] = block
                        filled += block.size
                    arrays[ref["member"]] = values.reshape(shape)
        self.check_hash()
        try:
            return _snapshot(self.document, arrays)
        except (TypeError, ValueError) as error:
            raise self.fail(one_line(error)) from None

    def check_hash(self) -> None:
        """The content hash against the arrays: those hashed as they streamed past, or, where
        they were read out of order or in part, every array read once more."""
        digest = self._digest
        if self._hash_broken or self._hashed != len(self._order):
            digest = hash_of_document(self.document)
            for name in self._order:
                dtype, shape = self.members.declared[name]
                update_member_hash(digest, name, math.prod(shape) * holding_dtype(dtype).itemsize)
                for block in self.blocks(self.members.references[name], hashed=False):
                    digest.update(little_endian_bytes(block))
        if digest.hexdigest() != self.recorded_hash:
            raise self.fail("content hash mismatch: the file was changed after it was written")

    def _decoded(self, ref: dict, dtype: str, shape: tuple):
        name = ref["member"]
        info = self.entries[f"{name}.npy"]
        if self.members.version == 1:
            yield from self._plain_blocks(info, dtype, shape)
            return
        stored = ref["stored"]
        start = self._data_start(info, "uint8", (stored,))

        def open_payload():
            stream = self.archive.open(info)
            stream.read(start)
            return stream

        predict = self._prediction(ref) if ref["predictor"] else None
        try:
            yield from decode_blocks(open_payload, dtype, shape, predict)
        except EncodingError as error:
            raise self.fail(f"member {name}: {error}") from None

    def _plain_blocks(self, info: zipfile.ZipInfo, dtype: str, shape: tuple):
        """A format-1 member's array: its ``.npy`` data, a block at a time."""
        stored = file_dtype(dtype)
        start, left = self._data_start(info, dtype, shape), math.prod(shape)
        with self.archive.open(info) as stream:
            stream.read(start)
            while left:
                count = min(left, encoding.BLOCK_ELEMENTS)
                buffer = _read_exactly(stream, count * stored.itemsize, info.filename, self.fail, count == left)
                yield np.frombuffer(buffer, dtype=stored).astype(holding_dtype(dtype))
                left -= count
            if not math.prod(shape):
                _read_exactly(stream, 0, info.filename, self.fail, True)

    def _prediction(self, ref: dict):
        """``predict`` of :func:`.encoding.decode_blocks` for a predicted array: its rows from the
        call's argument (an int n: 0 .. n-1; an array: its values, read alongside)."""
        predictor, rows_ref = ref["predictor"], self.rows[ref["member"]]
        offset, scale = (struct.unpack(">d", bytes.fromhex(predictor[key]))[0] for key in ("offset", "scale"))
        if rows_ref["kind"] == "int":
            step = encoding.BLOCK_ELEMENTS
            source = (np.arange(start, min(start + step, rows_ref["value"]), dtype=np.float64)
                      for start in range(0, rows_ref["value"], step))
        else:
            bfloat = rows_ref["dtype"] == "bfloat16"
            source = ((bfloat16_values(block) if bfloat else block).astype(np.float64)
                      for block in self.blocks(rows_ref, hashed=False))
        pending = np.empty(0)

        def next_rows(count: int) -> Prediction:
            nonlocal pending
            while pending.size < count:
                pending = np.concatenate([pending, next(source)])
            values, pending = pending[:count], pending[count:]
            return Prediction(rows_of(values, offset, scale), columns, predictor["functions"],
                              predictor["angle_dtype"], predictor["operation"])

        def predict(found_columns: np.ndarray):
            nonlocal columns
            columns = found_columns
            return next_rows

        columns = None
        return predict

    def _data_start(self, info: zipfile.ZipInfo, dtype: str, shape: tuple) -> int:
        """Where a member's data starts, once its entry and ``.npy`` header agree with ``dtype`` and ``shape``."""
        if info.filename not in self._data_starts:
            with self.archive.open(self._checked_entry(info, dtype, shape)) as stream:
                _read_npy_header(stream, info.filename, file_dtype(dtype), dtype, shape, self.fail)
                start = stream.tell()
            data_bytes = math.prod(shape) * file_dtype(dtype).itemsize
            if info.file_size - start != data_bytes:
                raise self.fail(f"member {info.filename} holds {info.file_size - start} bytes of data where its "
                                f"header needs {data_bytes}")
            self._data_starts[info.filename] = start
        return self._data_starts[info.filename]

    def _checked_entry(self, info: zipfile.ZipInfo, dtype: str, shape) -> zipfile.ZipInfo:
        """``info``, once its zip entry may hold ``dtype`` ``shape`` (None: the meta member, at
        most MAX_META_BYTES): not encrypted, stored or deflated, no larger than that with a
        header, and no more unpacked bytes per packed one than its compression method makes."""
        name, fail = info.filename, self.fail
        if info.flag_bits & 0x1:
            raise fail(f"member {name} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise fail(f"member {name} uses compression method {info.compress_type}, not stored or deflated")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise fail(f"member {name} is stored, yet claims {info.file_size} bytes in {info.compress_size}")
        if info.file_size > DEFLATE_MOST_RATIO * info.compress_size:
            raise fail(f"member {name} claims to unpack to {info.file_size} bytes from {info.compress_size}: "
                       f"deflate unpacks to at most {DEFLATE_MOST_RATIO} bytes per byte")
        most_bytes = (MAX_META_BYTES if shape is None else math.prod(shape)) * file_dtype(dtype).itemsize
        if info.file_size > most_bytes + MAX_NPY_HEADER + _NPY_PREFIX:
            raise fail(f"member {name} unpacks to {info.file_size} bytes, more than its "
                       f"{most_bytes} bytes of data and a header")
        return info

    def _read_whole(self, info: zipfile.ZipInfo, dtype: str, shape) -> bytes:
        """A small member's data whole (the meta member: ``shape`` None, read from its header)."""
        with self.archive.open(self._checked_entry(info, dtype, shape)) as stream:
            shape = _read_npy_header(stream, info.filename, file_dtype(dtype), dtype, shape, self.fail)
            data_bytes = math.prod(shape) * file_dtype(dtype).itemsize
            if info.file_size - stream.tell() != data_bytes:
                raise self.fail(f"member {info.filename} holds {info.file_size - stream.tell()} bytes of data "
                                f"where its header needs {data_bytes}")
            return bytes(_read_exactly(stream, data_bytes, info.filename, self.fail, True))


def _document(text: bytes, fail) -> dict:
    """The JSON of the meta member, its nesting bounded before it is parsed, then checked
    in everything but its calls."""
    # Levels beyond meta's own cap: the document, "meta", and a call's references and predictor.
    if (depth := json_depth(text)) > MAX_JSON_DEPTH + 2:
        raise fail(f"meta is nested {depth} levels deep, more than the {MAX_JSON_DEPTH + 2} a snapshot has")
    try:
        document = json.loads(text.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise fail(f"meta is not UTF-8 JSON ({one_line(error)})") from None
    _check_header(document, fail)
    return document


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _check_header(document, fail) -> None:
    """Everything in the JSON but the calls: format, version, keys, hash syntax, ``meta``."""
    if not isinstance(document, dict):
        raise fail("meta is not a JSON object")
    if document.get("format") != FORMAT:
        raise fail(f"not a posenc-spec snapshot (format {document.get('format')!r})")
    version = document.get("format_version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise fail(f"format version {version!r}; this posenc-spec reads versions "
                   f"{', '.join(map(str, READ_VERSIONS))}: record the snapshot again with this version")
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

    def __init__(self, fail, version: int):
        self.fail, self.version = fail, version
        self.declared: dict[str, tuple[str, tuple]] = {}
        self.references: dict[str, dict] = {}
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
            self.check_reference(output, f"{where}.outputs[{j}]", _REFERENCE_KEYS[self.version])
            if self.version > 1 and output["predictor"] is not None:
                self.check_predictor(output, call["args"], f"{where}.outputs[{j}].predictor")

    def check_argument(self, arg, where: str) -> None:
        kind = arg.get("kind") if isinstance(arg, dict) else None
        if kind == "array":
            self.check_reference(arg, where, _REFERENCE_KEYS[self.version] | {"kind"})
            if self.version > 1 and arg["predictor"] is not None:
                raise self.fail(f"{where}: an argument has no predictor")
        elif kind == "int" and set(arg) == {"kind", "value"} and type(arg["value"]) is int:
            return
        elif not (kind == "float" and set(arg) == {"kind", "bits"} and isinstance(arg["bits"], str)
                  and _HEX64.fullmatch(arg["bits"])):
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
        self.total += math.prod(shape)
        if self.total > MAX_TOTAL_ELEMENTS:
            raise fail(f"{where}: the arrays declare {self.total} elements in all, "
                       f"more than the cap {MAX_TOTAL_ELEMENTS}")
        if self.version > 1:
            predicted = ref["predictor"] is not None
            if predicted and (dtype not in PREDICTED_DTYPES or len(shape) != 2 or 0 in shape):
                raise fail(f"{where}: a predicted array must be a float32 or float64 table, not {dtype} {shape}")
            most = most_stored_bytes(dtype, tuple(shape), predicted)
            if type(ref["stored"]) is not int or not 0 < ref["stored"] <= most:
                raise fail(f"{where}: stored size {ref['stored']!r} is not an int in [1, {most}] "
                           f"for {dtype} {tuple(shape)}")
            unpacked = unpacked_bytes(dtype, tuple(shape), predicted)
            if unpacked > MOST_RATIO * ref["stored"]:
                raise fail(f"{where}: {ref['stored']} stored bytes cannot unpack to the {unpacked} of "
                           f"{dtype} {tuple(shape)}: LZMA2 unpacks to at most {MOST_RATIO} bytes per byte")
        self.declared[name] = (dtype, tuple(shape))
        self.references[name] = ref

    def check_predictor(self, ref, args: list, where: str) -> None:
        predictor, fail = ref["predictor"], self.fail
        if not isinstance(predictor, dict) or set(predictor) != _PREDICTOR_KEYS:
            raise fail(f"{where} must be null or an object with the keys {sorted(_PREDICTOR_KEYS)}")
        index = predictor["rows_arg"]
        if type(index) is not int or not 0 <= index < len(args):
            raise fail(f"{where}: rows_arg {index!r} is not the index of one of the call's {len(args)} arguments")
        rows = args[index]
        count = rows["value"] if rows["kind"] == "int" else rows["shape"][0] if (
            rows["kind"] == "array" and len(rows["shape"]) == 1 and not rows["dtype"].startswith("complex")) else None
        if count != ref["shape"][0]:
            raise fail(f"{where}: argument {index} does not give the table's {ref['shape'][0]} rows")
        for key in ("offset", "scale"):
            if not isinstance(predictor[key], str) or not _HEX64.fullmatch(predictor[key]):
                raise fail(f"{where}: {key} is not 16 hex digits: {predictor[key]!r}")
        functions = predictor["functions"]
        if (not isinstance(functions, str) or len(functions) != ref["shape"][1]
                or not set(functions) <= set(FUNCTIONS)):
            raise fail(f"{where}: functions must be {ref['shape'][1]} of the letters {FUNCTIONS!r}")
        if predictor["angle_dtype"] not in ANGLE_DTYPES or predictor["operation"] not in OPERATIONS:
            raise fail(f"{where}: angle_dtype must be one of {', '.join(ANGLE_DTYPES)} and operation one of "
                       f"{', '.join(OPERATIONS)}")


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


def _read_exactly(stream, size: int, name: str, fail, last: bool) -> bytearray:
    """``size`` bytes; if ``last``, then the end of the member (reading to the end makes zipfile check the CRC)."""
    buffer = bytearray(size)
    view, filled = memoryview(buffer), 0
    while filled < size:
        count = stream.readinto(view[filled:])
        if not count:
            raise fail(f"member {name} is truncated")
        filled += count
    if last and stream.read(1):
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
