"""A prediction of a table of sines and cosines that every machine computes bit for bit the same.

A snapshot stores a float table as each element's ULP offset from a prediction
(:mod:`.encoding`); the reader must then compute the very same prediction, on any CPU,
with any NumPy. ``numpy.sin`` cannot give that (its SIMD paths differ by machine), so the
prediction uses nothing but IEEE-754 additions, multiplications, divisions, ``rint`` and
``floor`` on float64 (and float32) arrays, each correctly rounded everywhere, and never an
FMA:

    rows[p]   = (values[p] + offset) * scale            the positions or timesteps
    angle     = rows[p] (*|/) columns[j]                in float64, or in float32 when the
                                                        table was formed so
    value     = sin(angle), cos(angle) or 0, per column (:func:`sin_cos`), then rounded to
                the table's dtype; a value that is not finite is predicted as 0

:func:`sin_cos` reduces the angle by pi/2 in double-double arithmetic (pi/2 in three
33-bit parts, exact products for quotients below 2**20) and evaluates fdlibm's kernel
polynomials with the leading terms in double-double: within about 0.51 ULP of float64,
correctly rounded for about 99% of angles. A correctly rounded float64 ``sin`` then sits
at offset 0 nearly everywhere; a float32 table computed from the same float32 angle, at 0
or 1. The prediction only has to be the same everywhere; how good it is decides the size.

:func:`fit` finds the prediction of a table: the way its columns are made (each a sine, a
cosine or zero, at an exact frequency) that it follows, among those the declaration's family
offers (:class:`Columns`), whether its angles were formed in float32 or float64, by
multiplying by a frequency or dividing by its inverse, and each column's frequency as the
target rounded it (scanned around the exact one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FUNCTIONS = "sc0"  # per column: sin, cos, or a zero column
ANGLE_DTYPES = ("float32", "float64")
OPERATIONS = ("mul", "div")
BLOCK = 1 << 15  # elements a block: the double-double temporaries stay in cache

_INVERSE_HALF_PI = 6.36619772367581382433e-01
# pi/2 = P1 + P2 + P3 + P3T: three parts of 33 bits (n * P exact for |n| < 2**20) and a tail (fdlibm's).
_P1, _P2, _P3, _P3T = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21,
                       8.47842766036889956997e-32)
_S1, _S2, _S3, _S4, _S5, _S6 = (-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C1, _C2, _C3, _C4, _C5, _C6 = (4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                2.08757232129817482790e-09, -1.13596475577881948265e-11)
_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split into two halves of 26 bits


def _two_product(a, b):
    """``a * b`` as ``(p, e)`` with ``p + e`` exact (Dekker, without an FMA)."""
    product = a * b
    c = _SPLIT * a
    a_high = c - (c - a)
    a_low = a - a_high
    c = _SPLIT * b
    b_high = c - (c - b)
    b_low = b - b_high
    return product, ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


def _two_sum(a, b):
    """``a + b`` as ``(s, e)`` with ``s + e`` exact (Knuth)."""
    total = a + b
    b_virtual = total - a
    return total, (a - (total - b_virtual)) + (b - b_virtual)


def _reduce(theta):
    """``(n mod 4, y0, y1)`` with ``theta = n pi/2 + y0 + y1``, ``|y0| <= pi/4`` nearly."""
    n = np.rint(theta * _INVERSE_HALF_PI)
    r = theta - n * _P1
    s, e1 = _two_sum(r, -(n * _P2))
    s, e2 = _two_sum(s, -(n * _P3))
    low = (e1 + e2) - n * _P3T
    y0 = s + low
    y1 = low - (y0 - s)
    quadrant = n - 4.0 * np.floor(n * 0.25)  # exact, also where n is too large for an integer type
    return quadrant, y0, y1


def _kernels(x, y, exact: bool):
    """fdlibm's polynomials for ``sin`` and ``cos`` of ``x + y`` (``|x| <= pi/4``, ``y`` the
    tail); ``exact``: the terms that decide the last bit in double-double (for float64
    results; float32 ones need only the plain sums)."""
    z = x * x
    sin_tail = ((z * x) * z) * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6))))
    cos_tail = (z * z) * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    if not exact:
        return x + (((z * x) * _S1 + sin_tail) + y), (1.0 - 0.5 * z) + (cos_tail - x * y)
    z_high, z_low = _two_product(x, x)
    cube_high, cube_low = _two_product(z_high, x)
    cube_low += z_low * x
    term_high, term_low = _two_product(_S1, cube_high)
    term_low += _S1 * cube_low
    high = x + term_high
    low = (x - high) + term_high
    sine = high + ((((low + term_low) + sin_tail) + y) - (0.5 * z_high) * y)
    half = 0.5 * z_high
    high = 1.0 - half
    low = (1.0 - high) - half
    cosine = high + (((low - 0.5 * z_low) + cos_tail) - x * y)
    return sine, cosine


def sin_cos(theta: np.ndarray, cosine, exact: bool = True) -> np.ndarray:
    """``sin(theta)`` where ``cosine`` is False, ``cos(theta)`` where True (a bool array
    broadcast against ``theta``), in float64, the same bits on every machine; NaN where
    ``theta`` is not finite. ``exact=False`` leaves out the double-double terms: within
    about 1 ULP of float64, ample for a float32 result, in half the time."""
    theta = np.asarray(theta, dtype=np.float64)
    shift = np.broadcast_to(np.asarray(cosine, dtype=np.float64), theta.shape).reshape(-1)
    flat = theta.reshape(-1)
    out = np.empty(flat.shape)
    with np.errstate(all="ignore"):
        for start in range(0, flat.size, BLOCK):
            part = slice(start, start + BLOCK)
            quadrant, y0, y1 = _reduce(flat[part])
            quadrant += shift[part]  # cos(x) = sin(x + pi/2)
            quadrant -= 4.0 * (quadrant >= 4.0)
            sine, cosine_value = _kernels(y0, y1, exact)
            value = np.where((quadrant == 1.0) | (quadrant == 3.0), cosine_value, sine)
            np.negative(value, out=value, where=quadrant >= 2.0)
            out[part] = value
    return out.reshape(theta.shape)


@dataclass(frozen=True)
class Prediction:
    """How to predict a ``(len(rows), len(columns))`` table (see the module docstring).
    ``rows`` and ``columns`` are float64; ``functions`` has one of :data:`FUNCTIONS` per
    column."""

    rows: np.ndarray
    columns: np.ndarray
    functions: str
    angle_dtype: str
    operation: str

    def __post_init__(self):
        if self.angle_dtype not in ANGLE_DTYPES or self.operation not in OPERATIONS:
            raise ValueError(f"angle_dtype must be one of {ANGLE_DTYPES} and operation one of {OPERATIONS}; "
                             f"got {self.angle_dtype!r}, {self.operation!r}")
        if len(self.functions) != self.columns.size or set(self.functions) - set(FUNCTIONS):
            raise ValueError(f"functions must give one of {FUNCTIONS!r} for each of the {self.columns.size} columns")

    def values(self, dtype: str, portable: bool = True) -> np.ndarray:
        """The predicted table in ``dtype`` (float32 or float64), computed a block of rows at
        a time (the float64 temporaries stay small); ``portable=False`` takes NumPy's sin and
        cos, faster and machine-dependent (for :func:`fit`, whose choice only decides the size)."""
        kind = np.frombuffer(self.functions.encode("ascii"), dtype=np.uint8)
        cosine, zero = (kind == ord("c"))[None, :], kind == ord("0")
        out = np.empty((self.rows.size, self.columns.size), dtype=dtype)
        step = max(1, BLOCK // max(self.columns.size, 1))
        with np.errstate(all="ignore"):
            if self.angle_dtype == "float32":
                rows, right = self.rows.astype(np.float32)[:, None], self.columns.astype(np.float32)[None, :]
            else:
                rows, right = self.rows[:, None], self.columns[None, :]
            for start in range(0, self.rows.size, step):
                left = rows[start:start + step]
                theta = (left * right if self.operation == "mul" else left / right).astype(np.float64)
                if portable:
                    value = sin_cos(theta, cosine, exact=dtype == "float64")
                else:
                    value = np.where(cosine, np.cos(theta), np.sin(theta))
                value[:, zero] = 0.0
                value[~np.isfinite(value)] = 0.0  # NaN's bits differ between CPUs: never predicted
                out[start:start + step] = value
        return out


@dataclass(frozen=True)
class Columns:
    """How a family's tables are made of sines and cosines, as a declaration states it: rows
    ``(values + offset) * scale`` for one of ``offsets``, and ``members(width)``, the
    ``(functions, exact frequency per column)`` of each way ``width`` columns may be made
    (``functions``: one of :data:`FUNCTIONS` per column)."""

    offsets: tuple[float, ...]
    scale: float
    members: Callable[[int], list[tuple[str, np.ndarray]]]


def rows_of(values, offset: float = 0.0, scale: float = 1.0) -> np.ndarray:
    """``(values + offset) * scale`` in float64."""
    with np.errstate(all="ignore"):
        return (np.asarray(values, dtype=np.float64) + offset) * scale


# -- finding the prediction of a table (the writer's side; any float arithmetic will do) ----

SCAN_ULPS = 32  # a target's frequency, as it rounded it, is found within this many ULPs of the exact one
_SAMPLE_ROWS = 24
_CLOSE = 1e-3  # a member whose values come this close is the one the table follows


def _neighbours(value: np.ndarray, dtype: str, steps: int) -> np.ndarray:
    """``value`` rounded to ``dtype`` and its neighbours up to ``steps`` ULPs away, as float64:
    shape ``(2 steps + 1, len(value))``, the rounding itself in row ``steps``."""
    unsigned = np.uint32 if dtype == "float32" else np.uint64
    bits = np.abs(value).astype(dtype).view(unsigned).astype(np.int64)
    moved = np.clip(bits[None, :] + np.arange(-steps, steps + 1)[:, None], 0, None).astype(unsigned)
    return moved.view(dtype).astype(np.float64) * np.sign(value)[None, :]


def fit(table: np.ndarray, positions: np.ndarray, members, scale: float = 1.0,
        offsets=(0.0,)) -> tuple[Prediction, float] | None:
    """The prediction that matches most elements of ``table`` (float32 or float64, shape
    ``(len(positions), width)``) exactly and the offset of its rows (one of ``offsets``), or
    None when no member comes close. ``members(width)``: the ``(functions, exact frequency
    per column)`` of each way the table's columns may be made (:class:`Columns`)."""
    length, width = table.shape
    if length == 0 or width == 0 or length != positions.size or table.dtype.name not in ANGLE_DTYPES:
        return None
    # The rows of the largest positions tell the roundings of a frequency apart best.
    order = np.argsort(-np.abs(np.nan_to_num(positions)), kind="stable")
    sample = np.sort(np.unique(np.concatenate([order[:_SAMPLE_ROWS // 2],
                                               np.linspace(0, length - 1, _SAMPLE_ROWS // 2).round().astype(int)])))
    want = table[sample]
    closest, nearness = None, 0
    for offset in dict.fromkeys(offsets):
        rows = rows_of(positions, offset, scale)
        for functions, omega in members(width):
            guess = Prediction(rows[sample], omega, functions, "float64", "mul").values("float64", portable=False)
            near = int(np.count_nonzero(np.abs(guess - want) <= _CLOSE))
            if near > nearness:
                closest, nearness = (rows, functions, omega, offset), near
    if closest is None or nearness < want.size // 2:  # a few values near a sine by chance are no table
        return None
    rows, functions, omega, offset = closest
    best, best_score = None, -1
    for angle_dtype in ANGLE_DTYPES:
        for operation in OPERATIONS:
            exact = omega if operation == "mul" else 1.0 / omega
            columns, score = _fit_columns(want, rows[sample], functions, exact, angle_dtype, operation)
            if score > best_score:
                best, best_score = Prediction(rows, columns, functions, angle_dtype, operation), score
    return best, offset


def _fit_columns(want, rows, functions, exact, angle_dtype, operation):
    """Each column's frequency among the neighbours of ``exact``: the one whose prediction
    matches ``want`` (the table at ``rows``) most often; and how many elements match in all."""
    candidates = _neighbours(exact, angle_dtype, SCAN_ULPS)
    best_columns, best_score = candidates[SCAN_ULPS].copy(), np.full(exact.size, -1)
    # The rounding of the exact frequency first, then outwards: a tie keeps the nearer one.
    for step in sorted(range(candidates.shape[0]), key=lambda index: abs(index - SCAN_ULPS)):
        guess = Prediction(rows, candidates[step], functions, angle_dtype, operation)
        score = (guess.values(want.dtype.name, portable=False) == want).sum(axis=0)
        better = score > best_score
        best_columns[better], best_score[better] = candidates[step][better], score[better]
    return best_columns, int(best_score.sum())
