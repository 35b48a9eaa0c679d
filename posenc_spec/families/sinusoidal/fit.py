"""Fit the family's parameters to tables: which member does a target compute?

Each table is read under each structure (layout, first function, frequency shift): its
columns paired as that structure says, each pair read as ``z = cos + i sin``. Along evenly
spaced positions (spacing ``D``) the phase of pair ``k`` advances by ``w_k D`` per row, where
``w_k = scale * base ** -e_k``, so ``ln|w_k| = ln|scale| - k ln(base) / (h - shift)`` is a
straight line in ``k``. The steps below ``UNALIASED`` radians are read directly; a step
beyond it is only known modulo ``2 pi``, and the line through the unaliased pairs tells how
many whole turns it hides (with fewer than two unaliased pairs, the turns of the two
lowest frequencies are searched). The line gives the base and the scale; the phase at
position 0 gives the offset (the lowest frequency unambiguously, the higher ones refine it).

Rounded values (an integer base, offset and scale) are tried before the raw fit, and each
candidate is judged the way ``check`` judges: the largest error/tolerance ratio
(:mod:`posenc_spec.tolerance`) over every fitted table; the first within bound wins.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import FUNCTIONS, LAYOUTS, PRESETS, Convention
from posenc_spec.tolerance import compare

UNALIASED = 1.5  # radians per row: below pi/2, so the step's sign and size are read unambiguously
UNIT_MODULUS = 0.1  # |z| must be within this of 1 for columns to pair up into a rotating phase
MAX_TURNS = 16  # whole turns searched for the lowest frequencies when every step aliases
SCREEN_ROWS = 64  # rows a candidate is screened on before the whole sample: most fail there
_PRESET_SET = frozenset(PRESETS.values())


@dataclass(frozen=True, eq=False)
class Sample:
    """One table to fit or to validate on: values as float64, the dtype the tolerance
    follows, and the positions (or timesteps) of its rows."""

    table: np.ndarray
    dtype: str
    positions: np.ndarray


def ratio(sample: Sample, convention: Convention) -> float:
    """The largest error/tolerance ratio of ``sample`` against ``convention`` (inf when the
    convention has no value at its width). Only the presets' tables are cached: a fitted
    candidate is met once, and would push the gate's own tables out of the cache."""
    try:
        exp = checks.expectation(sample.positions, sample.table.shape[1], convention, sample.dtype,
                                 cached=convention in _PRESET_SET)
    except ValueError:
        return math.inf
    return compare(sample.table, exp.table, exp.tolerance).max_ratio


def max_ratio(samples, convention: Convention, stop_above: float = math.inf) -> float:
    """The largest :func:`ratio` over ``samples``; once it exceeds ``stop_above`` the rest
    are skipped (the value returned is then only a lower bound, above ``stop_above``)."""
    largest = -math.inf
    for sample in samples:
        if math.isfinite(stop_above) and sample.table.shape[0] > SCREEN_ROWS:
            rows = slice(None, None, sample.table.shape[0] // SCREEN_ROWS)  # a lower bound from a few rows
            screened = ratio(Sample(sample.table[rows], sample.dtype, sample.positions[rows]), convention)
            if screened > stop_above:
                return screened
        largest = max(largest, ratio(sample, convention))
        if largest > stop_above:
            break
    return largest


def _phases(sample: Sample, structure: Convention):
    """``z`` of every pair (rows x pairs, pairs from the highest frequency down), or None."""
    width = sample.table.shape[1]
    if width // 2 - structure.freq_shift < 1:
        return None
    columns = structure.columns(width - width % 2)
    first = np.flatnonzero(columns.is_first & (columns.partner >= 0))
    first = first[np.argsort(columns.pair[first])]
    second = columns.partner[first]
    sin_columns, cos_columns = (first, second) if structure.first == "sin" else (second, first)
    z = sample.table[:, cos_columns] + 1j * sample.table[:, sin_columns]
    if not np.all(np.isfinite(z)) or np.max(np.abs(np.abs(z) - 1.0)) > UNIT_MODULUS:
        return None
    return z


def _line(k, omega):
    """Least-squares ``ln|omega| = intercept + slope * k``."""
    slope, intercept = np.polyfit(k, np.log(np.abs(omega)), 1)
    return slope, intercept


def _unwrap(steps, spacing, slope, intercept, sign):
    """Every pair's frequency from its principal step and the line's prediction."""
    k = np.arange(steps.size)
    predicted = sign * np.exp(intercept + slope * k)
    turns = np.round((predicted * spacing - steps) / (2 * np.pi))
    return (steps + 2 * np.pi * turns) / spacing


def _frequencies(z, positions):
    """Candidate frequency vectors ``w_k`` (signed), best first."""
    spacing = float(np.mean(np.diff(positions)))
    if not spacing > 0:
        return []
    steps = np.angle(np.sum(z[1:] * np.conj(z[:-1]), axis=0))
    h = steps.size
    clear = []
    for k in range(h - 1, -1, -1):  # from the lowest frequency up, while the step is unaliased
        if abs(steps[k]) >= UNALIASED or steps[k] == 0:
            break
        clear.append(k)
    if len(clear) >= 2:
        clear = np.array(sorted(clear))
        sign = np.sign(np.median(steps[clear]))
        slope, intercept = _line(clear, steps[clear] / spacing)
        omega = _unwrap(steps, spacing, slope, intercept, sign)
        slope, intercept = _line(np.arange(h), omega)
        return [_unwrap(steps, spacing, slope, intercept, sign)]
    if h < 2:
        return []
    found = []  # every step aliases: search the turns hidden in the two lowest frequencies
    for low_turns, next_turns in itertools.product(range(MAX_TURNS), repeat=2):
        for sign in (1.0, -1.0):
            low = (steps[h - 1] + sign * 2 * np.pi * low_turns) / spacing
            nxt = (steps[h - 2] + sign * 2 * np.pi * next_turns) / spacing
            if low == 0 or nxt == 0 or np.sign(low) != np.sign(nxt) or abs(nxt) <= abs(low):
                continue
            slope, intercept = _line(np.array([h - 2, h - 1]), np.array([nxt, low]))
            omega = _unwrap(steps, spacing, slope, intercept, np.sign(low))
            misfit = np.abs(np.angle(np.exp(1j * (omega * spacing - steps)))).max()
            found.append((misfit, low_turns + next_turns, omega))
    found.sort(key=lambda item: (item[0] > 1e-3, item[1], item[0]))
    return [omega for _, _, omega in found[:3]]


def _offset(z, positions, omega) -> float:
    """The offset ``o`` with ``z ~ exp(i w (p + o))``: the lowest frequency first."""
    offset = None
    for k in np.argsort(np.abs(omega)):
        if omega[k] == 0:
            continue
        wrapped = float(np.angle(np.mean(z[:, k] * np.exp(-1j * omega[k] * positions))))
        if offset is None:
            offset = wrapped / omega[k]
        else:
            turns = round((offset * omega[k] - wrapped) / (2 * math.pi))
            offset = (wrapped + 2 * math.pi * turns) / omega[k]
    return float(offset or 0.0)


def fit(sample: Sample, structure: Convention):
    """``[(base, scale, offset), ...]`` under ``structure``'s layout, first function and
    shift, best first; empty when the columns do not pair up into rotating phases."""
    z = _phases(sample, structure)
    if z is None or z.shape[0] < 3:
        return []
    h = z.shape[1]
    fits = []
    for omega in _frequencies(z, sample.positions):
        if np.any(omega == 0):
            continue
        slope, intercept = _line(np.arange(h), omega)
        log_base = -slope * (h - structure.freq_shift)
        if not (log_base > 0 and math.isfinite(log_base) and log_base < 700):
            continue
        scale = float(np.sign(np.median(omega)) * math.exp(intercept))
        fits.append((math.exp(log_base), scale, _offset(z, sample.positions, omega)))
    return fits


def round_significant(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits (0, inf and NaN as they are)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def candidates(base: float, scale: float, offset: float):
    """Rounded values first, the raw fit last."""
    bases = [round(base), round_significant(base, 3), round_significant(base, 2), base]
    scales = [round(scale), round_significant(scale, 3), scale]
    offsets = [round(offset), offset]

    def unique(values, valid):
        seen = []
        for value in values:
            if valid(value) and all(abs(value - other) > 1e-12 * max(1.0, abs(value)) for other in seen):
                seen.append(value)
        return seen

    for b, s, o in itertools.product(unique(bases, lambda v: v > 1), unique(scales, lambda v: v != 0),
                                     unique(offsets, math.isfinite)):
        yield float(b), float(s), int(round(o)) if o == round(o) else float(o)


def structures():
    return [Convention(layout, first, shift)
            for layout, first, shift in itertools.product(LAYOUTS, FUNCTIONS, (0, 1))]


def best_member(samples) -> tuple[Convention | None, float, Convention | None, float]:
    """``(found, its ratio, nearest, its ratio)`` over the fitted ``samples``: ``found`` is
    the first candidate within bound on every sample (None when none is)."""
    widest = max(samples, key=lambda sample: sample.table.shape[1])
    nearest, nearest_ratio = None, math.inf
    for preset in PRESETS.values():
        value = max_ratio(samples, preset)
        if value < nearest_ratio:
            nearest, nearest_ratio = preset, value
    fits = []
    for structure in structures():
        for fitted in fit(widest, structure):
            try:
                raw = structure.replace(base=fitted[0], scale=fitted[1], offset=fitted[2])
            except ValueError:
                continue
            fits.append((max_ratio(samples, raw), structure, fitted))
    for _, structure, fitted in sorted(fits, key=lambda item: item[0]):  # the closest structure first
        for base, scale, offset in candidates(*fitted):
            try:
                candidate = structure.replace(base=base, scale=scale, offset=offset)
            except ValueError:
                continue
            # Once above both 1 and the nearest ratio, a candidate is neither found nor nearest.
            value = max_ratio(samples, candidate, stop_above=max(nearest_ratio, 1.0))
            if value < nearest_ratio:
                nearest, nearest_ratio = candidate, value
            if value <= 1.0:
                return candidate, value, candidate, value
    return None, nearest_ratio, nearest, nearest_ratio


def sample_of(probe, outcome) -> Sample | None:
    """The :class:`Sample` of one call's table (None: the call gave no usable table)."""
    from posenc_spec.families.sinusoidal.judge import call_problem

    if call_problem(probe, outcome):
        return None
    positions = np.arange(probe.length, dtype=np.float64) if probe.timesteps is None else probe.positions
    return Sample(np.asarray(outcome.table, dtype=np.float64), outcome.dtype, positions)


def name_of(convention: Convention) -> str:
    """The preset's name when the convention is one apart from its odd-width behaviour."""
    for name, preset in PRESETS.items():
        if convention.replace(odd=preset.odd) == preset:
            return name
    return convention.name()


def _fields(convention: Convention) -> dict:
    fields = convention.as_dict()
    for key in ("base", "offset", "scale"):
        if float(fields[key]).is_integer():
            fields[key] = int(fields[key])
    return fields


def _odd_behaviour(found: Convention, odd_probe, odd_outcome):
    if odd_outcome is None:
        return found, None, "odd widths not tried"
    if odd_outcome.status == "raised":
        return found.replace(odd="error"), "error", ""
    sample = sample_of(odd_probe, odd_outcome)
    if sample is None:
        return found, None, f"at width {odd_probe.width} it {odd_outcome.message}"
    for behaviour in ("zero-pad", "ceil"):
        try:
            candidate = found.replace(odd=behaviour)
        except ValueError:  # ceil is defined for shift 0 only
            continue
        if ratio(sample, candidate) <= 1.0:
            return candidate, behaviour, ""
    return found, None, "its odd-width table matches neither zero-pad nor ceil"


def answer(fit_samples, validation_samples=(), odd_probe=None, odd_outcome=None) -> dict:
    """The identify answer from tables already in hand (``check`` uses it to name the
    nearest member of a failing target)."""
    if not fit_samples:
        return {"name": "none", "convention": None, "max_error_ratio": None, "nearest": None,
                "message": "none: no table to identify"}
    found, found_ratio, nearest, nearest_ratio = best_member(fit_samples)
    notes = []
    if found is not None and validation_samples:
        checked = max_ratio(validation_samples, found)
        if checked > 1.0:
            notes.append(f"{name_of(found)} fits the fit tables but fails check's formula check elsewhere "
                         f"(error/tolerance {checked:.3g})")
            nearest, nearest_ratio, found = found, checked, None
    nearest_entry = None if nearest is None else {"name": name_of(nearest), "convention": _fields(nearest),
                                                  "max_error_ratio": nearest_ratio}
    if found is None:
        described = f"{nearest_entry['name']} (max error/tolerance {nearest_ratio:.3g})" if nearest_entry else "nothing"
        return {"name": "none", "convention": None, "max_error_ratio": nearest_ratio, "nearest": nearest_entry,
                "message": "; ".join([f"none: no member of the family fits; nearest {described}", *notes])}
    found, odd, note = _odd_behaviour(found, odd_probe, odd_outcome)
    fields = _fields(found)
    fields["odd"] = odd
    described = (f"{name_of(found)} ({found.layout}, {found.first} first, shift {found.freq_shift}, "
                 f"base {found.base:g}, offset {found.offset:g}, scale {found.scale:g}, "
                 f"odd widths: {odd or 'unidentified'})")
    return {"name": name_of(found), "convention": fields, "max_error_ratio": found_ratio, "nearest": nearest_entry,
            "message": f"identified {described}; max error/tolerance {found_ratio:.3g}"
                       + (f"; {note}" if note else "")}
