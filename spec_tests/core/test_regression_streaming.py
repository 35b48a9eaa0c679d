"""Snapshots read a block at a time: ``diff`` agrees with the whole-file comparison, its memory
stays a few blocks, and a file that claims more than its compression can unpack is refused
from its metadata or its zip entry, in one line, before anything of that size is read."""

from __future__ import annotations

import re
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest

from posenc_spec.cli import main
from posenc_spec.regression import (
    RecordedArray,
    RecordedCall,
    Snapshot,
    SnapshotError,
    compare,
    encoding,
    read_snapshot,
    snapshot_meta,
    write_snapshot,
)
from posenc_spec.regression.compare import compare_files, compare_snapshots

from .test_regression_snapshot import (
    _edit_meta,
    _members,
    _payload,
    _repack,
    _set_payload,
    _sinusoid_snapshot,
    _snapshot,
)

SMALL_BLOCK = 1000  # not a multiple of any table's width: blocks of rows and of elements fall apart


@pytest.fixture()
def small_blocks(monkeypatch):
    monkeypatch.setattr(encoding, "BLOCK_ELEMENTS", SMALL_BLOCK)
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", SMALL_BLOCK + 7)


def _swapped(snapshot: Snapshot) -> Snapshot:
    """The same calls in reverse order, each returning the outputs of the call its mirror made
    where their shapes agree (so that a predicted table meets one stored as its bits)."""
    calls = snapshot.calls
    swapped = []
    for call, mirror in zip(calls, reversed(calls), strict=True):
        same = (call.outputs is not None and mirror.outputs is not None and call.raised is None
                and [a.values.shape for a in call.outputs] == [a.values.shape for a in mirror.outputs])
        swapped.append(RecordedCall(call.label, call.args, mirror.outputs if same else call.outputs, call.raised))
    return Snapshot(snapshot.meta, tuple(reversed(swapped)))


@pytest.mark.parametrize(("make", "differs"), [(_snapshot, False), (lambda: _sinusoid_snapshot("float32"), True),
                                               (lambda: _sinusoid_snapshot("float64"), True)],
                         ids=["every-dtype", "f32", "f64"])
def test_streamed_diff_agrees_with_the_whole_comparison(tmp_path, small_blocks, make, differs):
    """Every dtype, predicted tables against tables stored as bits, calls in another order:
    the block-wise comparison of the files finds what comparing the read snapshots finds."""
    original = make()
    old = write_snapshot(tmp_path / "old.npz", original)
    new = write_snapshot(tmp_path / "new.npz", _swapped(original))
    expected = compare_snapshots(read_snapshot(old), read_snapshot(new), max_ulp=3)
    old_meta, new_meta, found = compare_files(old, new, max_ulp=3)
    assert [diff.as_dict() for diff in found] == [diff.as_dict() for diff in expected]
    assert old_meta == original.meta == new_meta
    assert any(not diff.passed for diff in found) == differs


def test_streamed_diff_memory_stays_a_few_blocks(tmp_path, small_blocks, monkeypatch):
    """Two snapshots of 2**21 float32 elements (8 MiB each decoded) compare within a small part
    of one decoded array: blocks of SMALL_BLOCK elements and one LZMA2 dictionary per byte
    plane being read are all that is held (the dictionaries, 8 MiB at most each, are made
    64 KiB here, for writing and reading alike, so that they do not hide the blocks)."""
    monkeypatch.setattr(encoding, "MOST_DICTIONARY", 2**16)
    values = np.zeros(2**21, np.float32)
    values[-1] = 1.0
    for name, array in (("old", values), ("new", np.zeros_like(values))):
        write_snapshot(tmp_path / f"{name}.npz", Snapshot(snapshot_meta("m:f", "table"), (
            RecordedCall("big", (len(array),), (RecordedArray(array, "float32"),)),)))
    del values
    tracemalloc.start()
    try:
        _, _, [diff] = compare_files(tmp_path / "old.npz", tmp_path / "new.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not diff.passed and diff.outputs[0].worst_index == (2**21 - 1,)
    assert peak < 2**21, f"comparing allocated {peak} bytes"


def test_a_damaged_file_is_refused_before_its_calls_are_compared(tmp_path):
    """A value changed without its hash, in a file whose calls come in another order: the
    comparison reads it in that other order, and still says the file was changed."""
    original = _snapshot()
    old = write_snapshot(tmp_path / "old.npz", original)
    new = write_snapshot(tmp_path / "new.npz", Snapshot(original.meta, tuple(reversed(original.calls))))
    assert all(diff.passed for diff in compare_files(old, new)[2])
    _flip_payload_bit(new, "call5_out0.npy")  # the first call's table, the last call of this file
    with pytest.raises(SnapshotError, match="content hash mismatch"):
        compare_files(old, new)


def _flip_payload_bit(path, member: str) -> None:
    """Re-encode ``member`` of ``path`` with one element moved by one ULP (its stored size follows)."""
    members = _members(path)
    values = encoding.decode(_payload(members, member), "float32", (50, 8))
    values[7, 3] = np.nextafter(values[7, 3], np.float32(np.inf))
    _set_payload(members, encoding.encode(values, "float32", None), member)
    _repack(path, members)


# -- claims beyond what a compression unpacks --------------------------------------------------------


def _central_entry(data: bytes, member: str) -> int:
    """Where ``member``'s record in the zip's central directory starts."""
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + length] == member.encode():
            return at
        at = data.find(b"PK\x01\x02", at + 46)
    raise AssertionError(f"{member} not in the central directory")


def _claim(member: str, field: str, size):
    """Rewrite ``member``'s compressed or unpacked size in the central directory (``size`` of
    the entry as it is)."""
    def corrupt(path):
        data = bytearray(path.read_bytes())
        at = _central_entry(bytes(data), member)
        info = zipfile.ZipFile(path).getinfo(member)
        offset = {"compressed": 20, "unpacked": 24}[field]
        struct.pack_into("<I", data, at + offset, size(info, len(data)))
        path.write_bytes(bytes(data))
    return corrupt


def _deflated(path):
    """The same members, deflated (as a format-1 writer made them)."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _both(*corruptions):
    def corrupt(path):
        for corruption in corruptions:
            corruption(path)
    return corrupt


def _far_beyond_lzma2(document):
    """A 64 Mi-element float32 output whose payload is declared 1000 bytes long."""
    document["calls"][0]["outputs"][0].update(shape=[2**13, 2**13], stored=1000)


BOMBS = {
    "payload beyond LZMA2": (_edit_meta(_far_beyond_lzma2),
                             rf"1000 stored bytes cannot unpack to the {2**28} of float32 \(8192, 8192\): "
                             rf"LZMA2 unpacks to at most {encoding.MOST_RATIO} bytes per byte"),
    "stored entry claiming more": (_claim("call0_out0.npy", "unpacked", lambda info, _: info.compress_size + 1),
                                   r"member call0_out0.npy is stored, yet claims \d+ bytes in \d+"),
    "deflated entry beyond deflate": (
        _both(_deflated, _claim("meta.npy", "unpacked", lambda info, _: 1033 * info.compress_size)),
        r"member meta.npy claims to unpack to \d+ bytes from \d+: deflate unpacks to at most 1032 bytes per byte"),
    "members claiming more than the file": (_claim("call0_out0.npy", "compressed", lambda _, size: size),
                                            r"its members claim \d+ bytes of a file of \d+"),
}


@pytest.mark.parametrize("bomb", BOMBS)
def test_a_claim_beyond_the_compression_is_refused_in_one_line(tmp_path, capsys, bomb):
    """``diff`` of a crafted file exits 2 with one line naming the file and the claim; reading
    it whole says the same."""
    corrupt, message = BOMBS[bomb]
    good = write_snapshot(tmp_path / "good.npz", _snapshot())
    bad = write_snapshot(tmp_path / "bad.npz", _snapshot())
    corrupt(bad)
    with pytest.raises(SnapshotError, match=message):
        read_snapshot(bad)
    capsys.readouterr()
    assert main(["diff", str(good), str(bad)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and str(bad) in error and "Traceback" not in error, error
    assert re.search(message, error), error


def test_the_most_compressible_payload_stays_within_the_ratio():
    """All zeros, the most a writer packs into a byte, stay below LZMA2's bound: no snapshot
    the writer makes is refused by it."""
    size = 2**24
    payload = encoding.encode(np.zeros(size // 4, np.float32), "float32", None)
    assert size / len(payload) < encoding.MOST_RATIO
    assert size / len(payload) > encoding.MOST_RATIO / 2, "the bound is far above what LZMA2 reaches"
