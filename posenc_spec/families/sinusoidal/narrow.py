"""Arithmetic in float16 or bfloat16 inside a sinusoidal target where the declared table is
computed wider: the tables say at which stage the values went through the narrow type.

Each stage is a definite table, or a definite set of them, that the failing tables must
match element by element (a false hint is a false alarm):

- ``channel-index-*``: the pair index ``k`` (or ``2k``) held in the narrow type before the
  exponent (``arange(half).to(bfloat16)``): exact up to 256 (bfloat16) or 2048 (float16)
  only; the table is the declared formula with ``k`` rounded, within the declared bound;
- ``frequencies-*``: the frequencies ``omega_k`` rounded to the narrow type (a buffer
  converted with the model) and the angle formed wider: the declared formula with each
  ``omega_k`` rounded, within the declared bound;
- ``output-*``: the declared table rounded to the narrow type once, returned in a wider one:
  every value is a number of the narrow type (among enough distinct ones), within the declared
  bound for that type's output (a table computed in the narrow type, its angles too, is the
  angle's stage below, returned in any type);
- ``angle-*``: the angle itself formed in the narrow type (positions, frequencies and their
  product): every element that fails the declared bound is ``sin`` or ``cos`` of a number of
  the narrow type within the angle error :mod:`.tolerance` allows arithmetic in that type
  (``(2 |x_k| + 5) u |theta|``), to the sine's and the outputs' rounding, and enough of them
  tell a rounded angle from any other small error (:mod:`posenc_spec.gate.narrow`).

bfloat16 is tried before float16: its numbers are float16's too (within float16's range),
so angles on bfloat16's coarser grid are the stronger evidence.
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import Convention
from posenc_spec.families.sinusoidal.frequencies import by_pair, explains
from posenc_spec.gate.calls import held_in
from posenc_spec.gate.narrow import MIN_TELLING, NARROW, held_throughout, rounded_angle_evidence, sampled
from posenc_spec.tolerance import unit_roundoff

ANGLE_ROUNDINGS = 5  # the angle's error in units of u |theta|, besides 2 |x_k| (tolerance.py, steps 1-3)


def _rounded_index(dtype: str):
    def omega(conv, width):
        numerator, denominator = conv.exponent_step(width)
        index = held_in(np.arange(conv.num_frequencies(width), dtype=np.float64), dtype).astype(np.float64)
        return conv.base ** -(index * numerator / denominator)
    return by_pair(omega)


def _rounded_frequencies(dtype: str):
    return by_pair(lambda conv, width: held_in(conv.frequencies(width), dtype).astype(np.float64))


def _matches(table, values: np.ndarray, tolerance: np.ndarray) -> bool:
    return bool(np.all(np.abs(table.sample.table - values) <= tolerance))


def _frequency_stage(declared: Convention, tables: list, dtype: str, make) -> bool:
    """Whether every table is the declared formula with the frequencies ``make`` gives, within
    the bound of its angles (and so, a failing one among them, differs from the declared table)."""
    return explains(declared, tables, make(dtype))


def _output_stage(declared: Convention, tables: list, dtype: str) -> bool:
    """Whether every table returned wider holds numbers of ``dtype`` only, within the declared
    bound for ``dtype`` output (the declared table rounded to ``dtype`` once)."""
    for table in tables:
        if unit_roundoff(table.sample.dtype) >= unit_roundoff(dtype):
            return False  # returned in the narrow type itself: the declared bound already holds its rounding
        if not held_throughout(table.sample.table, dtype):
            return False
        expected = checks.expectation(table.judged_at, table.width, declared, dtype)
        if not _matches(table, expected.table, expected.tolerance):
            return False
    return True


def _angle_evidence(declared: Convention, table, dtype: str) -> int | None:
    """How many failing elements of ``table`` tell an angle rounded to ``dtype`` (None when a
    failing element is no value of such an angle: :func:`posenc_spec.gate.narrow.rounded_angle_evidence`)."""
    conv = declared.for_width(table.width)
    expected = checks.expectation(table.judged_at, table.width, declared, table.sample.dtype)
    failing = np.flatnonzero(np.abs(table.sample.table - expected.table).ravel() > expected.tolerance.ravel())
    if failing.size == 0:
        return 0
    rows, cols = np.unravel_index(sampled(failing), table.sample.table.shape)
    columns = conv.columns(table.width)
    if np.any(columns.is_zero[cols]):
        return None  # a zero-padded column holds no angle
    theta, log_omega = oracle.angles(table.judged_at, table.width, conv)
    return rounded_angle_evidence(theta[rows, cols], 2 * np.abs(log_omega[cols]) + ANGLE_ROUNDINGS,
                                  expected.table[rows, cols], table.sample.table[rows, cols], dtype,
                                  table.sample.dtype)


def _angle_stage(declared: Convention, tables: list, dtype: str) -> bool:
    telling = 0
    for table in tables:
        found = _angle_evidence(declared, table, dtype)
        if found is None:
            return False
        telling += found
    return telling >= MIN_TELLING


def _stages(what: str):
    """``(slip, test, words)`` in the order they are tried (see the module docstring)."""
    found = []
    for dtype in NARROW:
        found += [
            (f"channel-index-{dtype}", lambda d, t, dtype=dtype: _frequency_stage(d, t, dtype, _rounded_index),
             f"the pair index held in {dtype} before the exponent ({dtype} holds every integer only up to "
             f"{_exact_integers(dtype)}): wide tables get wrong exponents; form the index in float32 or wider"),
            (f"frequencies-{dtype}", lambda d, t, dtype=dtype: _frequency_stage(d, t, dtype, _rounded_frequencies),
             f"the frequencies rounded to {dtype} (a buffer converted with the model) before the angle: the "
             f"angle's error grows with the {what}; keep the frequencies in float32 or wider"),
            (f"output-{dtype}", lambda d, t, dtype=dtype: _output_stage(d, t, dtype),
             f"every value is a {dtype} number: the table was stored in {dtype} and returned wider; keep it in "
             "float32 or wider"),
            (f"angle-{dtype}", lambda d, t, dtype=dtype: _angle_stage(d, t, dtype),
             f"the angle formed in {dtype} ({what}s, frequencies and their product): each wrong value is the "
             f"sine or cosine of a {dtype} number near its angle; form the angle in float32 or wider"),
        ]
    return found


def _exact_integers(dtype: str) -> int:
    return 2 ** int(-math.log2(unit_roundoff(dtype)))


def narrow_stage(declared: Convention, api: str, tables: list) -> tuple[str, str] | None:
    """``(slip, words)`` of the first stage that explains every table (:data:`Table`s of
    :mod:`.slips`, a failing one among them), or None."""
    if not any(table.failed for table in tables):
        return None
    what = "position" if api == "table" else "timestep"
    for slip, stage_explains, words in _stages(what):
        if stage_explains(declared, tables):
            return slip, words
    return None
