"""Which slip makes a rotary embedding differ from its declaration, read from the calls a run
already made.

As for sinusoidal tables (:mod:`.slips`), a hint is an explanation the gate's own judgement
confirms: a *variant* of the declaration, one slip away from it, under which every call the
run made (the passing ones too) is within the bounds of :mod:`posenc_spec.tolerance`,
judged by :class:`~posenc_spec.families.rope.judge.RopeJudge` itself. The variants:

- the other pairing: rotate-half ``(i, i + r/2)`` against interleaved ``(2i, 2i + 1)`` for
  ``x``, ``[c | c]`` against ``c0 c0 c1 c1 ...`` for a cache;
- an apply pairing one way with cos and sin laid out the other (rotate-half on interleaved
  cos/sin, or the converse: no rotation, judged against :func:`.oracle.apply_with_table`).
  Where the gate hands cos and sin (``q-k-cos-sin``) it lays them out for the declared
  pairing, so declaring the pairing the code uses hands it the cos and sin it pairs with: the
  hint advises it; where the code builds its own, no declaration makes it rotate, and the
  hint advises nothing;
- cos and sin swapped, or the rotation turning the other way (sin negated; for ``x``, each
  pair's features exchanged, which turns it by ``-angle``);
- positions one too high (1-based), or ignored (``x`` rotated as if at ``0 .. n-1``);
- the partial rotary factor ignored (the whole head rotated), the scaling type not applied,
  its factor applied twice;
- LongRoPE's short or long factors unused (the other list at every length), or its switch to
  the long factors one length late (a call of ``L0 + 1`` positions given the short ones);
- the attention factor: a cache (or ``x``) scaled by ``A`` where the declaration has
  ``A'`` (missing: ``A = 1``; twice: ``A'**2``), or ``A`` on cos alone;
- theta as the calls show it (from the frequencies the gate reads in them: returned, in a
  cache's phases, in the turn of each pair of ``x``), named ``2i/d`` for ``2i/r`` when it is
  the declared theta to the power ``r/d``; and the conventions :mod:`.rope_fit` proposes
  from the same readings (a factor, a type), described field by field.

The one with the fewest slips is named; several with as few are named together as possible
causes. Positions rounded to bfloat16 or float16 are read from the failing calls alone:
each must be right at its positions rounded to that type. Nothing else gets a hint.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from posenc_spec.families.rope import oracle, tolerance
from posenc_spec.families.rope.declared import listed
from posenc_spec.families.rope.fit import candidates, thetas
from posenc_spec.families.rope.judge import RopeJudge
from posenc_spec.families.rope.read import Unreadable
from posenc_spec.families.rope.readings import Reading, phase_frequencies, read_cache_call, read_frequencies
from posenc_spec.families.rope.select import judged_by
from posenc_spec.families.sinusoidal.slips import Change, narrow_neighbours
from posenc_spec.gate.calls import Outcome
from posenc_spec.gate.identify.hint import Hint
from posenc_spec.gate.identify.toml_text import number
from posenc_spec.gate.judge import Results
from posenc_spec.tolerance import ratios

CHECKED = ("formula", "identity", "attention-factor", "norm", "passthrough")  # the checks of the values
MAX_FITTED = 24  # conventions of rope_fit judged, at most (they come best first)
_SAME = 1e-6  # relative: a value read from the calls equal to one derived from the declaration


@dataclass(frozen=True, eq=False)
class Call:
    """A call of the run that returned: its probe, its outcome, and whether a check of its values failed."""

    probe: object
    outcome: Outcome
    failed: bool


@dataclass(frozen=True, eq=False)
class Variant:
    """``changes`` from the declaration, and ``at``: call -> (spec, probe, outcome) to judge
    (None when the variant does not apply to that call)."""

    changes: tuple[Change, ...]
    at: object
    key: tuple = ()
    ratio: object = None  # call -> its largest error/tolerance ratio, where no (spec, probe, outcome) judges it


def _ratio(spec, api: str, probe, outcome) -> float:
    return judged_by(RopeJudge(spec, api, Results()), probe, outcome)


def explains(variant: Variant, spec, api: str, calls: list[Call]) -> bool:
    """Whether every call is within bound under the variant (failing calls first)."""
    for call in sorted(calls, key=lambda call: not call.failed):
        if variant.ratio is not None:
            if variant.ratio(call) > 1.0:
                return False
            continue
        judged = variant.at(call)
        if judged is None:
            return False
        changed, probe, outcome = judged
        if _ratio(changed, api, probe, outcome) > 1.0:
            return False
    return True


def _with_outcome(call: Call, arrays: list) -> Outcome:
    return dataclasses.replace(call.outcome, arrays=arrays)


# -- the variants ---------------------------------------------------------------------------


def _pairing(spec, api: str) -> list[Variant]:
    if api == "rope-apply":
        other = "interleaved" if spec.rope_layout == "half" else "half"
        words = {"half": "rotate-half pairs (i, i + r/2)", "interleaved": "interleaved pairs (2i, 2i + 1)"}
        changed = dataclasses.replace(spec, rope_layout=other)
        return [Variant((Change("rope-layout", f"rotate-half and interleaved pairs mixed up: the code rotates "
                                               f"{words[other]} where {words[spec.rope_layout]} is declared",
                                (("layout", other),)),), lambda call: (changed, call.probe, call.outcome),
                        ("pairing",))]
    if api == "rope-cache" and spec.cache_layout in ("half", "interleaved") and spec.cache_form not in (
            "complex", "stacked", "angles"):
        other = "interleaved" if spec.cache_layout == "half" else "half"
        words = {"half": "[c | c] (rotate-half order)", "interleaved": "c0 c0 c1 c1 ... (interleaved order)"}
        changed = dataclasses.replace(spec, cache_layout=other)
        return [Variant((Change("cache-layout", f"the cache's columns are {words[other]} where "
                                                f"{words[spec.cache_layout]} is declared: rotate-half and interleaved "
                                                "pairs mixed up", (("cache_layout", other),)),),
                        lambda call: (changed, call.probe, call.outcome), ("cache pairing",))]
    return []


_PAIRS = {"half": "(i, i + r/2)", "interleaved": "(2i, 2i + 1)"}
_APPLIES = {"half": "rotate-half", "interleaved": "interleaved (rotate_every_two)"}
_TABLES = {"half": "[c | c] cos/sin (cat((freqs, freqs)))", "interleaved": "interleaved cos/sin (c0 c0 c1 c1 ..., "
                                                                           "repeat_interleave)"}


def _handed_table(spec, probe) -> bool | None:
    """Whether the gate hands the apply call cos and sin laid out in full, ``r`` wide (True),
    hands nothing (False: the code builds its own), or another form (None: freqs_cis, or
    GPT-J's compact halves, which no pairing lays out)."""
    handed = {argument.name: argument for argument in probe.inputs}
    if not handed:
        return False
    cos = handed.get("cos")
    if cos is None or np.shape(cos.values)[-1] != spec.convention.rotary_dim_for(probe.head_dim):
        return None
    return True


def _mixed_ratio(spec, api: str, call: Call, layout: str, table_layout: str) -> float:
    """The call's largest error/tolerance ratio against an apply pairing as ``layout`` with cos
    and sin laid out as ``table_layout`` (:func:`~.oracle.apply_with_table`, within
    :func:`~.tolerance.rope_apply_with_table_tolerance`)."""
    probe = call.probe
    conv, head_dim = spec.convention, probe.head_dim
    try:
        with np.errstate(all="ignore"):
            values, problem = RopeJudge(spec, api, Results()).values(probe, call.outcome)
            if problem:
                return math.inf
            actual, dtype = values

            def row(x, positions, length):
                return (oracle.apply_with_table(x, positions, conv, head_dim, layout, table_layout, length),
                        tolerance.rope_apply_with_table_tolerance(x, positions, conv, head_dim, layout, table_layout,
                                                                  probe.x_dtype, dtype, length))

            if probe.positions.ndim == 1:
                expected, bound = row(probe.x, probe.positions, None)
            else:
                length = int(probe.positions.max()) + 1
                made = [row(probe.x[index], positions, length) for index, positions in enumerate(probe.positions)]
                expected, bound = np.stack([e for e, _ in made]), np.stack([b for _, b in made])
            return float(np.max(ratios(np.abs(np.asarray(actual, np.float64) - expected), bound), initial=0.0))
    except ValueError:
        return math.inf


def _pairing_handed(spec, api: str, calls: list[Call]) -> list[Variant]:
    """An apply pairing one way with cos and sin laid out the other (no rotation at all). Where
    the gate hands cos and sin, it lays them out for the declared pairing, so the code pairs the
    other way and declaring that pairing hands it the cos and sin it pairs with; where the code
    builds its own, no declaration makes it rotate, and the hint advises nothing."""
    if api != "rope-apply":
        return []
    tables = {_handed_table(spec, call.probe) for call in calls}
    if len(tables) != 1 or None in tables:
        return []
    declared = spec.rope_layout
    other = "interleaved" if declared == "half" else "half"
    if tables == {True}:
        words = (f"{_APPLIES[other]} applied to the {_TABLES[declared]} it is handed: the gate lays cos and sin out "
                 f"for the declared {declared} pairs, and the code pairs {_PAIRS[other]}")
        return [Variant((Change("apply-pairing-mixed", words, (("layout", other),)),), lambda call: None,
                        ("handed pairing",), lambda call: _mixed_ratio(spec, api, call, other, declared))]
    return [Variant((Change("apply-pairing-mixed", f"{_APPLIES[layout]} applied to {_TABLES[table]}: a pair's two "
                                                   "features turn by different angles, a rotation under neither "
                                                   f"pairing; build cos and sin as the {_APPLIES[layout]} apply pairs "
                                                   "them"),),
                    lambda call: None, ("own pairing", layout),
                    lambda call, layout=layout, table=table: _mixed_ratio(spec, api, call, layout, table))
            for layout, table in ((declared, other), (other, declared))]


def _swapped_pair(spec, api: str) -> list[Variant]:
    """cos and sin swapped, and the rotation's sign, where the outcome shows them."""
    if api == "rope-cache" and spec.cache_form == "cos-sin":
        def swapped(call):
            arrays = call.outcome.arrays
            return (spec, call.probe, _with_outcome(call, [arrays[1], arrays[0]])) if len(arrays) == 2 else None

        def negated(call):
            arrays = call.outcome.arrays
            return (spec, call.probe, _with_outcome(call, [arrays[0], -np.asarray(arrays[1])])) \
                if len(arrays) == 2 else None

        return [Variant((Change("sin-cos-swapped", "sin and cos swapped: the first array holds sin and the second "
                                                   "cos; return (cos, sin)"),), swapped, ("swapped",)),
                Variant((Change("angle-sign", "the rotation turns the other way: sin has the opposite sign (an "
                                              "angle of -p*f)"),), negated, ("sign",))]
    if api == "rope-apply":
        def exchanged(call):
            d = call.probe.head_dim
            columns = oracle.columns_for(spec.convention, d, spec.rope_layout)
            order = np.arange(d)
            order[columns.a], order[columns.b] = columns.b, columns.a
            probe = dataclasses.replace(call.probe, x=call.probe.x[..., order])
            return spec, probe, _with_outcome(call, [np.asarray(call.outcome.arrays[0])[..., order]])

        return [Variant((Change("angle-sign", "the rotation turns the other way (an angle of -p*f): `rotate_half` "
                                              "returning cat(x2, -x1) where cat(-x2, x1) belongs, or sin negated"),),
                        exchanged, ("sign",))]
    return []


def _positions(spec, api: str) -> list[Variant]:
    def shifted(call):
        probe = call.probe
        return None if probe.positions is None else (spec, dataclasses.replace(probe, positions=probe.positions + 1),
                                                     call.outcome)

    found = [Variant((Change("positions-offset", "positions one too high (1-based): position p computed as p + 1"),),
                     shifted, ("offset",))]
    if api == "rope-apply" or spec.cache_call == "x-positions":
        def ignored(call):
            probe = call.probe
            if probe.positions is None:
                return None
            return spec, dataclasses.replace(probe, positions=np.arange(probe.positions.size)), call.outcome

        found.append(Variant((Change("positions-ignored", "the positions passed are ignored: each row is rotated as "
                                                          "if at its index 0, 1, 2, ... (the first rows of a table "
                                                          "taken instead of the rows at the positions)"),),
                             ignored, ("ignored",)))
    return found


def _convention(spec, words: Change, key, **changes) -> Variant | None:
    try:
        changed = dataclasses.replace(spec, convention=spec.convention.replace(**changes))
        for head_dim in spec.head_dims:
            changed.convention.frequencies(head_dim)
    except (ValueError, TypeError):
        return None
    return Variant((words,), lambda call: (changed, call.probe, call.outcome), key)


def _sizes_and_type(spec) -> list[Variant]:
    conv, found = spec.convention, []
    partial = conv.rotary_dim is not None or conv.partial_rotary_factor != 1
    if partial and conv.rope_type != "proportional":
        declared = f"rotary_dim {conv.rotary_dim}" if conv.rotary_dim is not None else \
            f"partial_rotary_factor {conv.partial_rotary_factor:g}"
        found.append(_convention(spec, Change("partial-rotary-ignored", f"the partial rotary factor ignored: the "
                                                                        f"whole head rotates where {declared} is "
                                                                        "declared", (("partial_rotary_factor", 1.0),)),
                                 ("partial",), partial_rotary_factor=1.0, rotary_dim=None))
    if conv.rope_type != "default":
        found.append(_convention(spec, _type_dropped(conv, f"the frequencies are plain RoPE's at theta "
                                                           f"{conv.theta:g}"), ("dropped",),
                                 rope_type="default", params=()))
    if conv.rope_type == "longrope" and conv.param("short_factor") != conv.param("long_factor"):
        for used, unused in (("long_factor", "short_factor"), ("short_factor", "long_factor")):
            values = list(conv.param(used))
            found.append(_convention(spec, Change("scaling-factor", f"LongRoPE's {unused} unused: {used} at every "
                                                                    "length", (("rope_parameters", {unused: values}),)),
                                     (unused,), params={**conv.params_dict(), unused: tuple(values)}))
        found.append(_switch_late(spec))
    factor = conv.param("factor")
    if factor is not None and factor != 1:
        params = {**conv.params_dict(), "factor": factor * factor}
        found.append(_convention(spec, Change("scale-twice", f"the scaling factor applied twice: {factor * factor:g} "
                                                             f"= {factor:g} x {factor:g} where {factor:g} is declared",
                                              (("rope_parameters", {"factor": number(factor * factor)}),)),
                                 ("factor twice",), params=params))
    return [variant for variant in found if variant is not None]


def _switch_late(spec) -> Variant | None:
    """LongRoPE's switch to the long factors one length late: a call of exactly ``L0 + 1``
    positions gets the short ones (the switch tested on a position above ``L0``, not on the
    length). No key declares it."""
    conv = spec.convention
    at = conv.param("original_max_position_embeddings") + 1
    try:
        short = dataclasses.replace(spec, convention=conv.replace(
            params={**conv.params_dict(), "long_factor": conv.param("short_factor")}))
    except (ValueError, TypeError):
        return None

    def judged(call):
        positions = call.probe.positions
        late = positions is not None and positions.size and int(positions.max()) + 1 == at
        return (short if late else spec), call.probe, call.outcome

    return Variant((Change("longrope-switch-late", f"LongRoPE switches to long_factor one length late: a call of "
                                                   f"{at} positions (L0 + 1) gets short_factor, the switch tested on "
                                                   "a position above L0 where the length belongs"),), judged,
                   ("late",))


# -- the attention factor -----------------------------------------------------------------


def _held_factor(spec, api: str, call: Call) -> float | None:
    """``A`` as the call holds it: cos at position 0 in a cache, ``|x'| / |x|`` at position 0."""
    judge = RopeJudge(spec, api, Results())
    try:
        values, problem = judge.values(call.probe, call.outcome)
    except ValueError:
        return None
    positions = call.probe.positions
    if problem or positions is None or not np.any(positions == 0):
        return None
    rows = positions == 0
    if call.probe.kind == "cache" and spec.cache_form != "angles":
        (cos, _), _ = values
        pairs = oracle.columns_for(spec.convention, call.probe.head_dim, "half").a.size
        return float(np.median(cos[rows][:, :pairs])) if spec.cache_layout != "compact" else float(np.median(cos[rows]))
    if call.probe.kind == "apply":
        result, _ = values
        x = call.probe.x
        norms = np.linalg.norm(x[..., rows, :], axis=-1)
        return float(np.median(np.linalg.norm(result[..., rows, :], axis=-1) / np.maximum(norms, 1e-30)))
    return None


def _attention(spec, api: str, calls: list[Call]) -> list[Variant]:
    conv = spec.convention
    declared = conv.cache_factor(conv.attention_factor())
    held = next((value for call in calls if call.failed and (value := _held_factor(spec, api, call)) is not None), None)
    found = []
    if held is not None and math.isfinite(held) and held > 0 and not math.isclose(held, declared, rel_tol=_SAME):
        found.append(_attention_variant(spec, held, declared))
    if api == "rope-cache" and spec.cache_form == "cos-sin" and declared != 1:
        def sin_too(call):
            arrays = call.outcome.arrays
            return (spec, call.probe, _with_outcome(call, [arrays[0], np.asarray(arrays[1]) * declared])) \
                if len(arrays) == 2 else None

        found.append(Variant((Change("attention-factor-cos-only", f"the attention factor applied to cos only: sin "
                                                                  f"lacks the factor {declared:.6g}"),),
                             sin_too, ("cos only",)))
    return [variant for variant in found if variant is not None]


def _attention_variant(spec, held: float, declared: float) -> Variant | None:
    """The cache (or ``x``) scaled by ``held`` where ``declared`` belongs. Where a key declares
    it (the factor's placement, a yarn or longrope ``attention_factor``), the variant is the
    declaration with that key changed, judged as the gate judges it, so that the advice, applied,
    conforms; otherwise the calls rescaled to ``declared``, a slip no key declares."""
    conv = spec.convention
    if math.isclose(held, 1.0, rel_tol=_SAME) and conv.attention_factor_placement == "in-cache":
        return _convention(spec, Change("attention-factor-missing", f"the attention factor missing: the cache holds 1 "
                                                                    f"where A = {declared:.6g} is declared",
                                        (("attention_factor", "separate"),)),
                           ("attention",), attention_factor_placement="separate")
    if conv.attention_factor_placement == "separate" and math.isclose(held, conv.attention_factor(), rel_tol=1e-4):
        return _convention(spec, Change("attention-factor", f"the attention factor A = {held:.6g} multiplies the "
                                                            f"cache where it is declared separate (applied elsewhere)",
                                        (("attention_factor", "in-cache"),)),
                           ("attention",), attention_factor_placement="in-cache")
    if math.isclose(held, declared * declared, rel_tol=1e-4):
        change = Change("attention-factor-twice", f"the attention factor applied twice: A = {held:.6g} = "
                                                  f"{declared:.6g} x {declared:.6g} where {declared:.6g} is declared")
    elif conv.rope_type in ("yarn", "longrope"):
        placement = (("attention_factor", "in-cache"),) if conv.attention_factor_placement != "in-cache" else ()
        params = {**conv.params_dict(), "attention_factor": held}
        return _convention(spec, Change("attention-factor", f"the attention factor is {held:.6g} where {declared:.6g} "
                                                            "is declared",
                                        (*placement, ("rope_parameters", {"attention_factor": number(held)}))),
                           ("attention",), params=params, attention_factor_placement="in-cache")
    else:
        change = Change("attention-factor", f"the attention factor is {held:.6g} where {declared:.6g} is declared")

    def rescaled(call):
        return spec, call.probe, _with_outcome(call, [np.asarray(array) * (declared / held)
                                                      for array in call.outcome.arrays])

    return Variant((change,), rescaled, ("attention",))


# -- what the frequencies say ---------------------------------------------------------------


def _apply_reading(spec, call: Call) -> Reading | None:
    """The frequencies an apply call shows under the declared pairing: the turn of each pair
    from ``x`` to ``x'``, row by row (head 0), read as a phase over the positions."""
    judge = RopeJudge(spec, "rope-apply", Results())
    values, problem = judge.values(call.probe, call.outcome)
    if problem:
        return None
    result, _ = values
    d = call.probe.head_dim
    columns = oracle.columns_for(spec.convention, d, spec.rope_layout)
    x, y = call.probe.x[0, 0], result[0, 0]
    xa, xb, ya, yb = x[:, columns.a], x[:, columns.b], y[:, columns.a], y[:, columns.b]
    z = np.exp(1j * np.arctan2(xa * yb - xb * ya, xa * ya + xb * yb))
    positions = call.probe.positions
    return Reading(d, int(positions.max()) + 1, phase_frequencies(z, positions), None, spec.rope_layout)


def _reading(spec, api: str, call: Call) -> Reading | None:
    try:
        if api == "rope-freqs":
            return read_frequencies(call.outcome, call.probe.head_dim)
        if api == "rope-cache":
            layout = None if spec.cache_layout == "compact" else spec.cache_layout
            return read_cache_call(call.outcome, call.probe, spec.cache_form, layout)
        return _apply_reading(spec, call)
    except (Unreadable, ValueError, IndexError):
        return None


def _readings(spec, api: str, calls: list[Call]) -> list[Reading]:
    found = []
    for call in calls:
        reading = _reading(spec, api, call)
        if reading is not None and np.all(np.isfinite(reading.frequencies)):
            found.append(reading)
    return found


def _theta_change(conv, theta: float, head_dims) -> Change:
    """The base (rope_theta) off, or the exponent over the wrong size where ``theta`` is the declared
    theta to the power ``r/d`` (``d/r`` under proportional) at one of the head sizes."""
    declared = conv.theta
    for head_dim in head_dims:
        r = conv.rotary_dim_for(head_dim)
        if conv.rope_type != "proportional" and r != head_dim and math.isclose(theta, declared ** (r / head_dim),
                                                                                rel_tol=1e-4):
            return Change("exponent-over-head-dim", f"the exponent divides by head_dim where the rotary size "
                                                    f"belongs (`2i/d` for `2i/r`, r = {r} of head_dim {head_dim})")
        pairs = conv.rotated_pairs(head_dim)
        if conv.rope_type == "proportional" and pairs and math.isclose(theta, declared ** (head_dim / (2 * pairs)),
                                                                       rel_tol=1e-4):
            return Change("exponent-over-rotary-dim", "the exponent divides by the rotated size where proportional "
                                                      "divides by head_dim (`2i/r` for `2i/d`)")
    return Change("theta", f"base (rope_theta) {theta:.6g} where {declared:g} is declared",
                  (("base", number(theta)),))


def _thetas(spec, readings: list[Reading]) -> list[Variant]:
    conv, found = spec.convention, []
    for reading in readings:
        try:
            exponents = conv.exponents(reading.head_dim)
        except ValueError:
            continue
        frequencies = reading.frequencies[: exponents.size]
        if frequencies.size != exponents.size or frequencies.size < 2:
            continue
        for theta, _ in thetas(np.abs(frequencies), exponents):
            if not math.isclose(theta, conv.theta, rel_tol=_SAME):
                variant = _convention(spec, _theta_change(conv, theta, spec.head_dims), ("theta", theta),
                                      theta=theta)
                found += [variant] if variant is not None else []
        return found
    return found


def _fitted(spec, api: str, readings: list[Reading], max_positions) -> list[Variant]:
    """The conventions :mod:`.rope_fit` proposes from the readings, as variants (best first)."""
    try:
        proposed, _ = candidates(readings, max_positions)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):
        return []
    found = []
    for candidate in proposed[:MAX_FITTED]:
        words = _differences(spec.convention, candidate.convention, spec.head_dims)
        if words:
            changed = dataclasses.replace(spec, convention=candidate.convention)
            found.append(Variant(words, lambda call, c=changed: (c, call.probe, call.outcome),
                                 ("fitted", candidate.convention)))
    return found


def _differences(declared, found, head_dims) -> tuple[Change, ...]:
    """How a proposed convention differs from the declared one, as slips."""
    changes = []
    if found.rope_type != declared.rope_type:
        if found.rope_type == "default":
            changes.append(_type_dropped(declared, "plain RoPE's frequencies"))
        else:
            changes.append(Change("scaling-factor", f"the frequencies are {found.rope_type}'s where "
                                                    f"{declared.rope_type} is declared",
                                  (("rope_type", found.rope_type),)))
    if not math.isclose(found.theta, declared.theta, rel_tol=_SAME):
        changes.append(_theta_change(declared, found.theta, head_dims))
    if found.rope_type == declared.rope_type:
        for name in sorted(set(found.params_dict()) | set(declared.params_dict())):
            mine, theirs = found.param(name), declared.param(name)
            if mine is None and name == "attention_factor":  # the type's own A, stated as the value it computes
                mine = float(number(found.attention_factor()))
            if mine != theirs and not isinstance(mine, tuple):
                changes.append(Change("scaling-factor", f"{name} {listed(mine)} where {listed(theirs)} is declared",
                                      (("rope_parameters", {name: mine}),) if mine is not None else ()))
    return tuple(changes)


def _type_dropped(declared, what: str) -> Change:
    """The scaling type not applied. ``rope_type = "default"`` declares it only where no
    ``rope_parameters`` are declared (plain RoPE takes none: pasted beside them it is refused)."""
    if declared.params:
        return Change("scaling-type-dropped", f"the scaling type {declared.rope_type} not applied: {what} (if that "
                                              f"is intended, declare rope_type \"default\" and no rope_parameters)")
    return Change("scaling-type-dropped", f"the scaling type {declared.rope_type} not applied: {what}",
                  (("rope_type", "default"),))


def _simplified(variant: Variant, spec, api: str, calls: list[Call]) -> Variant:
    """A fitted variant with each value that can go back to the declared one (the calls still
    within bound) put back: theta, then each scaling parameter."""
    changed = variant.at(calls[0])[0] if calls else None
    if changed is None or changed.convention == spec.convention:
        return variant
    conv, declared = changed.convention, spec.convention
    reverts = [{"theta": declared.theta}]
    if conv.rope_type == declared.rope_type:
        reverts += [{"params": {**conv.params_dict(), name: declared.param(name)}}
                    for name, value in declared.params if conv.param(name) != value]
    for revert in reverts:
        try:
            candidate = dataclasses.replace(spec, convention=conv.replace(**revert))
        except (ValueError, TypeError):
            continue
        trial = Variant((), lambda call, c=candidate: (c, call.probe, call.outcome))
        if explains(trial, spec, api, calls):
            conv = candidate.convention
    final = dataclasses.replace(spec, convention=conv)
    return Variant(_differences(declared, conv, spec.head_dims), lambda call: (final, call.probe, call.outcome),
                   ("fitted", conv))


# -- positions rounded to a narrow float type -------------------------------------------------


def _row_ratios(spec, api: str, probe, outcome) -> np.ndarray | None:
    """Each position's largest error/tolerance ratio in one call (None when unreadable)."""
    judge = RopeJudge(spec, api, Results())
    try:
        with np.errstate(all="ignore"):
            values, problem = judge.values(probe, outcome)
            if problem:
                return None
            _, pieces = judge.expected_pieces(probe, values)
    except ValueError:
        return None
    rows = None
    for _, actual, expected, bound in pieces:
        ratio = ratios(np.abs(np.asarray(actual, np.float64) - expected), bound)
        ratio = ratio.max(axis=1) if probe.kind == "cache" else ratio.max(axis=(0, 1, 3))
        rows = ratio if rows is None else np.maximum(rows, ratio)
    return rows


def _narrowed(spec, api: str, call: Call, dtype: str):
    """``(positions the code used, first moved row)`` when each row of the call is right at
    its position or at one of that position's two neighbours in ``dtype``; else None."""
    own = call.probe.positions
    options = [option.astype(np.int64) for option in narrow_neighbours(own, dtype)]
    if all(np.array_equal(option, own) for option in options):
        return None
    measured = [_row_ratios(spec, api, dataclasses.replace(call.probe, positions=option), call.outcome)
                for option in options]
    if any(rows is None for rows in measured):
        return None
    used = np.where(measured[0] <= measured[1], options[0], options[1])
    moved = np.flatnonzero(used != own)
    if moved.size == 0 or _ratio(spec, api, dataclasses.replace(call.probe, positions=used), call.outcome) > 1.0:
        return None
    return used, int(moved[0])


def _rounded_positions(spec, api: str, calls: list[Call]) -> list[Hint]:
    failing = [call for call in calls if call.failed and call.probe.positions is not None]
    for dtype, exact in (("bfloat16", 256), ("float16", 2048)):
        first = None
        for call in failing:
            found = _narrowed(spec, api, call, dtype)
            if found is None:
                break
            first = first or (call, *found)
        else:
            if first is not None:
                call, used, row = first
                position, computed = int(call.probe.positions[row]), int(used[row])
                return [Hint((f"positions-{dtype}",), f"positions formed in {dtype} ({dtype} holds every integer "
                                                       f"only up to {exact}): in the call {call.probe.slot} position "
                                                       f"{position} is computed as {computed}; form the positions in "
                                                       "float32 or wider")]
    return []


# -- the diagnosis ------------------------------------------------------------------------------


def _hints(variants: list[Variant]) -> list[Hint]:
    if len(variants) == 1:
        return [Hint((change.slip,), change.words, change.declare) for change in variants[0].changes]
    slips = tuple(dict.fromkeys(change.slip for variant in variants for change in variant.changes))
    described = "; or ".join(" and ".join(change.words for change in variant.changes) for variant in variants)
    return [Hint(slips, f"the calls fit each of these, which they cannot tell apart: {described}")]


def diagnose(spec, api: str, calls, statuses: dict, max_positions=None) -> list[Hint]:
    """The hints the run's calls support (``calls``: ``(probe, outcome)`` of the run;
    ``statuses``: check id -> status). Empty when no check of the values failed, or when no
    variant explains every call."""
    made = [Call(probe, outcome, any(statuses.get(f"{name}[{probe.slot}]") == "failed" for name in CHECKED))
            for probe, outcome in calls if probe.role == "table" and outcome.ok]
    if not any(call.failed for call in made):
        return []
    simple = [*_pairing(spec, api), *_pairing_handed(spec, api, made), *_swapped_pair(spec, api),
              *_positions(spec, api), *_sizes_and_type(spec), *_attention(spec, api, made)]
    found = [variant for variant in simple if explains(variant, spec, api, made)]
    if not found:
        readings = _readings(spec, api, made)
        for variant in [*_thetas(spec, readings), *_fitted(spec, api, readings, max_positions)]:
            if explains(variant, spec, api, made):  # best first: the first that explains is the answer
                found = [_simplified(variant, spec, api, made)]
                break
    if not found:
        return _rounded_positions(spec, api, made)
    fewest = min(len(variant.changes) for variant in found)
    return _hints([variant for variant in found if len(variant.changes) == fewest])
