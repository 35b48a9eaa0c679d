"""``identify --api rope-*``: which rotary convention does a target compute? Found from its calls.

The target is called in a sealed child, as ``check`` calls it, with requests built by
:class:`~posenc_spec.gate.rope.grid.RopeProbe` (head sizes 64 and 128, or ``--head-dim``):

- rope-freqs: ``fn(d)``; validated at head sizes 8 and 256 (none when the head size is declared).
- rope-cache: the declared call at positions ``0..63`` and at the gate's long positions (up
  to 131072; a ``length`` call: lengths 64 and 8193), and, at the first head size, a
  *ladder* of calls of ``0..63`` and one position more, of lengths ``2**k`` and ``2**k + 1``
  (``k`` 7 to 17; a ``length`` call: 7 to 13): where dynamic's base or longrope's factors
  switch shows between two rungs. Validated on seeded random positions below 131072 and
  below 6000 (lengths 100 and 6000).
- rope-apply: unit vectors (the rows of ``x`` are the identity, once per position) at
  positions ``0, 1, 2, 4, .. 32, 63`` and ``0, 1, 2, 4, .. 131072``, and the ladder: the
  result shows which features pair up and the angle of each pair
  (:mod:`.rope_readings`). Validated on the gate's seeded random ``x`` at random positions.

:mod:`.rope_fit` proposes conventions from what the calls show; each is judged by the
gate's own reading and formula check (:class:`~posenc_spec.gate.rope.judge.RopeJudge`,
the bounds of :mod:`posenc_spec.tolerance`) on every fit call, the first within bound
wins, and it must then pass the validation calls it was not fitted on: if it fails there
the answer is "none", with it as the nearest and its error/tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from posenc_spec.rope.conventions import RopeConvention

from ..declaration import DEFAULT_TIMEOUT, RunOptions
from ..judge import Results
from ..rope import grid
from ..rope.judge import RopeJudge
from ..rope.read import Unreadable
from ..rope.spec import RopeSpec
from ..runner import Slot
from ..sandbox import Limits, root_template
from . import IdentifyError
from .rope_fit import candidates
from .rope_readings import read_apply_call, read_cache_call, read_frequencies, unit_rows

FIT_HEAD_DIMS = (64, 128)
VALIDATION_HEAD_DIMS = (8, 256)
LADDER = range(7, 18)
LENGTH_LADDER = range(7, 14)
APPLY_SHORT = (0, 1, 2, 4, 8, 16, 32, 63)
APPLY_LONG = (0, 1, *(2**k for k in range(1, 18)))
VALIDATION_SEED = 20240917
VALIDATION_TOPS = (131072, 6000)
VALIDATION_LENGTHS = (100, 6000)
VALIDATION_DRAWS = 32
NEAREST_JUDGED = 3  # when no candidate comes near the frequencies, the closest few are judged for "nearest"


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


def _cache_probe(shape, slot, d, positions):
    x = grid.x_values(d, positions.size, "float32")[None] if shape.cache_call == "x-positions" else None
    return Call(grid.RopeProbe(slot, "cache", "table", d, positions, x, "float32" if x is not None else None,
                               call=shape.cache_call))


def _apply_probe(shape, slot, d, positions):
    positions = np.asarray(positions, dtype=np.int64)
    x, rows = unit_rows(d, positions)
    return Call(grid.RopeProbe(slot, "apply", "table", d, rows, x, "float32", x_layout=shape.x_layout), positions)


def _draws(top: int, count: int = VALIDATION_DRAWS) -> np.ndarray:
    drawn = np.random.default_rng(VALIDATION_SEED + top).integers(1, top, size=count)
    return np.unique(np.concatenate([[0], drawn])).astype(np.int64)


def probes(shape: CallShape, head_dim=None, max_positions=None) -> tuple[list[Call], list[Call]]:
    """``(fit calls, validation calls)`` (see the module docstring)."""
    heads = (head_dim,) if head_dim else FIT_HEAD_DIMS
    if shape.api == "rope-freqs":
        def freqs(d, name):
            return Call(grid.RopeProbe(f"{name}:d={d}", "freqs", "table", d))
        return ([freqs(d, "fit") for d in heads], [] if head_dim else [freqs(d, "check") for d in VALIDATION_HEAD_DIMS])
    short = np.arange(grid.SHORT, dtype=np.int64)
    fits, checks = [], []
    if shape.api == "rope-cache":
        length = shape.cache_call == "length"
        long = np.arange(grid.LENGTHS[1]) if length else grid.grid_positions(RopeConvention(), max_positions)
        for d in heads:
            fits += [_cache_probe(shape, f"fit:d={d}:short", d, short), _cache_probe(shape, f"fit:d={d}:long", d, long)]
            tops = VALIDATION_LENGTHS if length else VALIDATION_TOPS
            checks += [_cache_probe(shape, f"check:d={d}:{top}", d, np.arange(top) if length else _draws(top))
                       for top in tops]
        for k in LENGTH_LADDER if length else LADDER:
            for size in (2**k, 2**k + 1):
                positions = np.arange(size) if length else np.append(short, size - 1)
                fits.append(_cache_probe(shape, f"fit:d={heads[0]}:L={size}", heads[0], positions.astype(np.int64)))
        return fits, checks
    for d in heads:
        fits += [_apply_probe(shape, f"fit:d={d}:short", d, APPLY_SHORT),
                 _apply_probe(shape, f"fit:d={d}:long", d, APPLY_LONG)]
        for top in VALIDATION_TOPS:
            positions = _draws(top)
            x = grid.x_values(d, positions.size, "float32", VALIDATION_SEED % 1000)[None]
            checks.append(Call(grid.RopeProbe(f"check:d={d}:{top}", "apply", "table", d, positions, x, "float32",
                                              x_layout=shape.x_layout)))
    for k in LADDER:
        for size in (2**k, 2**k + 1):
            fits.append(_apply_probe(shape, f"fit:d={heads[0]}:L={size}", heads[0], (*APPLY_SHORT, size - 1)))
    return fits, checks


def read(call: Call, outcome, shape: CallShape):
    """``(reading, problem)`` of one fit call."""
    if not outcome.ok:
        return None, outcome.message
    try:
        if call.probe.kind == "freqs":
            return read_frequencies(outcome, call.probe.head_dim), None
        if call.probe.kind == "cache":
            return read_cache_call(outcome, call.probe, shape.cache_form, shape.cache_layout), None
        return read_apply_call(outcome, call.probe, call.positions), None
    except Unreadable as problem:
        return None, str(problem)


def judged(call: Call, outcome, candidate, shape: CallShape) -> float:
    """The largest error/tolerance ratio of one call under ``candidate``: the gate's own
    reading and formula check (and, for rope-freqs, its attention-factor check)."""
    probe = call.probe
    layout = candidate.layout or "half"
    spec = RopeSpec(candidate.convention, (probe.head_dim,),
                    rope_layout=shape.rope_layout or (layout if probe.kind == "apply" else "half"),
                    cache_layout=layout if probe.kind == "cache" else "half", cache_form=shape.cache_form,
                    cache_call=shape.cache_call, x_layout=shape.x_layout)
    judge = RopeJudge(spec, shape.api, Results())
    try:
        with np.errstate(all="ignore"):
            values, problem = judge._values(probe, outcome)
            if problem:
                return math.inf
            checks = [judge._formula(probe, values, "formula")]
            if probe.kind == "freqs":
                checks.append(judge._attention_factor(probe, values, "attention-factor"))
    except ValueError:  # the candidate has no value at this head size (longrope's lists)
        return math.inf
    return max(_ratio(check) for check in checks)


def _ratio(check) -> float:
    if check.worst is not None:
        return check.worst.ratio
    return 0.0 if check.passed or check.status == "skipped" else math.inf


def _distance(candidate, readings) -> float:
    """How far the candidate's frequencies and factor are from the readings', in units of
    what the readings can tell (a thousandth, plus a phase error of 0.01 rad over the call)."""
    conv, worst = candidate.convention, 0.0
    for reading in readings:
        try:
            expected, factor = conv.frequencies(reading.head_dim, reading.length)
        except ValueError:
            return math.inf
        n = reading.frequencies.size
        if expected.size < n or np.any(expected[n:] != 0):
            return math.inf
        slack = 1e-3 * np.abs(reading.frequencies) + (1e-2 / reading.length if reading.length else 0.0)
        with np.errstate(all="ignore"):
            worst = max(worst, float(np.max(np.abs(expected[:n] - reading.frequencies) / np.maximum(slack, 1e-300))))
        if reading.factor is not None:
            held = conv.cache_factor(factor) if reading.length is not None else factor
            worst = max(worst, abs(held - reading.factor) / (1e-3 * abs(reading.factor) + 1e-12))
    return worst if math.isfinite(worst) else math.inf


def fit(fit_results, shape: CallShape, max_positions=None):
    """``(found, its ratio, nearest, its ratio, structure)`` from ``[(call, outcome, reading)]``."""
    readings = [reading for _, _, reading in fit_results if reading is not None]
    found_candidates, structure = candidates(readings, max_positions) if readings else ([], None)
    usable = [(call, outcome) for call, outcome, reading in fit_results if reading is not None]

    def ratio(candidate):
        return max((judged(call, outcome, candidate, shape) for call, outcome in usable), default=math.inf)

    distances = [_distance(candidate, readings) for candidate in found_candidates]
    close = [candidate for candidate, distance in zip(found_candidates, distances, strict=True) if distance <= 1]
    nearest, nearest_ratio = None, math.inf
    for candidate in close:
        value = ratio(candidate)
        if value < nearest_ratio:
            nearest, nearest_ratio = candidate, value
        if value <= 1 and not candidate.nearest_only:
            return candidate, value, candidate, value, structure
    if not close:
        order = np.argsort(distances, kind="stable")[:NEAREST_JUDGED]
        for index in order:
            value = ratio(found_candidates[index])
            if value < nearest_ratio:
                nearest, nearest_ratio = found_candidates[index], value
    if nearest is None and usable:
        from .rope_fit import Candidate

        nearest = Candidate(RopeConvention(max_position_embeddings=max_positions), "half")
        nearest_ratio = ratio(nearest)
    return None, nearest_ratio, nearest, nearest_ratio, structure
