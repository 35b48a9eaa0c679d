"""How a value is compared with its exact value: one bound per element.

Every family derives the bound a correct implementation meets, element by element, in its
own ``tolerance`` module (``posenc_spec/families/<name>/tolerance.py``), written down
operation by operation in its docstring and nowhere else. What they share is here: the unit roundoff ``u(dtype)`` (half
the spacing of floats just above 1: 2**-53 float64, 2**-24 float32, 2**-11 float16, 2**-8
bfloat16), and the one rule by which a value meets its bound (:func:`ratios`,
:func:`compare`): the error over the bound, NaN an infinite error, a zero bound admitting
only a zero error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_ANGLE_DTYPE = "float32"

UNIT_ROUNDOFF = {
    "float64": 2.0**-53,
    "float32": 2.0**-24,
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
}


def name_among(dtype, names) -> str | None:
    """The name in ``names`` of a numpy, torch or named dtype (None when it is none of them)."""
    name = str(dtype).removeprefix("torch.")
    if name not in names:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            pass
    return name if name in names else None


def dtype_name(dtype) -> str:
    """``'float32'`` for np.float32, torch.float32, 'float32', np.dtype('float32') alike."""
    name = name_among(dtype, UNIT_ROUNDOFF)
    if name is None:
        raise ValueError(f"no tolerance is defined for dtype {dtype!r}; "
                         f"floating dtypes only: {', '.join(UNIT_ROUNDOFF)}")
    return name


def unit_roundoff(dtype) -> float:
    return UNIT_ROUNDOFF[dtype_name(dtype)]












@dataclass(frozen=True)
class Comparison:
    """``actual`` against ``expected`` element by element; ``ok`` when every error is within
    bound. The ``worst_*`` fields all describe one element, the one with the largest
    error/tolerance ratio; ``max_error`` is the largest error anywhere (another element,
    when a small bound makes a smaller error the worse one)."""

    max_ratio: float  # max of error / tolerance; <= 1 passes
    worst_index: tuple
    worst_actual: float
    worst_expected: float
    worst_error: float
    worst_tolerance: float
    max_error: float
    num_failing: int
    shape: tuple

    @property
    def ok(self) -> bool:
        return self.max_ratio <= 1.0

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # 1 for a single value, shape ()

    def describe(self) -> str:
        if self.size == 0:
            return "empty table"
        where = ", ".join(str(i) for i in self.worst_index)
        return (
            f"{self.num_failing} of {self.size} elements out of bound; worst at [{where}]: "
            f"got {self.worst_actual:.9g}, expected {self.worst_expected:.9g}, "
            f"error {self.worst_error:.3g} vs tolerance {self.worst_tolerance:.3g} (ratio {self.max_ratio:.3g})"
        )


def ratios(error: np.ndarray, tolerance, out=None) -> np.ndarray:
    """``error / tolerance`` with the rules every comparison shares: NaN errors are infinite,
    and a zero bound admits only a zero error (0/0 is ratio 0). ``error`` is overwritten
    (its NaNs become inf); ``out=error`` divides in place."""
    if error.size and np.isnan(error.max()):  # max propagates NaN: one pass, no mask, in the common case
        error[np.isnan(error)] = np.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a ratio past the largest float is Inf
        ratio = np.asarray(np.divide(error, tolerance, out=out))  # a 0-d division gives a scalar
    if ratio.size and np.isnan(ratio.max()):
        ratio[np.isnan(ratio)] = 0.0
    return ratio


# Tables are compared a block of rows at a time, about this many elements a block: a block's
# temporaries (512 KiB in float64) stay in cache and their memory is reused, where
# whole-table temporaries of a large table (6 MiB each at the sinusoidal grid's 1024 x 768,
# 32 MiB at 4096 x 1024) are fresh pages that the kernel zeroes on every call.
BLOCK_ELEMENTS = 1 << 16


def row_blocks(shape) -> list:
    """Index expressions that split an array of ``shape`` along its first axis into blocks
    of about :data:`BLOCK_ELEMENTS` elements (the whole array when it has no axis)."""
    if not shape:
        return [()]
    step = max(1, BLOCK_ELEMENTS // max(math.prod(shape[1:]), 1))
    return [slice(start, start + step) for start in range(0, shape[0], step)]


# Dtypes whose values float64 holds exactly: the error is subtracted straight from them
# into a float64 block, without a float64 copy of the block first.
_EXACT_IN_FLOAT64 = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def compare(actual, expected, tolerance) -> Comparison:
    """Element-wise comparison; NaN counts as an infinite error. The worst element is the
    first of the largest ratio (in C order), as ``argmax`` over the whole table finds it."""
    actual = np.asarray(actual)
    expected = np.asarray(expected, dtype=np.float64)
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), expected.shape)
    if actual.shape != expected.shape:
        raise ValueError(f"shape {actual.shape} differs from the expected {expected.shape}")
    return compare_blocks(((actual[block], expected[block], tolerance[block]) for block in row_blocks(actual.shape)),
                          actual.shape)


def compare_blocks(blocks, shape) -> Comparison:
    """:func:`compare` of a table of ``shape`` given as its consecutive blocks of rows, in order:
    ``(actual, expected, tolerance)`` each (``tolerance`` may be a scalar), for a table that is
    measured a block at a time and never held whole. A block may carry a fourth item, a
    boolean array (broadcast to it) of the elements not compared: each stands at 0, as if
    both its values were 0 (whatever they hold, NaN and Inf included).

    Each block is worked on in one reused float64 buffer, the error turned into the ratio in
    place, with :func:`ratios`' rules: a NaN error is infinite, and a NaN ratio (0/0, or an
    infinite error over an infinite bound) is 0, looked for only where ``argmax`` (which stops
    at the first NaN) finds one; elements out of bound are counted only in a block whose largest
    ratio exceeds 1."""
    if math.prod(shape) == 0:
        return Comparison(0.0, (), np.nan, np.nan, 0.0, np.nan, 0.0, 0, tuple(shape))
    buffer = np.empty(0)
    max_error, max_ratio, num_failing, start = 0.0, 0.0, 0, 0
    worst = worst_values = None
    for rows, expected, tolerance, *ignored in blocks:
        rows, expected = np.asarray(rows), np.asarray(expected, dtype=np.float64)
        ignored = ignored[0] if ignored else None
        if buffer.size < rows.size:
            buffer = np.empty(rows.size)
        error = buffer[: rows.size].reshape(rows.shape)
        if rows.dtype in _EXACT_IN_FLOAT64:
            np.subtract(rows, expected, out=error)
        else:
            error[...] = rows
            np.subtract(error, expected, out=error)
        np.abs(error, out=error)
        if ignored is not None:
            np.copyto(error, 0.0, where=ignored)
        block_max = float(error.max())
        if np.isnan(block_max):  # max propagates NaN: one pass, no mask, in the common case
            error[np.isnan(error)] = np.inf
            block_max = np.inf
        max_error = max(max_error, block_max)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a ratio past the largest float is Inf
            np.divide(error, tolerance, out=error)
        at = int(np.argmax(error))
        if np.isnan(error.flat[at]):
            error[np.isnan(error)] = 0.0
            at = int(np.argmax(error))
        block_ratio = float(error.flat[at])
        if worst is None or block_ratio > max_ratio:  # strictly: an earlier block keeps a tie
            max_ratio = block_ratio
            local = np.unravel_index(at, error.shape)
            worst = (local[0] + start, *local[1:]) if rows.ndim else ()
            unseen = ignored is not None and bool(np.broadcast_to(ignored, rows.shape)[local])
            worst_values = (0.0 if unseen else float(rows[local]), 0.0 if unseen else float(expected[local]),
                            float(np.broadcast_to(tolerance, rows.shape)[local]))
        if block_ratio > 1.0:
            num_failing += int(np.count_nonzero(error > 1.0))
        start += rows.shape[0] if rows.ndim else 0
    worst_actual, worst_expected, worst_tolerance = worst_values
    worst_error = abs(worst_actual - worst_expected)
    return Comparison(
        max_ratio=max_ratio,
        worst_index=tuple(int(i) for i in worst),
        worst_actual=worst_actual,
        worst_expected=worst_expected,
        worst_error=np.inf if np.isnan(worst_error) else worst_error,
        worst_tolerance=worst_tolerance,
        max_error=max_error,
        num_failing=num_failing,
        shape=tuple(shape),
    )
