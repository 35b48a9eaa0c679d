"""Values computed from angles rounded to float16 or bfloat16: what a family's hint reads to
name arithmetic in a narrow type inside a target (the family knows the angles; this knows the
numbers of the narrow types).

Code that forms an angle in float16 or bfloat16 (positions, frequencies and their product in
that type) hands ``sin`` and ``cos`` a number of that type within the angle error its
arithmetic makes, ``relative * u * |theta|`` (``relative`` from the family's own tolerance
model, with ``u`` the narrow type's unit roundoff). :func:`rounded_angle_evidence` asks that
of every element a family passes in (those that fail the declared bound): each must be ``sin``
or ``cos`` of such a number, to the sine's rounding (2 ulp in float32), the narrow type's and
the output's (one rounding when the output is in the narrow type). Only an element where
neighbouring numbers of the narrow type give values :data:`SHARP` times that rounding apart
tells a rounded angle from any other small error: the count of those is the evidence, the
family asks for :data:`MIN_TELLING` at least.
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.gate.calls import held_in
from posenc_spec.tolerance import unit_roundoff

NARROW = ("bfloat16", "float16")  # coarser first: bfloat16's numbers are float16's too (within its range)
SHARP = 8.0  # neighbouring narrow angles give values this many roundings apart: a match is no accident
MIN_TELLING = 16  # elements that must tell a rounded angle from another small error
SAMPLED = 1 << 16  # elements read per table (evenly spread), so that a large table costs what a small one does
MAX_STEPS = 64  # narrow numbers tried on each side of an angle
SINE_ULPS = 2  # sin and cos of a float32 angle: within 2 ulp


def held_throughout(values: np.ndarray, dtype: str) -> bool:
    """Whether every one of ``values`` is a number of ``dtype``, among at least
    :data:`MIN_TELLING` distinct ones (a table of a few values, zeros and ones, any type holds):
    a table computed or stored in ``dtype`` and returned in a wider type."""
    values = np.asarray(values, np.float64)
    return bool(np.array_equal(held_in(values, dtype).astype(np.float64), values)) \
        and np.unique(values).size >= MIN_TELLING


def sampled(indices: np.ndarray) -> np.ndarray:
    """At most :data:`SAMPLED` of ``indices``, evenly spread."""
    return indices[np.linspace(0, indices.size - 1, min(indices.size, SAMPLED)).astype(np.int64)]


def stepped(magnitudes: np.ndarray, dtype: str, steps: int) -> np.ndarray:
    """The number of ``dtype`` ``steps`` places from the nearest one to each of ``magnitudes`` (>= 0)."""
    if dtype == "float16":
        bits = np.asarray(magnitudes).astype(np.float16).view(np.uint16).astype(np.int64) + steps
        return np.clip(bits, 0, 0x7BFF).astype(np.uint16).view(np.float16).astype(np.float64)
    bits = held_in(magnitudes, dtype).view(np.uint32).astype(np.int64) + steps * 0x10000
    return np.clip(bits, 0, 0x7F7F0000).astype(np.uint32).view(np.float32).astype(np.float64)


def rounded_angle_evidence(theta, relative, exact, values, dtype: str, out_dtype: str) -> int | None:
    """How many of the elements (exact angles ``theta`` and values ``exact``, each the sine
    or the cosine of its angle; the target's ``values``) tell an angle rounded to ``dtype``;
    None when one of them is no value of a ``dtype`` angle within ``relative * u * |theta|``
    of its own."""
    theta, values = np.asarray(theta, np.float64), np.asarray(values, np.float64)
    sine = np.abs(np.sin(theta) - exact) <= np.abs(np.cos(theta) - exact)
    # the sine in float32, then the value rounded to the narrow type, then to the output's (once, when the same)
    rounding = SINE_ULPS * 2 * unit_roundoff("float32") + unit_roundoff(dtype) \
        + (unit_roundoff(out_dtype) if out_dtype != dtype else 0.0)
    window = np.asarray(relative, np.float64) * unit_roundoff(dtype) * np.abs(theta)
    magnitude, sign = np.abs(theta), np.sign(theta)
    nearest = stepped(magnitude, dtype, 0)
    spacing = stepped(magnitude, dtype, 1) - nearest
    if not values.size:
        return 0
    reach = int(min(MAX_STEPS, math.ceil(float(np.max(window / np.maximum(spacing, 1e-300)))) + 1))
    matched = np.zeros(values.shape, dtype=bool)
    for steps in range(-reach, reach + 1):
        angle = stepped(magnitude, dtype, steps)
        inside = np.abs(angle - magnitude) <= window + spacing
        predicted = np.where(sine, np.sin(sign * angle), np.cos(sign * angle))
        matched |= inside & (np.abs(predicted - values) <= rounding)
    if not matched.all():
        return None
    slope = np.where(sine, np.abs(np.cos(theta)), np.abs(np.sin(theta)))  # |d value / d angle|
    return int(np.count_nonzero(spacing * slope >= SHARP * rounding))
