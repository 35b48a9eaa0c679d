"""How a snapshot stores an array in few bytes and gets exactly it back.

A float32 or float64 table of sines and cosines that a prediction follows
(:mod:`.predict`) is stored as each element's distance from the prediction, counted in
steps of its dtype (:func:`order_key`, a bijection of the bit patterns that follows the
order of the values, so that every value, NaN payloads and ``-0.0`` included, comes back
bit for bit): nearly all are 0 or 1. Every other array is stored as its bits. Either way
the bytes are split into planes (every element's lowest byte, then the next ...), where
the high planes are mostly zero, and compressed with LZMA2 (:mod:`lzma`, raw, with a
dictionary as large as the unpacked size rounded up to a power of two, at most 8 MiB: the
reader derives it from the declared dtype and shape, so that the file cannot ask it for
more memory than the array takes).

Payload of a predicted array: the prediction's column values (float64, little-endian),
then the planes of the zigzagged distances (0, -1, 1, -2 ... as 0, 1, 2, 3 ...). Of any
other: the planes of its bits (little-endian).

The reader first checks that a payload is no larger than :func:`most_stored_bytes` of the
size it declares, and no smaller than LZMA2 can pack that size into (:data:`MOST_RATIO`);
:func:`decode_blocks` then unpacks exactly the size its dtype and shape need (never more), a
block of elements at a time, and requires the stream to end there.
"""

from __future__ import annotations

import io
import lzma
import math

import numpy as np

from .predict import Prediction
from .ulp import holding_dtype

MOST_DICTIONARY = 1 << 23  # 8 MiB
BLOCK_ELEMENTS = 1 << 20  # elements decoded at a time: a few MiB per payload being read
INPUT_BYTES = 1 << 16  # compressed bytes fed to a decompressor at a time
PRESET = 3  # preset 6 packs a table of offsets a fifth smaller in ten times the time
# LZMA2 codes a match of at most 273 bytes as at least 12 binary decisions (the four that say
# "the last distance again" and the eight of the length's high tree), and a decision costs at
# least log2(2048/2017) bits: its 11-bit probabilities stop adapting 31/2048 short of certainty.
# No payload unpacks to more bytes per byte than this (all zeros reach about 6,900).
MOST_RATIO = math.ceil(273 * 8 / (12 * math.log2(2048 / 2017)))
PREDICTED_DTYPES = {"float32": (np.dtype("<u4"), np.dtype("<i4")), "float64": (np.dtype("<u8"), np.dtype("<i8"))}


class EncodingError(ValueError):
    """A payload that does not decode to what its reference declares."""


def order_key(bits: np.ndarray) -> np.ndarray:
    """The signed integer that numbers the float bit patterns ``bits`` (unsigned) in the
    order of their values: ``b`` for a positive sign, ``b ^ (2**(w-1) - 1)`` read as signed
    for a negative one (-0.0 is -1, +0.0 is 0). Its own inverse on the signed view."""
    signed = bits.view(f"i{bits.dtype.itemsize}")
    return np.where(signed < 0, signed ^ np.array(np.iinfo(signed.dtype).max, signed.dtype), signed)


def _planes(data: np.ndarray) -> bytes:
    """The bytes of ``data`` (little-endian) plane by plane."""
    little = np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).reshape(-1)
    return little.view(np.uint8).reshape(-1, little.dtype.itemsize).T.tobytes()


def _zigzag(offsets: np.ndarray, unsigned: np.dtype) -> np.ndarray:
    width = offsets.dtype.itemsize * 8
    return ((offsets << 1) ^ (offsets >> (width - 1))).view(unsigned)


def _unzigzag(values: np.ndarray, signed: np.dtype) -> np.ndarray:
    return (values >> 1).view(signed) ^ -(values & 1).view(signed)


def offsets(values: np.ndarray, prediction: Prediction, dtype: str) -> np.ndarray:
    """Each element's signed distance from the prediction, in steps of ``dtype`` (wrapping)."""
    unsigned, _ = PREDICTED_DTYPES[dtype]
    predicted = prediction.values(dtype).view(unsigned.newbyteorder("="))
    with np.errstate(over="ignore"):
        return order_key(values.view(unsigned.newbyteorder("="))) - order_key(predicted)


def encode(values: np.ndarray, dtype: str, prediction: Prediction | None) -> bytes:
    """The compressed payload of ``values`` (held as :func:`~.ulp.holding_dtype`)."""
    if prediction is None:
        raw = _planes(values)
    else:
        unsigned, _ = PREDICTED_DTYPES[dtype]
        raw = (np.ascontiguousarray(prediction.columns, dtype="<f8").tobytes()
               + _planes(_zigzag(offsets(values, prediction, dtype), unsigned)))
    filters = [{"id": lzma.FILTER_LZMA2, "preset": PRESET, "dict_size": _dictionary(len(raw))}]
    return lzma.compress(raw, format=lzma.FORMAT_RAW, filters=filters)


def _dictionary(size: int) -> int:
    """LZMA2's dictionary for ``size`` unpacked bytes (a larger one packs no better)."""
    return min(MOST_DICTIONARY, max(4096, 1 << max(size - 1, 1).bit_length()))


def unpacked_bytes(dtype: str, shape: tuple, predicted: bool) -> int:
    """How many bytes a payload unpacks to."""
    columns = shape[1] * 8 if predicted else 0
    return columns + math.prod(shape) * holding_dtype(dtype).itemsize


def most_stored_bytes(dtype: str, shape: tuple, predicted: bool) -> int:
    """The largest payload a writer makes for that many bytes: LZMA2 stores what it cannot
    compress in chunks of 64 KiB with 3 bytes of header each, and ends with one byte."""
    size = unpacked_bytes(dtype, shape, predicted)
    return size + 3 * (size // 65536 + 1) + 64


def decode(payload: bytes, dtype: str, shape: tuple, rows_for=None) -> np.ndarray:
    """The array a payload holds: ``shape`` of ``dtype`` (as held). ``rows_for`` builds the
    :class:`~.predict.Prediction` of a predicted payload's rows from its column values (None:
    not predicted). :class:`EncodingError` when the payload is damaged, short or too long."""
    out = np.empty(math.prod(shape), dtype=holding_dtype(dtype))
    filled = 0
    predict = None if rows_for is None else (lambda columns: _all_rows(rows_for(columns)))
    for block in decode_blocks(lambda: io.BytesIO(payload), dtype, shape, predict):
        out[filled:filled + block.size] = block
        filled += block.size
    return out.reshape(shape)


def _all_rows(prediction: Prediction):
    """The rows of a whole prediction handed out in order, as :func:`decode_blocks` asks for them."""
    taken = 0

    def next_rows(count: int) -> Prediction:
        nonlocal taken
        part = Prediction(prediction.rows[taken:taken + count], prediction.columns, prediction.functions,
                          prediction.angle_dtype, prediction.operation)
        taken += count
        return part

    return next_rows


def decode_blocks(open_payload, dtype: str, shape: tuple, predict=None):
    """The array a payload holds, flat in C order, at most :data:`BLOCK_ELEMENTS` elements at a time
    (whole rows of a predicted table), each a fresh array of ``dtype`` as held: memory stays a
    few blocks whatever the size. ``open_payload()`` returns a new binary stream of the payload
    from its start; one is opened per byte plane (each skips to its plane, unpacking and
    dropping what comes before), so that an element's bytes are at hand together. ``predict``,
    for a predicted payload, takes its column values and returns ``next_rows(count)``: the
    :class:`~.predict.Prediction` of the table's next ``count`` rows. Raises
    :class:`EncodingError` when the payload is damaged, short or too long."""
    predicted = predict is not None
    expected = unpacked_bytes(dtype, shape, predicted)
    holding = holding_dtype(dtype)
    count = math.prod(shape)
    dictionary = _dictionary(expected)
    head = shape[1] * 8 if predicted else 0
    stored, signed = PREDICTED_DTYPES[dtype] if predicted else (holding.newbyteorder("<"), None)
    width = stored.itemsize
    planes = [_Plane(open_payload(), dictionary, expected, head + plane * count) for plane in range(width)]
    if predicted:
        columns = np.frombuffer(_Plane(open_payload(), dictionary, expected, 0).read(head), dtype="<f8")
        next_rows = predict(columns.astype(np.float64))
        step = max(1, BLOCK_ELEMENTS // shape[1]) * shape[1]
    else:
        step = BLOCK_ELEMENTS
    for start in range(0, count, step):
        size = min(step, count - start)
        stacked = np.empty((size, width), dtype=np.uint8)
        for plane, reader in enumerate(planes):
            stacked[:, plane] = np.frombuffer(reader.read(size), dtype=np.uint8)
        values = stacked.reshape(-1).view(stored)
        if not predicted:
            yield values.astype(holding, copy=False)
            continue
        distances = _unzigzag(values, signed)
        native = stored.newbyteorder("=")
        predicted_bits = next_rows(size // shape[1]).values(dtype).reshape(-1).view(native)
        with np.errstate(over="ignore"):
            keys = order_key(predicted_bits) + distances.astype(signed.newbyteorder("="))
        yield order_key(keys.view(native)).view(holding)
    planes[-1].finish()


class _Plane:
    """The unpacked bytes of a payload from ``skip`` on, in order, from a stream of the payload."""

    def __init__(self, stream, dictionary: int, expected: int, skip: int):
        self.stream, self.expected, self.unpacked = stream, expected, 0
        filters = [{"id": lzma.FILTER_LZMA2, "dict_size": dictionary}]
        self.decompressor = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters)
        while skip:
            skip -= len(self.read(min(skip, BLOCK_ELEMENTS)))

    def read(self, size: int) -> bytes:
        """The next ``size`` unpacked bytes (all of them, or :class:`EncodingError`)."""
        parts, left = [], size
        while left:
            out = self._unpack(left)
            if not out:
                raise EncodingError(f"it unpacks to {self.unpacked} bytes where its dtype and shape need "
                                    f"{self.expected}")
            parts.append(out)
            left -= len(out)
        return b"".join(parts)

    def _unpack(self, most: int) -> bytes:
        """Up to ``most`` more unpacked bytes, feeding input as the decompressor asks; empty at the
        end of the compressed data or of the stream."""
        try:
            while not self.decompressor.eof:
                data = self.stream.read(INPUT_BYTES) if self.decompressor.needs_input else b""
                if self.decompressor.needs_input and not data:
                    return b""
                out = self.decompressor.decompress(data, max_length=most)
                if out:
                    self.unpacked += len(out)
                    return out
        except lzma.LZMAError as error:
            raise EncodingError(f"its compressed data is damaged ({error})") from None
        return b""

    def finish(self) -> None:
        """Past the last byte a payload needs: its compressed data ends exactly there, and so does the stream."""
        if self._unpack(1):
            raise EncodingError(f"it unpacks to more than the {self.expected} bytes its dtype and shape need")
        if not self.decompressor.eof:
            raise EncodingError("its compressed data does not end where it should")
        following = len(self.decompressor.unused_data)
        while data := self.stream.read(INPUT_BYTES):
            following += len(data)
        if following:
            raise EncodingError(f"{following} bytes follow its compressed data")
