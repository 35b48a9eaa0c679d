"""Distance between two recorded values in units in the last place (ULPs) of their dtype.

A float of ``w`` bits (16 for float16 and bfloat16, 32, 64) has the bit pattern ``b``;
its sign is ``s = b >> (w - 1)`` and its magnitude bits ``m = b & (2**(w-1) - 1)``. Over
the values that are not NaN, ``m`` grows by exactly one from each representable magnitude
to the next (subnormals, normals and infinity alike), so

    key(x) = m        if s = 0
    key(x) = -m       if s = 1

numbers the representable values in order, with +0 and -0 both at 0, and

    ulp(a, b) = |key(a) - key(b)| = |m_a - m_b|    when the signs agree
                                  = m_a + m_b      when they differ

is how many steps of one representable value separate ``a`` from ``b`` (``nextafter`` is
one step). It is computed on unsigned integers and returned as uint64: ``m < 2**63`` for
float64, so ``m_a + m_b < 2**64`` fits, where the signed difference of keys would overflow
int64 for values of opposite sign far from zero.

Special values: NaN equals NaN whatever the payloads, +inf equals +inf and -inf equals
-inf; NaN against anything else, and an infinity against any other value, are infinitely
far apart: :data:`INFINITE_ULP` (2**64 - 1), which sorts above every finite distance (the
largest, between the largest finite float64 values of either sign, is 2**64 - 2**53 - 2)
and prints as ``inf``. Complex values: the larger of the distances of the real and of the
imaginary parts. Integers (and bool): ``|a - b|``, one step per unit, saturated at
:data:`MAX_FINITE_ULP` so that no integer distance reads as infinite.

bfloat16 values travel as their uint16 bit patterns (NumPy has no bfloat16).
"""

from __future__ import annotations

import numpy as np

INFINITE_ULP = np.uint64(2**64 - 1)
MAX_FINITE_ULP = np.uint64(2**64 - 2)

# dtype name -> (the NumPy dtype its values are held in, the unsigned integer of its bits)
FLOAT_BITS = {
    "float16": (np.dtype(np.float16), np.dtype(np.uint16)),
    "bfloat16": (np.dtype(np.uint16), np.dtype(np.uint16)),
    "float32": (np.dtype(np.float32), np.dtype(np.uint32)),
    "float64": (np.dtype(np.float64), np.dtype(np.uint64)),
}
COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}
INTEGER_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = (*FLOAT_BITS, *COMPLEX_PARTS, *INTEGER_DTYPES)

# The histogram's buckets: a label and the largest distance it holds (the last has no limit).
HISTOGRAM_BUCKETS = (("0", 0), ("1", 1), ("2-4", 4), ("5-16", 16), ("17-256", 256), (">256", None))


def bfloat16_bits(values) -> np.ndarray:
    """The uint16 bit patterns of bfloat16 values carried as float32 (exact: a bfloat16 is
    the top half of a float32's bits)."""
    return (np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bfloat16_values(bits) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (the inverse of :func:`bfloat16_bits`)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def holding_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype that holds values of the recorded ``dtype`` (uint16 for bfloat16)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    return FLOAT_BITS[dtype][0] if dtype in FLOAT_BITS else np.dtype(dtype)


def ulp_distance(old, new, dtype: str) -> np.ndarray:
    """``ulp(old, new)`` element by element (see the module docstring), as uint64.

    ``old`` and ``new`` are arrays of the same shape held in :func:`holding_dtype` of
    ``dtype``.
    """
    old, new = _checked(old, "old", dtype), _checked(new, "new", dtype)
    if old.shape != new.shape:
        raise ValueError(f"old and new must have the same shape; got {old.shape} and {new.shape}")
    if dtype in COMPLEX_PARTS:
        part = COMPLEX_PARTS[dtype]
        distance = np.maximum(_float_distance(old.real.reshape(-1), new.real.reshape(-1), part),
                              _float_distance(old.imag.reshape(-1), new.imag.reshape(-1), part))
    elif dtype in FLOAT_BITS:
        distance = _float_distance(old.reshape(-1), new.reshape(-1), dtype)
    else:
        distance = _integer_distance(old.reshape(-1), new.reshape(-1))
    return distance.reshape(old.shape)


def _checked(values, name: str, dtype: str) -> np.ndarray:
    expected = holding_dtype(dtype)
    if not isinstance(values, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, got {type(values).__name__}")
    if values.dtype != expected:
        raise TypeError(f"{name} holds {values.dtype} where {dtype} values are held as {expected}")
    return values


def _infinity_bits(dtype: str):
    """The magnitude bits of +inf (every exponent bit set, no mantissa bit)."""
    if dtype == "bfloat16":  # the upper half of float32's
        return np.uint16(int(np.array(np.inf, np.float32).view(np.uint32)) >> 16)
    value_dtype, unsigned = FLOAT_BITS[dtype]
    return np.array(np.inf, value_dtype).view(unsigned)[()]


def _float_distance(old: np.ndarray, new: np.ndarray, dtype: str) -> np.ndarray:
    unsigned = FLOAT_BITS[dtype][1]
    width = unsigned.itemsize * 8
    signed = np.dtype(f"int{width}")
    magnitude_mask = unsigned.type((1 << (width - 1)) - 1)
    infinity = _infinity_bits(dtype)

    old_bits, new_bits = old.view(unsigned), new.view(unsigned)
    old_magnitude, new_magnitude = old_bits & magnitude_mask, new_bits & magnitude_mask
    same_sign = (old_bits ^ new_bits) <= magnitude_mask  # the sign bits agree
    # Both magnitudes are below 2**(w-1): their signed difference and their unsigned sum fit.
    distance = np.abs(old_magnitude.view(signed) - new_magnitude.view(signed)).view(unsigned)
    np.add(old_magnitude, new_magnitude, out=distance, where=~same_sign)
    distance = distance.astype(np.uint64)

    special = np.flatnonzero((old_magnitude >= infinity) | (new_magnitude >= infinity))
    if special.size:  # rare: look at the infinities and NaNs only
        old_special, new_special = old_magnitude[special], new_magnitude[special]
        old_nan, new_nan = old_special > infinity, new_special > infinity
        distance[special[old_nan & new_nan]] = 0
        infinite = (old_nan != new_nan) | (~old_nan & ~new_nan & (distance[special] != 0))
        distance[special[infinite]] = INFINITE_ULP
    return distance


def _integer_distance(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    # |a - b| < 2**64 for 64-bit integers: the difference modulo 2**64, taken larger minus smaller, is exact.
    old_wide, new_wide = _as_uint64(old), _as_uint64(new)
    distance = np.where(old >= new, old_wide - new_wide, new_wide - old_wide)
    return np.minimum(distance, MAX_FINITE_ULP)


def _as_uint64(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "u":
        return values.astype(np.uint64)
    return values.astype(np.int64).view(np.uint64)  # two's complement: modular arithmetic stays exact


def format_ulp(distance) -> str:
    """A distance as text: its digits, or ``inf`` for :data:`INFINITE_ULP`."""
    distance = np.uint64(distance)
    return "inf" if distance == INFINITE_ULP else str(int(distance))


def ulp_histogram(distances) -> dict[str, int]:
    """How many distances fall in each bucket of :data:`HISTOGRAM_BUCKETS` (label -> count)."""
    distances = np.asarray(distances)
    if distances.dtype != np.uint64:
        raise TypeError(f"distances must be uint64 (from ulp_distance), got {distances.dtype}")
    # Counting the distances above each limit is several times faster than sorting them into buckets.
    above = [distances.size] + [int(np.count_nonzero(distances > limit)) for _, limit in HISTOGRAM_BUCKETS[:-1]] + [0]
    return {label: above[i] - above[i + 1] for i, (label, _) in enumerate(HISTOGRAM_BUCKETS)}
