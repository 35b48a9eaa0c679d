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
size it declares; :func:`decode` then unpacks exactly the size its dtype and shape need
(never more) and requires the stream to end there.
"""

from __future__ import annotations

import lzma
import math

import numpy as np

from .predict import Prediction
from .ulp import holding_dtype

MOST_DICTIONARY = 1 << 23  # 8 MiB
PRESET = 3  # preset 6 packs a table of offsets a fifth smaller in ten times the time
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


def _unplanes(raw: bytes, dtype: np.dtype) -> np.ndarray:
    """The inverse of :func:`_planes`: a 1-D array of little-endian ``dtype``."""
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(dtype.itemsize, -1)
    return np.ascontiguousarray(planes.T).reshape(-1).view(dtype)


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
    :class:`~.predict.Prediction` of a predicted payload from its column values (None: not
    predicted). :class:`EncodingError` when the payload is damaged, short or too long."""
    predicted = rows_for is not None
    expected = unpacked_bytes(dtype, shape, predicted)
    filters = [{"id": lzma.FILTER_LZMA2, "dict_size": _dictionary(expected)}]
    decompressor = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters)
    try:
        raw = decompressor.decompress(payload, max_length=expected)
        if len(raw) == expected and not decompressor.eof:
            if decompressor.decompress(b"", max_length=1):
                raise EncodingError(f"it unpacks to more than the {expected} bytes its dtype and shape need")
    except lzma.LZMAError as error:
        raise EncodingError(f"its compressed data is damaged ({error})") from None
    if len(raw) < expected or not decompressor.eof:
        raise EncodingError(f"it unpacks to {len(raw)} bytes where its dtype and shape need {expected}"
                            if len(raw) < expected else "its compressed data does not end where it should")
    if decompressor.unused_data:
        raise EncodingError(f"{len(decompressor.unused_data)} bytes follow its compressed data")
    holding = holding_dtype(dtype)
    if not predicted:
        return _unplanes(raw, holding.newbyteorder("<")).astype(holding, copy=False).reshape(shape)
    columns = np.frombuffer(raw, dtype="<f8", count=shape[1]).astype(np.float64)
    prediction = rows_for(columns)
    unsigned, signed = PREDICTED_DTYPES[dtype]
    distances = _unzigzag(_unplanes(raw[shape[1] * 8:], unsigned), signed).reshape(shape)
    predicted_bits = prediction.values(dtype).view(unsigned.newbyteorder("="))
    with np.errstate(over="ignore"):
        keys = order_key(predicted_bits) + distances.astype(signed.newbyteorder("="))
    return order_key(keys.view(unsigned.newbyteorder("="))).view(holding)
