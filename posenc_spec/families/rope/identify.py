"""``identify --api rope-*``: which rotary convention does a target compute? Found from its calls.

The target is called in a sealed child, as ``check`` calls it, with requests built by
:class:`~posenc_spec.families.rope.grid.RopeProbe` (head sizes 64 and 128, or ``--head-dim``):

- rope-freqs: ``fn(d)``; validated at head sizes 8 and 256 (none when the head size is declared).
- rope-cache: the declared call at positions ``0..63`` and at the gate's long positions (up
  to 131072; a ``length`` call: lengths 64 and 8193), and, at the first head size, a
  *ladder* of calls of ``0..63`` and one position more, of lengths ``2**k`` and ``2**k + 1``
  (``k`` 7 to 17; a ``length`` call: 7 to 13): where dynamic's base or longrope's factors
  switch shows between two rungs. Validated on seeded random positions below 131072 and
  below 6000 (lengths 100 and 6000).
- rope-apply: unit vectors (the rows of ``x`` are the identity, once per position) at
  positions ``0, 1, 2, 4, .. 32, 63`` and ``0, 1, 2, 4, .. 131072``, and the ladder (positions
  0, 1 and the rung's last): the
  result shows which features pair up and the angle of each pair
  (:mod:`.rope_readings`). Validated on the gate's seeded random ``x`` at random positions.

:mod:`.rope_fit` proposes conventions from what the calls show; each is judged by the
gate's own reading and formula check (:class:`~posenc_spec.families.rope.judge.RopeJudge`,
the bounds of :mod:`posenc_spec.tolerance`) on every fit call, the first within bound
wins, and it must then pass the validation calls it was not fitted on: if it fails there
the answer is "none", with it as the nearest and its error/tolerance.
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.families.rope import grid
from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.read import Unreadable
from posenc_spec.families.rope.readings import (
    Call,
    CallShape,
    read_apply_call,
    read_cache_call,
    read_frequencies,
    unit_rows,
)
from posenc_spec.families.rope.select import fit, judged, unreadable
from posenc_spec.gate.declaration import DEFAULT_TIMEOUT
from posenc_spec.gate.identify import answer_each
from posenc_spec.gate.options import RunOptions

FIT_HEAD_DIMS = (64, 128)
VALIDATION_HEAD_DIMS = (8, 256)
LADDER = range(7, 18)
LENGTH_LADDER = range(7, 14)
APPLY_SHORT = (0, 1, 2, 4, 8, 16, 32, 63)
APPLY_LONG = (0, 1, *(2**k for k in range(1, 18)))
APPLY_RUNG = (0, 1)  # and the rung's last position: from position 1 a frequency is off by ~1e-7 rad
VALIDATION_SEED = 20240917
VALIDATION_TOPS = (131072, 6000)
VALIDATION_LENGTHS = (100, 6000)
VALIDATION_DRAWS = 32
MAX_NOTES = 3  # call problems named in a message; the rest are counted
CACHE_SHAPE = CallShape("rope-cache")  # the default: a cache called as fn(positions, head_dim)


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
    """``(fit calls, validation calls)`` (see the module docstring); with ``max_positions``
    every position stays below it (a model's table holds positions ``0..N-1``)."""
    heads = (head_dim,) if head_dim else FIT_HEAD_DIMS
    if shape.api == "rope-freqs":
        def freqs(d, name):
            return Call(grid.RopeProbe(f"{name}:d={d}", "freqs", "table", d))
        return ([freqs(d, "fit") for d in heads], [] if head_dim else [freqs(d, "check") for d in VALIDATION_HEAD_DIMS])
    limit = max_positions or math.inf
    short = grid.capped(np.arange(grid.SHORT, dtype=np.int64), max_positions)
    tops = [top for top in (VALIDATION_LENGTHS if shape.cache_call == "length" and shape.api == "rope-cache"
                            else VALIDATION_TOPS) if top <= limit] or [int(limit)]
    rungs = [size for k in (LENGTH_LADDER if shape.cache_call == "length" else LADDER)
             for size in (2**k, 2**k + 1) if size <= limit]
    fits, checks = [], []
    if shape.api == "rope-cache":
        length = shape.cache_call == "length"
        long = grid.capped(np.arange(grid.LENGTHS[1], dtype=np.int64) if length
                           else grid.grid_positions(RopeConvention(), max_positions), max_positions)
        for d in heads:
            fits += [_cache_probe(shape, f"fit:d={d}:short", d, short), _cache_probe(shape, f"fit:d={d}:long", d, long)]
            checks += [_cache_probe(shape, f"check:d={d}:{top}", d, np.arange(top) if length else _draws(top))
                       for top in tops]
        for size in rungs:
            positions = np.arange(size) if length else np.append(short, size - 1)
            fits.append(_cache_probe(shape, f"fit:d={heads[0]}:L={size}", heads[0], positions.astype(np.int64)))
        return fits, checks
    for d in heads:
        fits += [_apply_probe(shape, f"fit:d={d}:{name}", d, grid.capped(np.array(positions), max_positions))
                 for name, positions in (("short", APPLY_SHORT), ("long", APPLY_LONG))]
        for top in tops:
            positions = _draws(top)
            x = grid.x_values(d, positions.size, "float32", VALIDATION_SEED % 1000)[None]
            checks.append(Call(grid.RopeProbe(f"check:d={d}:{top}", "apply", "table", d, positions, x, "float32",
                                              x_layout=shape.x_layout)))
    for size in rungs:
        fits.append(_apply_probe(shape, f"fit:d={heads[0]}:L={size}", heads[0], (*APPLY_RUNG, size - 1)))
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


def _layout(candidate, shape: CallShape) -> str | None:
    """The layout a candidate is judged under: the declared pairing of an apply call, else its own."""
    return (shape.rope_layout if shape.api == "rope-apply" else None) or candidate.layout


def _entry(candidate, ratio, heads, shape: CallShape) -> dict | None:
    if candidate is None:
        return None
    conv = candidate.convention
    return {"name": conv.rope_type, "convention": {**conv.as_dict(), "layout": _layout(candidate, shape),
                                                   "head_dim": list(heads)}, "max_error_ratio": ratio}


def _validation_ratio(candidate, validation_results, shape) -> tuple[float, str | None, list[str]]:
    """The worst ratio of ``candidate`` on the validation calls, where, and the calls skipped."""
    worst, where, skipped = 0.0, None, []
    for call, outcome in validation_results:
        try:
            candidate.convention.frequencies(call.probe.head_dim)
        except ValueError:
            skipped.append(f"not validated at head size {call.probe.head_dim}: the convention has no value there")
            continue
        value = judged(call, outcome, candidate, shape)
        if value > worst:
            worst, where = value, call.probe.slot
    return worst, where, skipped


def _determined(candidate, api: str) -> list[str]:
    """What the data left open in a found convention."""
    conv, notes = candidate.convention, []
    if conv.rope_type == "llama3":
        l0 = conv.param("original_max_position_embeddings")
        notes.append(f"the data fix the band edges L0/low_freq_factor = {l0 / conv.param('low_freq_factor'):g} and "
                     f"L0/high_freq_factor = {l0 / conv.param('high_freq_factor'):g}, not L0 itself")
    elif conv.rope_type == "yarn":
        notes.append("beta_fast 32 and beta_slow 1 assumed: the data fix the correction range, not the betas")
    elif conv.rope_type == "longrope":
        notes.append(f"only theta**(-2i/r)/ext_i is determined: the factors are those for theta {conv.theta:g}; "
                     f"L0 {conv.param('original_max_position_embeddings')} is the longest call that kept the "
                     "short factors")
    if api == "rope-freqs":
        notes.append("rope-freqs shows the frequencies at no call length (a dynamic base or longrope's long "
                     "factors would not show)")
    return notes


def answer(fit_results, validation_results=(), shape: CallShape = CACHE_SHAPE, max_positions=None) -> dict:
    """The identify answer from calls already made: ``fit_results`` as ``[(call, outcome,
    reading)]``, ``validation_results`` as ``[(call, outcome)]``."""
    heads = sorted({call.probe.head_dim for call, _, _ in fit_results})
    found, ratio, nearest, nearest_ratio, structure = fit(fit_results, shape, max_positions)
    notes = []
    seen = structure.layout if structure is not None else None
    if shape.rope_layout and seen and (seen if seen != "proportional" else "half") != shape.rope_layout:
        notes.append(f"the calls pair the features as {seen}, not as the declared {shape.rope_layout}")
    if found is not None:
        checked, worst, skipped = _validation_ratio(found, validation_results, shape)
        notes += skipped
        if checked > 1:
            notes.append(f"{found.convention.rope_type} fits the fit calls but fails the gate's formula check on a "
                         f"call it was not fitted on ({worst}: error/tolerance {checked:.3g})")
            nearest, nearest_ratio, found = found, checked, None
        elif not validation_results:
            notes.append("no call left to validate on (a declared head size)")
    elif nearest is not None and not math.isfinite(nearest_ratio) and validation_results:
        checked, _, _ = _validation_ratio(nearest, validation_results, shape)
        if math.isfinite(checked):  # unit vectors leave a zero bound off their pairs: random x measures
            nearest_ratio = checked
            notes.append("the nearest's ratio is measured on the calls with random x")
    nearest_entry = _entry(nearest, nearest_ratio, heads, shape)
    if found is None:
        if nearest is not None and nearest.why:
            notes.append(nearest.why)
        if nearest is not None and not math.isfinite(nearest_ratio):
            why = unreadable([(call, outcome) for call, outcome, _ in fit_results], nearest, shape)
            notes += [why] if why else []
        described = (f"{nearest.convention.describe()}, {_layout(nearest, shape) or 'no'} layout (max "
                     f"error/tolerance {nearest_ratio:.3g})") if nearest is not None else "nothing"
        return {"name": "none", "convention": None, "max_error_ratio": nearest_ratio, "nearest": nearest_entry,
                "message": "; ".join([f"none: no rotary convention fits; nearest {described}", *notes])}
    entry = _entry(found, ratio, heads, shape)
    layout = f", {_layout(found, shape)} layout" if _layout(found, shape) else ""
    notes = [*_determined(found, shape.api), *notes]
    return {**entry, "nearest": nearest_entry,
            "message": "; ".join([f"identified {found.convention.describe()}{layout}; max error/tolerance "
                                  f"{ratio:.3g}", *notes])}


def _problems(fit_results) -> list[str]:
    problems = [f"at {call.probe.slot} it {problem}" for call, _, problem in fit_results if problem]
    if len(problems) > MAX_NOTES:
        problems = [*problems[:MAX_NOTES], f"and {len(problems) - MAX_NOTES} more calls"]
    return problems


def identify_many(targets, shape: CallShape, head_dim=None, max_positions=None, timeout: float = DEFAULT_TIMEOUT,
                  options: RunOptions | None = None, call=None) -> list[dict]:
    """The identify answer for each target, each imported and called in its own sealed
    child, as ``call`` (the declaration of how it is called: signature, ``init``, ``method``,
    ``kwargs``; None: the API's own call) says. :class:`IdentifyError` when a target cannot
    be imported."""
    fits, checks = probes(shape, head_dim, max_positions)
    calls = [*fits, *checks]

    def answer_of(target, outcomes) -> dict:
        read_fits = [(call, outcome, *read(call, outcome, shape))
                     for call, outcome in zip(fits, outcomes[: len(fits)], strict=True)]
        with np.errstate(all="ignore"):
            result = answer([(call, outcome, reading) for call, outcome, reading, _ in read_fits],
                            list(zip(checks, outcomes[len(fits):], strict=True)), shape, max_positions)
        problems = _problems([(call, outcome, problem) for call, outcome, _, problem in read_fits])
        if problems:
            result["message"] += "; " + "; ".join(problems)
        return {"target": target, **result}

    def declaration_of(target, result):
        from posenc_spec.families.rope.declared import rope_answer_keys
        from posenc_spec.gate.declaration import declare

        return declare({"target": target, **rope_answer_keys(result, shape, head_dim, max_positions, call),
                        "timeout": timeout})

    return answer_each(targets, [made.probe.request() for made in calls], timeout, options, answer_of,
                       declaration_of, how=call.how() if call is not None else None,
                       strict=call is not None and call.strict)


def identify_handed_rotation(call, declared_layout: str | None, options: RunOptions | None = None) -> dict:
    """The answer for an apply target handed its rotation (``q-k-cos-sin``, ``xq-xk-freqs-cis``):
    the gate hands cos and sin (or ``freqs_cis``) of ``call``'s convention, so the target decides
    only how it pairs the features with them. Each pairing (``declared_layout`` first) is judged
    by ``check``'s whole grid in one sealed child; the first it accepts is the answer, else
    "none" with the declared (or default) pairing's verdict as the nearest."""
    import dataclasses

    from posenc_spec.families.rope.spec import ROPE_LAYOUTS
    from posenc_spec.gate.identify import check_each

    layouts = tuple(dict.fromkeys((declared_layout or call.spec.rope_layout, *ROPE_LAYOUTS)))
    heads = list(call.spec.head_dims)
    candidates = []
    for layout in layouts:
        declaration = dataclasses.replace(call, spec=dataclasses.replace(call.spec, rope_layout=layout))
        convention = {**call.spec.convention.as_dict(), "layout": layout, "head_dim": heads}
        result = {"target": call.name, "name": call.spec.convention.rope_type, "convention": convention,
                  "max_error_ratio": 0.0, "nearest": None,
                  "message": f"identified {layout} pairs of the cos and sin it is handed "
                             f"({call.calling.signature}, {call.spec.convention.describe()})"}
        candidates.append((result, declaration))
    answers = check_each(candidates, call.timeout, options)
    return next((answer for answer in answers if answer["convention"] is not None), answers[0])


# Relative: identify reads theta from the frequencies to about six digits, so two thetas closer than this
# are one answer (a declared theta is no slip of an answer it reads back).
THETA_READ_REL = 1e-5


def known_slip(found: dict, declared, declared_layout: str | None):
    """The :class:`~posenc_spec.gate.identify.hint.Hint` of the slips that take ``declared`` (a
    declared :class:`~.conventions.RopeConvention` and its pairing) to ``found`` (an answer's
    convention), where each difference is one a slip makes; None when none is."""
    from posenc_spec.families.rope.declared import rope_differences
    from posenc_spec.gate.identify.hint import Hint

    slips = []
    if found.get("layout") is not None and declared_layout is not None and found["layout"] != declared_layout:
        slips.append("rope-layout")
    if not math.isclose(found["theta"], declared.theta, rel_tol=THETA_READ_REL):
        slips.append("theta")
    if found["rope_type"] == "default" and declared.rope_type != "default":
        slips.append("scaling-type-dropped")
    full = found.get("rotary_dim") is None and found.get("partial_rotary_factor", 1.0) == 1.0
    if full and (declared.rotary_dim is not None or declared.partial_rotary_factor != 1.0):
        slips.append("partial-rotary-ignored")
    if not slips:
        return None
    words = "; ".join(rope_differences(found, found.get("layout"), declared, declared_layout))
    return Hint(tuple(slips), f"it is the declared convention with a slip ({words})")


# The rope_theta of released checkpoints (Llama 2 and most others, Llama 3, Qwen2 and Mistral, Qwen3's longer
# variants): an answer whose theta is the square root of one of these, and no integer, is the `i/d` slip of it.
PRESET_THETAS = {10000.0: "the usual 10000", 500000.0: "Llama 3's 500000", 1000000.0: "Qwen2's and Mistral's 1e6",
                 5000000.0: "5e6 (Qwen3's long variants)"}


def undeclared_slip(found: dict):
    """The :class:`~posenc_spec.gate.identify.hint.Hint` of an answer no model means: theta the
    square root of a released checkpoint's (:data:`PRESET_THETAS`) and no integer, the
    frequencies of that theta with the exponent ``i/d`` where ``2i/d`` belongs. An integer root
    (100 of 10000, 1000 of 1e6) is no slip: vision models' 2-D RoPE means theta 100. None
    when the answer is none of these."""
    from posenc_spec.gate.identify.hint import Hint

    theta = float(found["theta"])
    if theta <= 1 or math.isclose(theta, round(theta), rel_tol=THETA_READ_REL):
        return None
    for preset, named in PRESET_THETAS.items():
        if math.isclose(theta * theta, preset, rel_tol=THETA_READ_REL):
            return Hint(("exponent-i-over-d",), f"it is {named} with a slip: theta {theta:g} is its square root, "
                                                "the exponent `i/d` written where `2i/d` belongs")
    return None
