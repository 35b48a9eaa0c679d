"""What a RoPE target returned, read as the declaration says it is shaped.

Each reader turns an :class:`~posenc_spec.gate.calls.Outcome` into plain float64 arrays
the judge compares with the oracle, or raises :class:`Unreadable` with a one-line reason
(with a hint when the result fits another declaration: a compact cache declared ``half``,
a transposed ``x``).
"""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.calls import shape_text

WIDER = {"float16": ("float16", "float32", "float64"), "bfloat16": ("bfloat16", "float32", "float64"),
         "float32": ("float32", "float64"), "float64": ("float64",)}


class Unreadable(Exception):
    """The call returned, but not in the declared shape or dtype."""


def _squeezed(array: np.ndarray, ndim: int) -> np.ndarray:
    """Axes of size 1 dropped (a batch axis, Megatron's ``(L, 1, 1, r)``) down to ``ndim`` axes."""
    while array.ndim > ndim and 1 in array.shape:
        array = array.squeeze(axis=array.shape.index(1))
    return array


def _shape(shape) -> str:
    return "x".join(map(str, shape))


def effective_layout(form: str, layout: str | None) -> str | None:
    """How each of cos and sin is laid out: a ``complex`` or ``stacked`` cache is compact by
    nature, whatever ``layout`` says (None: not declared)."""
    return "compact" if form in ("complex", "stacked") else layout


def freqs_parts(outcome) -> tuple[np.ndarray, float | None]:
    """A rope-freqs call's ``inv_freq`` as returned, and the factor a tuple returned (None for
    a bare array). The child lets through one or two arrays (the request's ``max_items``)."""
    arrays = outcome.arrays
    if len(arrays) == 2 and np.asarray(arrays[1]).size != 1:
        raise Unreadable("returned 2 arrays; expected inv_freq or (inv_freq, attention_factor)")
    factor = float(np.asarray(arrays[1], dtype=np.float64).reshape(())) if len(arrays) == 2 else None
    return np.asarray(arrays[0]), factor


def read_freqs(outcome, pairs: int):
    """``(inv_freq, its dtype, the factor a tuple returned or None)``."""
    inv_freq, factor = freqs_parts(outcome)
    inv_freq, dtype = _squeezed(inv_freq, 1), outcome.dtypes[0]
    if inv_freq.shape != (pairs,):
        raise Unreadable(f"returned inv_freq as {shape_text(inv_freq.shape)}, expected ({pairs},)")
    if dtype not in ("float32", "float64"):
        raise Unreadable(f"returned {dtype} frequencies: rounded to {dtype}, an angle at position 8192 "
                         "moves by whole radians (compute and keep inv_freq in float32 or float64)")
    return inv_freq.astype(np.float64), dtype, factor


def _parts(outcome, form: str, batched: bool = False):
    """The arrays of a cache as its form holds them: ``(cos, sin)`` or ``(angles,)`` (with a
    leading batch axis when ``batched``)."""
    arrays = [np.asarray(array) for array in outcome.arrays]
    count = 2 if form == "cos-sin" else 1
    if len(arrays) != count:
        raise Unreadable(f"returned {len(arrays)} array{'s' * (len(arrays) != 1)} where the {form} form is "
                         f"{'a pair (cos, sin)' if count == 2 else 'one array'}")
    if form == "complex":
        if not np.iscomplexobj(arrays[0]):
            raise Unreadable("returned real values where the complex form (cos + i sin) was declared")
        return arrays[0].real, arrays[0].imag
    if any(np.iscomplexobj(array) for array in arrays):
        raise Unreadable(f"returned complex values; declare --cache-form complex if that is the cache (got {form})")
    if form == "stacked":
        stacked = _squeezed(arrays[0], 3 + batched)
        if stacked.ndim not in (3, 3 + batched) or stacked.shape[-1] != 2:
            raise Unreadable(f"returned {shape_text(stacked.shape)}, expected (L, r/2, 2) for the stacked form")
        return stacked[..., 0], stacked[..., 1]
    if form in ("sin-cos-cat", "cos-sin-cat"):
        both = _squeezed(arrays[0], 2 + batched)
        if both.ndim not in (2, 2 + batched) or both.shape[-1] % 2:
            raise Unreadable(f"returned {shape_text(both.shape)}, expected (L, 2w) for the {form} form")
        first, second = np.split(both, 2, axis=-1)
        return (second, first) if form == "sin-cos-cat" else (first, second)
    return tuple(arrays)


def read_cache(outcome, form: str, layout: str, rows: int, pairs: int, batch: int = 1) -> tuple:
    """``(cos, sin)`` (or ``(angles,)``), each ``(rows, width)`` in the declared layout (for
    positions of ``batch`` rows, ``(batch, rows, width)``: one cache for all of them is read
    as each row's), and the dtype."""
    parts = _parts(outcome, form, batch > 1)
    width = pairs if effective_layout(form, layout) == "compact" else 2 * pairs
    read = []
    for part in parts:
        if batch > 1:
            if _squeezed(part, 2).shape == (rows, width):
                part = np.broadcast_to(_squeezed(part, 2), (batch, rows, width))
            part = _squeezed(part, 3)
            if part.shape != (batch, rows, width):
                raise Unreadable(f"returned {shape_text(part.shape)} for positions of {batch} rows, expected "
                                 f"{batch}x{rows}x{width} (or {rows}x{width} for every row)")
            read.append(part.astype(np.float64))
            continue
        part = _squeezed(part, 2)
        if part.shape != (rows, width):
            hint = ""
            if part.shape == (rows, 2 * pairs if width == pairs else pairs):
                other = "half or interleaved" if width == pairs else "compact"
                hint = f": a {other} cache? declare --cache-layout accordingly"
            elif part.shape == (width, rows):
                hint = ": transposed (rows must be positions)"
            raise Unreadable(f"returned {shape_text(part.shape)}, expected {rows}x{width}{hint}")
        read.append(part.astype(np.float64))
    dtype = outcome.dtypes[0].replace("complex64", "float32").replace("complex128", "float64")
    return tuple(read), dtype


def read_apply(outcome, shape: tuple, x_dtype: str, from_layout) -> tuple[np.ndarray, str]:
    """The rotated ``x`` in the canonical layout, and its dtype (x's or a wider one)."""
    if len(outcome.arrays) != 1:
        raise Unreadable(f"returned {len(outcome.arrays)} arrays, expected the rotated x")
    result, dtype = np.asarray(outcome.arrays[0]), outcome.dtypes[0]
    if result.shape != shape:
        raise Unreadable(f"returned {shape_text(result.shape)}, expected x's shape {_shape(shape)}")
    if dtype not in WIDER[x_dtype]:
        raise Unreadable(f"returned {dtype} for a {x_dtype} x: narrower than x (return x's dtype or a wider one)")
    return from_layout(result.astype(np.float64)), dtype
