"""Choose among the candidates of :mod:`.rope_fit` by the gate's own judgement.

Each candidate is first compared with the frequencies and factor the calls show
(:func:`distance`, cheap, to skip the ones far off), then judged on every fit call by the
gate's reading and formula check (:class:`~posenc_spec.families.rope.judge.RopeJudge`, the
bounds of :mod:`posenc_spec.tolerance`): the first within bound on all of them is the
answer; the one with the smallest error/tolerance ratio is the nearest.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.fit import Candidate, candidates
from posenc_spec.families.rope.judge import RopeJudge
from posenc_spec.families.rope.spec import RopeSpec
from posenc_spec.gate.judge import Results

if TYPE_CHECKING:
    from posenc_spec.families.rope.readings import Call, CallShape

NEAREST_JUDGED = 3  # when no candidate comes near the frequencies, the closest few are judged for "nearest"


def _judge(call: Call, candidate, shape: CallShape) -> RopeJudge:
    probe = call.probe
    layout = candidate.layout or "half"
    spec = RopeSpec(candidate.convention, (probe.head_dim,),
                    rope_layout=shape.rope_layout or (layout if probe.kind == "apply" else "half"),
                    cache_layout=layout if probe.kind == "cache" else "half", cache_form=shape.cache_form,
                    cache_call=shape.cache_call, x_layout=shape.x_layout)
    return RopeJudge(spec, shape.api, Results())


def judged(call: Call, outcome, candidate, shape: CallShape) -> float:
    """The largest error/tolerance ratio of one call under ``candidate``: the gate's own
    reading and formula check (and, for rope-freqs, its attention-factor check)."""
    return judged_by(_judge(call, candidate, shape), call.probe, outcome)


def judged_by(judge: RopeJudge, probe, outcome) -> float:
    """The largest error/tolerance ratio of one call as ``judge`` reads and checks it."""
    try:
        with np.errstate(all="ignore"):
            values, problem = judge.values(probe, outcome)
            if problem:
                return math.inf
            checks = [judge.formula(probe, values, "formula")]
            if probe.kind == "freqs":
                checks.append(judge.attention_factor(probe, values, "attention-factor"))
    except ValueError:  # the candidate has no value at this head size (longrope's lists)
        return math.inf
    return max(_ratio(check) for check in checks)


def unreadable(results, candidate, shape: CallShape) -> str | None:
    """Why the gate cannot read the first of ``[(call, outcome)]`` it cannot read under ``candidate``."""
    for call, outcome in results:
        try:
            _, problem = _judge(call, candidate, shape).values(call.probe, outcome)
        except ValueError as error:
            problem = str(error)
        if problem:
            return f"at {call.probe.slot} the gate reads: {problem}"
    return None


def _ratio(check) -> float:
    if check.worst is not None:
        return check.worst.ratio
    return 0.0 if check.passed or check.status == "skipped" else math.inf


def distance(candidate, readings, stop=math.inf) -> float:
    """How far the candidate's frequencies and factor are from the readings', in units of
    what the readings can tell (a thousandth, plus a phase error of 0.01 rad over the call);
    the first reading beyond ``stop`` ends the count."""
    conv, worst = candidate.convention, 0.0
    for reading in readings:
        if worst > stop:
            break
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
    try:
        found_candidates, structure = candidates(readings, max_positions) if readings else ([], None)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # values no rotation makes: no candidate
        found_candidates, structure = [], None
    usable = [(call, outcome) for call, outcome, reading in fit_results if reading is not None]

    def ratio(candidate, stop_above=math.inf):
        """The largest ratio over the fit calls; once above ``stop_above`` the rest are skipped
        (the value is then only a lower bound, above ``stop_above``)."""
        largest = -math.inf if usable else math.inf
        for call, outcome in usable:
            largest = max(largest, judged(call, outcome, candidate, shape))
            if largest > stop_above:
                break
        return largest

    readings.sort(key=lambda reading: -(reading.length or 0))  # the longest calls tell candidates apart first
    close = [candidate for candidate in found_candidates if distance(candidate, readings, stop=1.0) <= 1]
    nearest, nearest_ratio = None, math.inf
    for candidate in close:
        # Once above both 1 and the nearest ratio, a candidate is neither found nor nearest.
        value = ratio(candidate, stop_above=max(1.0, nearest_ratio))
        if value <= 1 and not candidate.nearest_only:
            return candidate, value, candidate, value, structure
        if value < nearest_ratio and nearest_ratio > 1:  # within bound, the preferred one stays nearest
            nearest, nearest_ratio = candidate, value
    if not close:
        distances = [distance(candidate, readings) for candidate in found_candidates]
        order = np.argsort(distances, kind="stable")[:NEAREST_JUDGED]
        for index in order:
            value = ratio(found_candidates[index], stop_above=nearest_ratio)
            if value < nearest_ratio:
                nearest, nearest_ratio = found_candidates[index], value
    answered = [(call, outcome) for call, outcome, _ in fit_results if outcome.ok]
    if nearest is None and answered:  # nothing read as a rotation: the classic convention, judged as is
        nearest = Candidate(RopeConvention(max_position_embeddings=max_positions),
                            None if shape.api == "rope-freqs" else "half")
        nearest_ratio = max(judged(call, outcome, nearest, shape) for call, outcome in answered)
    return None, nearest_ratio, nearest, nearest_ratio, structure
