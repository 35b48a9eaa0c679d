"""Snapshot files: an exact round trip, and every damaged or hostile file refused in one line."""

from __future__ import annotations

import errno
import io
import json
import math
import os
import pathlib
import tracemalloc
import zipfile

import numpy as np
import pytest
import torch

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.regression import (
    RecordedArray,
    RecordedCall,
    Snapshot,
    SnapshotError,
    SnapshotExistsError,
    encoding,
    read_snapshot,
    snapshot_meta,
    write_snapshot,
)
from posenc_spec.regression import snapshot as snapshot_module
from posenc_spec.regression import snapshot_reader as reader_module
from posenc_spec.regression.records import MAX_DIMENSIONS
from posenc_spec.regression.snapshot import FORMAT, FORMAT_VERSION, MAX_TOTAL_ELEMENTS, content_hash
from posenc_spec.regression.ulp import DTYPES

FIRST_OUTPUT = "call0_out0.npy"


def _array(rng, dtype: str, shape) -> np.ndarray:
    """Seeded values of ``dtype``; float arrays carry a NaN with a payload, -0.0 and -inf."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape) * 1e3
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    values = values.astype(dtype)
    if values.size >= 3 and values.dtype.kind == "f":
        flat = values.reshape(-1)
        flat[:3] = [-0.0, -np.inf, np.nan]
        flat.view(f"u{flat.itemsize}")[2] |= 1  # a NaN payload
    return values


def _snapshot(target="pkg.mod:fn", api="table") -> Snapshot:
    """Every dtype (bfloat16 from torch), both containers, int and float arguments, an empty and a
    0-d array, a raised call."""
    rng = np.random.default_rng(20240229)
    numpy_outputs = tuple(RecordedArray(_array(rng, dtype, (6, 5)), dtype) for dtype in DTYPES if dtype != "bfloat16")
    steps = torch.from_numpy(_array(rng, "float32", (16,)))
    return Snapshot(snapshot_meta(target, api, seed=20240229, grid=["50x8", "timesteps"]), (
        RecordedCall("50x8", (50, 8), (RecordedArray(_array(rng, "float32", (50, 8)), "float32"),)),
        RecordedCall("float32:16x4", (RecordedArray.of(steps), 4),
                     (RecordedArray.of(torch.from_numpy(_array(rng, "float64", (16, 4)))),)),
        RecordedCall("bfloat16", (RecordedArray.of(steps.to(torch.bfloat16)), 1.5, -0.0),
                     (RecordedArray.of(torch.linspace(-3, 3, 12, dtype=torch.bfloat16).reshape(3, 4)),)),
        RecordedCall("numpy", (2**62, -(2**63)), numpy_outputs),
        RecordedCall("empty", (0, 8), (RecordedArray(np.zeros((0, 8), np.float32), "float32"),
                                       RecordedArray(np.array(2.5), "float64"))),
        RecordedCall("50x7", (50, 7), None, "ValueError"),
    ))


@pytest.fixture()
def written(tmp_path) -> pathlib.Path:
    return write_snapshot(tmp_path / "snap.npz", _snapshot())


# -- the round trip ------------------------------------------------------------------------------


def test_round_trip_keeps_every_bit(tmp_path):
    """Every dtype, container, argument and the raised call come back bit for bit."""
    original = _snapshot()
    read = read_snapshot(write_snapshot(tmp_path / "snap.npz", original), expect_api="table")
    assert read.meta == original.meta and len(read.calls) == len(original.calls)
    for before, after in zip(original.calls, read.calls, strict=True):
        assert after == before, f"call {before.label!r} changed in the round trip"
    bf16_call = read.calls[2]
    assert math.copysign(1.0, bf16_call.args[2]) == -1.0, "the sign of -0.0 was lost"
    tensor = bf16_call.outputs[0].to_value()
    expected = torch.linspace(-3, 3, 12, dtype=torch.bfloat16).reshape(3, 4)
    assert tensor.dtype == torch.bfloat16 and torch.equal(tensor.view(torch.int16), expected.view(torch.int16))
    assert isinstance(read.calls[3].outputs[0].to_value(), np.ndarray) and read.calls[5].raised == "ValueError"


def test_the_file_is_a_plain_npz_with_a_json_meta(written):
    """NumPy opens the file without pickles; ``meta`` is UTF-8 JSON naming the format, the
    members (each a uint8 payload of the size it declares) and the numeric environment."""
    with np.load(written, allow_pickle=False) as archive:
        document = json.loads(archive["meta"].tobytes().decode("utf-8"))
        members = set(archive.files) - {"meta"}
        first = archive[FIRST_OUTPUT.removesuffix(".npy")]
    assert (document["format"], document["format_version"]) == (FORMAT, FORMAT_VERSION)
    assert document["meta"]["api"] == "table" and document["meta"]["created"].endswith("+00:00")
    assert {"torch_cpu_capability", "numpy_simd", "cpu_flags", "blas"} <= set(document["meta"]["environment"])
    referenced = {ref["member"] for call in document["calls"]
                  for ref in call["args"] + (call["outputs"] or []) if "member" in ref}
    stored = document["calls"][0]["outputs"][0]["stored"]
    assert referenced == members and first.dtype == np.uint8 and first.shape == (stored,)


def _sinusoid_snapshot(dtype: str) -> Snapshot:
    """A vaswani table of ``dtype`` with a NaN with a payload, -0.0, +-inf and a value far
    from its prediction; and the same table moved by 0.5, which no member predicts."""
    table = oracle.table(300, 64).astype(dtype)
    flat = table.reshape(-1)
    flat[[5, 77, 78, 79, 80]] = [np.nan, -0.0, np.inf, -np.inf, 123.0]
    flat.view(f"u{flat.itemsize}")[5] |= 3  # a NaN payload
    return Snapshot(snapshot_meta("pkg.mod:fn", "table"), (
        RecordedCall("300x64", (300, 64), (RecordedArray(table, dtype),)),
        RecordedCall("moved", (300, 64), (RecordedArray(table + np.array(0.5, dtype), dtype),)),
    ))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_predicted_table_comes_back_bit_for_bit(tmp_path, dtype):
    """A sinusoidal table is stored as offsets from its prediction, special values included,
    in a small part of its raw size; a table no member predicts is stored as its bits."""
    original = _sinusoid_snapshot(dtype)
    path = write_snapshot(tmp_path / "snap.npz", original)
    read = read_snapshot(path)
    for before, after in zip(original.calls, read.calls, strict=True):
        assert after == before, f"{dtype} call {before.label!r} changed in the round trip"
    with np.load(path, allow_pickle=False) as archive:
        document = json.loads(archive["meta"].tobytes())
    predictors = [call["outputs"][0]["predictor"] for call in document["calls"]]
    assert predictors[0] is not None and predictors[0]["functions"] == "sc" * 32 and predictors[1] is None
    assert document["calls"][0]["outputs"][0]["stored"] < 300 * 64 * np.dtype(dtype).itemsize // 20


def test_format_1_files_are_still_read(tmp_path):
    """A file of format 1 (plain .npy members, deflated; the versions as its environment)
    reads as the snapshot it holds."""
    original = _snapshot()
    members = {}
    calls = []
    for i, call in enumerate(original.calls):
        def reference(array, name):
            members[name] = array.values.astype(array.values.dtype.newbyteorder("<"))
            return {"member": name, "dtype": array.dtype, "shape": list(array.values.shape),
                    "container": array.container}
        calls.append({"label": call.label,
                      "args": [{"kind": "array", **reference(a, f"call{i}_arg{j}")} if isinstance(a, RecordedArray)
                               else {"kind": "float", "bits": snapshot_module.float_bits(a)} if isinstance(a, float)
                               else {"kind": "int", "value": a} for j, a in enumerate(call.args)],
                      "outputs": None if call.outputs is None else [
                          reference(a, f"call{i}_out{j}") for j, a in enumerate(call.outputs)],
                      "raised": call.raised})
    meta = {**original.meta, "environment": {"posenc_spec": "0.2.0", "platform": "linux-x86_64"}}
    document = {"format": FORMAT, "format_version": 1, "meta": meta, "calls": calls}
    document["sha256"] = content_hash(document, members)
    path = tmp_path / "old.npz"
    np.savez_compressed(path, meta=np.frombuffer(json.dumps(document).encode(), np.uint8), **members)
    read = read_snapshot(path)
    assert read.meta == meta and read.calls == original.calls


def test_existing_path_needs_force(written):
    """A second write to the same path is refused; with force it replaces the file whole."""
    with pytest.raises(SnapshotExistsError, match=r"snapshot .*snap\.npz exists; pass force=True"):
        write_snapshot(written, _snapshot(target="other:fn"))
    write_snapshot(written, _snapshot(target="other:fn"), force=True)
    assert read_snapshot(written).meta["target"] == "other:fn"
    assert sorted(path.name for path in written.parent.iterdir()) == ["snap.npz"], "a temporary file was left"


def test_file_mode_follows_the_umask(tmp_path):
    """The file is created with 0o666 less the umask, like any file the user writes."""
    previous = os.umask(0o027)
    try:
        path = write_snapshot(tmp_path / "snap.npz", _snapshot())
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_file_no_reader_would_accept_is_not_written(tmp_path, monkeypatch):
    """The reader's caps on meta and on the number of elements hold for writing too, so a
    snapshot that was written can be read. The caps are lowered to keep the test small."""
    monkeypatch.setattr(snapshot_module, "MAX_TOTAL_ELEMENTS", 928)
    with pytest.raises(SnapshotError, match="929 elements, more than the 928 a reader accepts"):
        write_snapshot(tmp_path / "big.npz", _snapshot())
    monkeypatch.undo()
    monkeypatch.setattr(snapshot_module, "MAX_META_BYTES", 100)
    with pytest.raises(SnapshotError, match="its metadata takes .* bytes, more than the 100 a reader accepts"):
        write_snapshot(tmp_path / "big.npz", _snapshot())
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_named(tmp_path):
    """Writing into a folder that does not exist names the folder."""
    with pytest.raises(SnapshotError, match=r"cannot write snapshot .*: folder .*no-such-folder does not exist"):
        write_snapshot(tmp_path / "no-such-folder" / "snap.npz", _snapshot())


def test_unwritable_folder_is_named(tmp_path, monkeypatch):
    """A folder without write permission. Root ignores permissions, so there the refusal the
    kernel gives everyone else is reproduced at the one call that creates the file."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):
        real_open = os.open

        def refusing_open(path, flags, mode=0o777, **kwargs):
            if pathlib.Path(path).parent == folder:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_open(path, flags, mode, **kwargs)

        monkeypatch.setattr(snapshot_module.os, "open", refusing_open)
    with pytest.raises(SnapshotError, match=r"cannot write snapshot .*: folder .*read-only is not writable"):
        write_snapshot(folder / "snap.npz", _snapshot())
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda: RecordedArray(np.zeros(3), "float32"), TypeError, "values hold float64 where float32"),
    (lambda: RecordedArray(np.zeros(3, np.uint16), "bfloat16", "jax"), ValueError, "container must be one of"),
    (lambda: RecordedCall("a", (True,), None, "ValueError"), TypeError, "must be ints, floats or RecordedArrays"),
    (lambda: RecordedCall("a", (1,), (), "ValueError"), ValueError, "outputs or raised, not both"),
    (lambda: RecordedCall("a\nb", (1,), ()), ValueError, "label must be 1 to 200 printable"),
    (lambda: Snapshot(snapshot_meta("m:f", "table"), (RecordedCall("a", (), ()),) * 2), ValueError,
     "'a' appears twice"),
    (lambda: Snapshot({**snapshot_meta("m:f", "table"), "ratio": math.nan}, ()), ValueError,
     r"meta\['ratio'\] must be finite"),
    (lambda: Snapshot({"target": "m:f"}, ()), ValueError, r"meta\['api'\] must be a str"),
    (lambda: RecordedArray.of([1.0]), TypeError, "value must be a NumPy array or a torch tensor, got list"),
    (lambda: RecordedArray.of(np.zeros(2, dtype=object)), ValueError, "dtype must be one of"),
])
def test_the_data_model_refuses_what_a_file_cannot_hold(make, error, message):
    """Wrong holding dtypes, unknown containers, bools as ints, a call both raising and returning,
    multi-line or duplicate labels, non-finite or missing metadata: refused when built."""
    with pytest.raises(error, match=message):
        make()


# -- damaged and hostile files --------------------------------------------------------------------


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _npy(array, allow_pickle=False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def _repack(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _edit_members(edit):
    def corrupt(path):
        members = _members(path)
        edit(members)
        _repack(path, members)
    return corrupt


def _edit_meta(edit):
    def change(members):
        document = json.loads(np.load(io.BytesIO(members["meta.npy"])).tobytes())
        edit(document)
        members["meta.npy"] = _npy(np.frombuffer(json.dumps(document).encode(), np.uint8))
    return _edit_members(change)


def _set_output_shape(shape):
    def edit(document):
        document["calls"][0]["outputs"][0]["shape"] = shape
    return _edit_meta(edit)


class _TouchesAFileWhenUnpickled:
    """Unpickling this creates ``marker``: proof, by its absence, that nothing was unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def _pickle_member(path):
    marker = path.parent / "unpickled"
    payload = np.array([_TouchesAFileWhenUnpickled(marker)], dtype=object)
    _edit_members(lambda members: members.update({FIRST_OUTPUT: _npy(payload, allow_pickle=True)}))(path)


def _payload(members, name=FIRST_OUTPUT) -> bytes:
    return np.load(io.BytesIO(members[name])).tobytes()


def _set_payload(members, payload: bytes, name=FIRST_OUTPUT) -> None:
    """Replace a member's payload, and its stored size in meta to match (the hash stays)."""
    members[name] = _npy(np.frombuffer(payload, np.uint8))
    document = json.loads(np.load(io.BytesIO(members["meta.npy"])).tobytes())
    for call in document["calls"]:
        for ref in call["args"] + (call["outputs"] or []):
            if ref.get("member") == name.removesuffix(".npy"):
                ref["stored"] = len(payload)
    members["meta.npy"] = _npy(np.frombuffer(json.dumps(document).encode(), np.uint8))


def _changed_value(members):
    values = encoding.decode(_payload(members), "float32", (50, 8))
    values[7, 3] = np.nextafter(values[7, 3], np.float32(np.inf))
    _set_payload(members, encoding.encode(values, "float32", None))


def _bomb(members):
    """A payload that unpacks to 1 MiB of zeros where its shape holds 1600 bytes."""
    _set_payload(members, encoding.encode(np.zeros(2**18, np.float32), "float32", None))


def _nested(depth: int):
    def edit(document):
        value = 0
        for _ in range(depth):
            value = [value]
        document["meta"]["deep"] = value
    return edit


def _flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x55
    path.write_bytes(bytes(data))


CORRUPTIONS = {
    "truncated": (lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]), "truncated"),
    "not a zip": (lambda path: path.write_text("posenc\n"), r"not a \.npz snapshot \(not a zip file\)"),
    "empty": (lambda path: path.write_bytes(b""), "the file is empty"),
    "flipped byte": (_flip_a_byte, "damaged|header|hash mismatch|not a .npy|unpacks to|bytes of data"),
    "changed value": (_edit_members(_changed_value), "hash mismatch: the file was changed after it was written"),
    "pickle member": (_pickle_member, "member call0_out0.npy holds pickled Python objects; refused"),
    "extra member": (_edit_members(lambda m: m.update({"evil.npy": _npy(np.zeros(1))})), "unexpected member evil.npy"),
    "missing member": (_edit_members(lambda m: m.pop(FIRST_OUTPUT)), "member call0_out0.npy is missing"),
    "no meta": (_edit_members(lambda m: m.pop("meta.npy")), "no meta member: not a posenc-spec snapshot"),
    "huge dimension": (_set_output_shape([2**40]), r"shape \[1099511627776\] is not a list of at most"),
    "huge total": (_set_output_shape([2**14, 2**14]), f"more than the cap {MAX_TOTAL_ELEMENTS}"),
    "negative dimension": (_set_output_shape([-1, 8]), "is not a list of at most"),
    "too many dimensions": (_set_output_shape([1] * (MAX_DIMENSIONS + 1)), "is not a list of at most"),
    "header disagrees": (_edit_members(lambda m: m.update({FIRST_OUTPUT: _npy(np.zeros((8, 50), np.float32))})),
                         r"header says float32 \(8, 50\), its metadata uint8 \(\d+,\)"),
    "other format version": (_edit_meta(lambda d: d.update(format_version=3)),
                             "format version 3; this posenc-spec reads versions 1, 2: record the snapshot again"),
    "payload unpacks too far": (_edit_members(_bomb), "call0_out0: it unpacks to more than the 1600 bytes"),
    "payload truncated": (_edit_members(lambda m: _set_payload(m, _payload(m)[: len(_payload(m)) // 2])),
                          "call0_out0: it unpacks to .* bytes where its dtype and shape need 1600|does not end"),
    "payload damaged": (_edit_members(lambda m: _set_payload(m, bytes(len(_payload(m))))),
                        "call0_out0: its compressed data is damaged|unpacks to"),
    "huge stored size": (_edit_meta(lambda d: d["calls"][0]["outputs"][0].update(stored=2**40)),
                         r"stored size 1099511627776 is not an int in \[1, \d+\]"),
    "nested too deep": (_edit_meta(_nested(200)), "meta is nested 202 levels deep, more than the 34"),
    "predictor of a vector": (_edit_meta(lambda d: d["calls"][1]["args"][0].update(predictor={})),
                              "a predicted array must be a float32 or float64 table, not float32 \\[16\\]"),
    "predictor of other rows": (_edit_meta(lambda d: d["calls"][0]["outputs"][0].update(predictor={
        "rows_arg": 1, "offset": "0" * 16, "scale": "3ff0000000000000", "functions": "sc" * 4,
        "angle_dtype": "float32", "operation": "mul"})), "argument 1 does not give the table's 50 rows"),
    "predicted empty table": (_edit_meta(lambda d: d["calls"][0]["outputs"][0].update(shape=[2**26, 0], predictor={
        "rows_arg": 0, "offset": "0" * 16, "scale": "3ff0000000000000", "functions": "", "angle_dtype": "float32",
        "operation": "mul"})), r"a predicted array must be a float32 or float64 table, not float32 \[67108864, 0\]"),
    "other format": (_edit_meta(lambda d: d.update(format="something-else")), "not a posenc-spec snapshot"),
    "object dtype": (_edit_meta(lambda d: d["calls"][0]["outputs"][0].update(dtype="object")),
                     "dtype 'object' is not one of"),
    "duplicate label": (_edit_meta(lambda d: d["calls"][1].update(label="50x8")), "label '50x8' appears twice"),
    "bool as int": (_edit_meta(lambda d: d["calls"][0]["args"][0].update(value=True)), r"calls\[0\].args\[0\] is not"),
    "meta not text": (_edit_members(lambda m: m.update({"meta.npy": _npy(np.zeros(3))})),
                      r"member meta.npy is float64 \(3,\), not UTF-8 text"),
    "meta not JSON": (_edit_members(lambda m: m.update({"meta.npy": _npy(np.frombuffer(b"\xff{", np.uint8))})),
                      "meta is not UTF-8 JSON"),
    "NaN in meta": (_edit_members(lambda m: m.update({"meta.npy": _npy(np.frombuffer(b'{"a": NaN}', np.uint8))})),
                    "meta is not UTF-8 JSON"),
}


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_damaged_files_are_refused_in_one_line(written, corruption):
    """Each problem is a SnapshotError whose single line names the file and what is wrong."""
    corrupt, message = CORRUPTIONS[corruption]
    corrupt(written)
    with pytest.raises(SnapshotError, match=message) as caught:
        read_snapshot(written)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(f"snapshot {written}"), text
    assert not (written.parent / "unpickled").exists(), "reading unpickled an object"


def test_missing_file_is_named(tmp_path):
    """Reading a path that does not exist names it."""
    with pytest.raises(SnapshotError, match=r"snapshot .*absent\.npz does not exist"):
        read_snapshot(tmp_path / "absent.npz")


def test_another_api_is_refused(tmp_path):
    """A snapshot of the timesteps API is not checked against a table target."""
    path = write_snapshot(tmp_path / "steps.npz", _snapshot(api="timesteps"))
    with pytest.raises(SnapshotError, match="recorded for the timesteps API, checked as table"):
        read_snapshot(path, expect_api="table")


def test_a_zip_bomb_is_refused_before_it_is_unpacked(written):
    """A member that unpacks far beyond what its metadata declares is refused from its zip entry,
    before any of it is decompressed: reading allocates a small part of its size."""
    bomb_bytes = 64 * 2**20
    members = _members(written)
    with zipfile.ZipFile(written, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if name != FIRST_OUTPUT:
                archive.writestr(name, data)
        with archive.open(FIRST_OUTPUT, "w", force_zip64=True) as stream:
            stream.write(members[FIRST_OUTPUT][:128])  # the genuine header
            zeros = bytes(2**20)
            for _ in range(bomb_bytes // len(zeros)):
                stream.write(zeros)
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotError, match=f"member {FIRST_OUTPUT} unpacks to"):
            read_snapshot(written)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < bomb_bytes // 16, f"reading allocated {peak} bytes"


def test_a_payload_bomb_is_refused_unpacking_no_more_than_its_size(written):
    """A payload of a few hundred bytes that unpacks to 1 MiB where its shape holds 1600
    bytes: the reader stops at 1600 and allocates a small part of the bomb."""
    _edit_members(_bomb)(written)
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotError, match="call0_out0: it unpacks to more than the 1600 bytes"):
            read_snapshot(written)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**18, f"reading allocated {peak} bytes"


@pytest.mark.parametrize("kind", ["FIFO", "device", "folder"])
def test_only_regular_files_are_read_and_nothing_blocks(tmp_path, kind):
    """A FIFO with no writer (which an ordinary open waits on forever), a device, a folder:
    refused at once, in one line naming what the path is."""
    import threading

    path = {"device": pathlib.Path(os.devnull), "folder": tmp_path}.get(kind, tmp_path / "pipe.npz")
    if kind == "FIFO":
        os.mkfifo(path)
    caught = []
    reading = threading.Thread(target=lambda: caught.append(pytest.raises(SnapshotError, read_snapshot, path)),
                               daemon=True)
    reading.start()
    reading.join(timeout=10)
    assert not reading.is_alive(), f"reading the {kind} {path} blocked"
    assert f"is not a file: it is a {kind.lower()}" in str(caught[0].value).lower().replace("a fifo", "a fifo")


def test_metadata_beyond_the_cap_is_refused(written, monkeypatch):
    """The reader's cap on the meta member holds before the JSON is read (lowered here)."""
    monkeypatch.setattr(reader_module, "MAX_META_BYTES", 100)
    with pytest.raises(SnapshotError, match=r"member meta.npy .*of at most 100 bytes|meta.npy unpacks to"):
        read_snapshot(written)
