"""What one call of a RoPE target shows, read without assuming a convention.

Each call becomes a :class:`Reading`: the frequency ``f_i`` of every pair, the factor ``A``
that multiplies cos and sin, and the structure the call reveals.

- rope-freqs: ``fn(d)`` returns the frequencies themselves (and ``A`` when a tuple; a bare
  array declares ``A = 1``).
- rope-cache: ``z_i(p) = cos + i sin`` per pair. The cache layout, when not declared, is
  read from the columns: ``[c | c]`` is ``half``, ``c0 c0 c1 c1 ...`` ``interleaved``, anything
  else ``compact``. ``A`` is the cos at position 0 (an ``angles`` cache holds none: the
  reading leaves it unknown, None).
- rope-apply: the rows of ``x`` are unit vectors ``e_j``, one set per position, so the
  result at position ``p`` is the matrix ``M_p`` whose row ``j`` is where ``e_j`` goes.
  Features ``j`` and ``k`` form a pair when ``M_p[j, k] != 0`` (a correct rotation of a unit
  vector writes exact zeros everywhere else); a feature that never moves passes through.
  The pairs give the layout (partner ``a + 1``: interleaved; ``a + r/2``: half; ``a + d/2``
  with fewer than ``d/2`` pairs moving: Gemma 4's proportional pairing), the rotated block
  (first or last features) and ``r``; ``z_i(p) = M_p[a, a] + i M_p[a, b]``.

Frequencies come from the phases of ``z_i`` over the call's positions in increasing order:
each phase is unwrapped with the estimate of the positions before it (the least-squares
slope through the origin), so the positions ``1, 2, 4, ...`` (each at most twice the last)
read even the fastest frequency at position 131072 without aliasing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.families.rope import grid
from posenc_spec.families.rope.read import Unreadable, effective_layout, freqs_parts, read_apply, read_cache

AGREE = 1e-3  # relative: two calls within this of each other show the same frequencies
# Items per row of each cache form, in units of the width of one of cos and sin.
_ITEMS_PER_WIDTH = {"cos-sin": 1, "complex": 1, "angles": 1, "sin-cos-cat": 2, "cos-sin-cat": 2, "stacked": 2}


@dataclass(frozen=True)
class CallShape:
    """How the target is called and what it returns (the user's flags; None: read from the data)."""

    api: str
    cache_form: str = "cos-sin"
    cache_layout: str | None = None
    cache_call: str = "positions"
    x_layout: str = "bshd"
    rope_layout: str | None = None


@dataclass(frozen=True, eq=False)
class Call:
    """A probe and, for apply, the distinct positions of its unit-vector blocks."""

    probe: grid.RopeProbe
    positions: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Reading:
    """One call read: ``length`` is the call's ``max(positions) + 1`` (None for rope-freqs);
    ``frequencies`` one per pair in pair order; ``factor`` ``A`` (None when the call does
    not show it). ``layout`` is what the call reveals of the pairing (cache: half,
    interleaved or compact; apply: half, interleaved or proportional), ``start`` the first
    rotated feature of an apply call."""

    head_dim: int
    length: int | None
    frequencies: np.ndarray
    factor: float | None
    layout: str | None = None
    start: int = 0


def phase_frequencies(z: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Each column's frequency from ``z`` (rows at ``positions``, see the module docstring).

    Rows are unwrapped a batch at a time, each batch the positions up to twice its first:
    the estimate of the rows before it is off by less than a quarter turn at its first
    position, so by less than half a turn anywhere in it."""
    order = np.argsort(positions, kind="stable")
    p = positions[order].astype(np.float64)
    phase = np.angle(z[order])
    p, phase = p[p > 0], phase[p > 0]
    estimate = np.zeros(z.shape[1])
    numerator, denominator, start = np.zeros(z.shape[1]), 0.0, 0
    while start < p.size:
        stop = int(np.searchsorted(p, 2 * p[start], side="right"))
        batch, unwrapped = p[start:stop], phase[start:stop]
        if start:
            unwrapped = unwrapped + 2 * np.pi * np.round((np.outer(batch, estimate) - unwrapped) / (2 * np.pi))
        numerator += batch @ unwrapped
        denominator += float(batch @ batch)
        estimate, start = numerator / denominator, stop
    return estimate


def read_frequencies(outcome, head_dim: int) -> Reading:
    """A rope-freqs call: ``inv_freq`` or ``(inv_freq, attention_factor)``; a bare ``inv_freq``
    declares ``A = 1`` (as the gate reads it)."""
    inv_freq, factor = freqs_parts(outcome)
    inv_freq = inv_freq.astype(np.float64).reshape(-1)
    if not 1 <= inv_freq.size <= head_dim // 2:
        raise Unreadable(f"returned {inv_freq.size} frequencies for head size {head_dim}")
    return Reading(head_dim, None, inv_freq, 1.0 if factor is None else factor)


def cache_pairs(outcome, form: str, layout: str | None, rows: int) -> int:
    """Pairs a cache call holds, from its size: ``layout`` None counts compact columns."""
    if not outcome.arrays or rows < 1:
        raise Unreadable("returned nothing")
    width, rest = divmod(np.asarray(outcome.arrays[0]).size, rows * _ITEMS_PER_WIDTH[form])
    compact = effective_layout(form, layout) in (None, "compact")
    if rest or width < 1 or (not compact and width % 2):
        raise Unreadable(f"returned {np.asarray(outcome.arrays[0]).size} values for {rows} positions")
    return width if compact else width // 2


def _detect_layout(parts) -> str:
    width = parts[0].shape[1]
    if width % 2 == 0 and all(np.array_equal(part[:, : width // 2], part[:, width // 2:]) for part in parts):
        return "half"
    if width % 2 == 0 and all(np.array_equal(part[:, 0::2], part[:, 1::2]) for part in parts):
        return "interleaved"
    return "compact"


def _compact(part: np.ndarray, layout: str) -> np.ndarray:
    if layout == "half":
        return part[:, : part.shape[1] // 2]
    return part[:, 0::2] if layout == "interleaved" else part


def read_cache_call(outcome, probe, form: str, layout: str | None) -> Reading:
    """A rope-cache call in the declared form; ``layout`` None reads it from the columns."""
    rows = probe.positions.size
    fixed = effective_layout(form, layout)
    pairs = cache_pairs(outcome, form, fixed, rows)
    parts, _ = read_cache(outcome, form, fixed or "compact", rows, pairs)
    found = fixed or _detect_layout(parts)
    parts = [_compact(part, found) for part in parts]
    length = int(probe.positions.max()) + 1
    if form == "angles":
        p = probe.positions.astype(np.float64)
        denominator = float(np.sum(p**2))
        frequencies = parts[0].T @ p / denominator if denominator else np.zeros(parts[0].shape[1])
        return Reading(probe.head_dim, length, frequencies, None, found)
    cos, sin = parts
    zero = np.flatnonzero(probe.positions == 0)
    factor = float(np.median(cos[zero])) if zero.size else float(np.median(np.hypot(cos, sin)))
    return Reading(probe.head_dim, length, phase_frequencies(cos + 1j * sin, probe.positions), factor, found)


def unit_rows(head_dim: int, positions) -> tuple[np.ndarray, np.ndarray]:
    """``(x, positions)`` of an apply call: the ``head_dim`` unit vectors at each position,
    as the canonical ``(1, 1, rows, head_dim)`` float32 values."""
    positions = np.asarray(positions, dtype=np.int64)
    x = np.tile(np.eye(head_dim, dtype=np.float32), (positions.size, 1))
    return x[None, None], np.repeat(positions, head_dim)


def _pairs(blocks: np.ndarray) -> list[tuple[int, int]]:
    """``(a, b)`` of every pair that moves, ``a < b``; Unreadable when features do not pair."""
    moved = np.any(blocks != 0, axis=0)  # (d, d): e_j reached feature k somewhere
    np.fill_diagonal(moved, False)
    pairs = []
    for j in range(moved.shape[0]):
        partners = np.flatnonzero(moved[j])
        if partners.size > 1:
            raise Unreadable(f"feature {j} mixes with {partners.size} others (features {partners[:4].tolist()}...): "
                             "not a rotation of pairs")
        if partners.size == 1:
            k = int(partners[0])
            if np.flatnonzero(moved[k]).tolist() != [j]:
                raise Unreadable(f"feature {j} moves into feature {k} but not back: not a rotation of pairs")
            if j < k:
                pairs.append((j, k))
    if not pairs:
        raise Unreadable("no feature moved at any position: nothing rotates")
    return pairs


def _layout(pairs, head_dim: int) -> tuple[str, int]:
    """``(layout, first rotated feature)`` of the pairs, or Unreadable."""
    a = np.array([pair[0] for pair in pairs])
    b = np.array([pair[1] for pair in pairs])
    n = a.size
    if np.all(b - a == 1) and np.array_equal(a, a[0] + 2 * np.arange(n)):
        return "interleaved", int(a[0])
    if np.array_equal(a, a[0] + np.arange(n)) and np.all(b - a == n):
        return "half", int(a[0])
    if n < head_dim // 2 and np.array_equal(a, np.arange(n)) and np.all(b - a == head_dim // 2):
        return "proportional", 0
    raise Unreadable(f"pairs {pairs[:3]}... are neither (i, i + r/2), (2i, 2i + 1) nor (i, i + d/2)")


def read_apply_call(outcome, probe, positions: np.ndarray) -> Reading:
    """A rope-apply call on :func:`unit_rows` at ``positions`` (one block of rows each)."""
    d = probe.head_dim
    result, _ = read_apply(outcome, grid.to_layout(probe.x, probe.x_layout).shape, probe.x_dtype,
                           lambda y: grid.from_layout(y, probe.x_layout))
    blocks = result.reshape(positions.size, d, d)
    if not np.all(np.isfinite(blocks)):
        raise Unreadable("returned NaN or Inf")
    pairs = _pairs(blocks[positions > 0])
    layout, start = _layout(pairs, d)
    a, b = np.array(pairs).T
    z = blocks[:, a, a] + 1j * blocks[:, a, b]
    zero = np.flatnonzero(positions == 0)
    factor = float(np.median(blocks[zero][:, a, a])) if zero.size else float(np.median(np.abs(z)))
    return Reading(d, int(positions.max()) + 1, phase_frequencies(z, positions), factor, layout, start)


def agrees(reading, other) -> bool:
    """Whether two calls show the same frequencies (within ``AGREE``)."""
    return (reading.frequencies.shape == other.frequencies.shape
            and np.allclose(reading.frequencies, other.frequencies, rtol=AGREE, atol=0))


def reference(readings) -> dict:
    """Per head size, the longest call whose frequencies agree with its shortest's (the most
    precise reading of the frequencies at short lengths)."""
    shortest = {}
    for reading in readings:
        if reading.head_dim not in shortest or (reading.length or 0) < (shortest[reading.head_dim].length or 0):
            shortest[reading.head_dim] = reading
    found = dict(shortest)
    for reading in readings:
        longer = (reading.length or 0) > (found[reading.head_dim].length or 0)
        if longer and agrees(reading, shortest[reading.head_dim]):
            found[reading.head_dim] = reading
    return found
