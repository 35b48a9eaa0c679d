"""``identify`` of a multi-axis rotary target: which member its caches are.

The target is called as ``check`` calls it under the declaration the flags make (signature,
``init``, ``method``, ``kwargs``, ``head_dim``, ``mrope_patch``, ``model_config``):
every call of that grid. The candidates are every preset at the head size, and every variant
of each (:func:`.slips.variants`: sections swapped, axes reordered, interleaved toggled,
frequencies, layout, a common theta), those whose axes the signature can take; the answer
is the first candidate every readable cache fits within its bounds (a cropped grid's positions
are a rule of their own: ``check`` judges them). ``check`` then judges the answer on its whole grid, so that what
``identify`` names, ``check`` accepts. Where none fits, the answer is "none".

Position-id targets (``mrope-positions``) have no member to find: their rule is one, and the
answer is the declaration itself when ``check`` accepts it. An apply handed its cache
(``q-k-cos-sin``, ``x-cos-sin``) decides only its pairing: each ``mrope_layout`` is judged by
``check``'s grid, the declared first (:func:`_as_declared`).
"""

from __future__ import annotations

import dataclasses
import math

from posenc_spec.gate.identify import answer_each

from . import grid, properties, slips
from .conventions import PRESETS, MropeConvention, at_head_dim
from .judge import read
from .keys import API as CACHE_API
from .keys import APPLY_API, NAMES, POSITIONS_API


def candidates(spec) -> list[tuple[str, MropeConvention]]:
    """``(preset, member)`` for every preset at the head size and every variant of each, each once,
    the declared first."""
    found: list[tuple[str, MropeConvention]] = [(spec.preset, spec.convention)]
    for name in PRESETS:
        preset = at_head_dim(name, spec.head_dim)
        for member in (preset, *(variant.convention for variant in slips.variants(preset) if variant.rows is None)):
            if (len(member.axes) == len(spec.convention.axes) and member.rotary_dim == spec.convention.rotary_dim
                    and all(member != seen for _, seen in found)):
                found.append((name, member))
    return found


def _fits(member: MropeConvention, caches) -> bool:
    return all(properties.check_formula(cache, probe.positions, member).passed for probe, cache in caches)


def _answer(target: str, spec, calls) -> dict:
    caches = []
    for probe, outcome in calls:
        if probe.role in ("table", "base", "relative"):
            cache, _ = read(outcome, probe, spec.convention)
            if cache is not None and probe.crop is None:
                caches.append((probe, cache))
    none = {"target": target, "name": "none", "convention": None, "max_error_ratio": math.inf, "nearest": None}
    if not caches:
        problem = next((f"{probe.slot}: {outcome.message}" for probe, outcome in calls if not outcome.ok),
                       "no call returned cos and sin of the shape asked")
        return {**none, "message": f"none: no call gave a cache to fit ({problem})"}
    for preset, member in candidates(spec):
        if _fits(member, caches):
            name = member.name()
            return {"target": target, "name": name, "convention": member.as_dict(), "preset": preset,
                    "max_error_ratio": 0.0, "message": f"{name} (head {spec.head_dim})"}
    return {**none, "message": "none: no preset of the family, and no variant of one, gives these caches"}


def member_of(fields: dict) -> MropeConvention:
    """The convention an answer's ``convention`` names."""
    return MropeConvention(tuple(fields["axes"]), tuple(fields["mrope_section"]), fields["axes_frequencies"],
                           fields["mrope_interleaved"], tuple(fields["axes_theta"]), fields["mrope_layout"])


def _as_declared(declaration, options=None) -> dict:
    """The answer for a target whose values the gate's inputs and the declaration decide: an
    apply handed its cache (``q-k-cos-sin``, ``x-cos-sin``) decides only how it pairs the
    features (each ``mrope_layout`` is judged, the declared first), and position ids follow
    the one rule the declaration's merge size and temporal step make. ``check``'s whole grid
    judges each candidate; the first it accepts is the answer, else "none"."""
    from posenc_spec.gate.identify import check_each

    spec = declaration.spec
    members = [spec.convention]
    if declaration.api == APPLY_API:
        other = "half" if spec.convention.layout == "interleaved" else "interleaved"
        members.append(dataclasses.replace(spec.convention, layout=other))
    candidates = []
    for member in members:
        what = "pairs of the cache it is handed" if declaration.api == APPLY_API else "position ids"
        result = {"target": declaration.name, "name": member.name(), "convention": member.as_dict(),
                  "preset": spec.preset, "max_error_ratio": 0.0, "nearest": None,
                  "message": f"{member.name()}: the {member.layout} {what}" if declaration.api == APPLY_API
                  else f"{spec.preset}'s {what} (spatial_merge_size {spec.spatial_merge_size})"}
        candidates.append((result, dataclasses.replace(declaration, spec=dataclasses.replace(spec, convention=member))))
    answers = check_each(candidates, declaration.timeout, options)
    return next((answer for answer in answers if answer["convention"] is not None), answers[0])


def identify_target(declaration, options=None) -> dict:
    """The answer for ``declaration``'s target (see the module docstring)."""
    spec = declaration.spec
    if declaration.api == POSITIONS_API or (declaration.api == APPLY_API
                                            and spec.signature in grid.APPLY_SIGNATURES_WITH_CACHE):
        return _as_declared(declaration, options)
    if declaration.api == APPLY_API:
        probes = grid.apply_probes(spec.convention, spec.signature, spec.head_dim, declaration.max_positions)
    elif declaration.api == POSITIONS_API:
        probes = grid.sequence_probes(spec.spatial_merge_size)
    else:
        probes = grid.probes_for(spec.convention, spec.signature, spec.head_dim, declaration.max_positions)
    requests = [probe.request() for probe in probes]

    def answer_of(target, outcomes):
        if declaration.api != CACHE_API:
            what = ("position ids follow one rule" if declaration.api == POSITIONS_API else
                    "an apply that computes its own rotation is judged under its declared cache (identify the "
                    "cache: --api mrope-cache)")
            return {"target": target, "name": "none", "convention": None, "max_error_ratio": math.inf,
                    "nearest": None, "message": f"none: {what}; check says where they differ"}
        return _answer(target, spec, list(zip(probes, outcomes, strict=True)))

    def declaration_of(target, result):
        member = member_of(result["convention"])
        return dataclasses.replace(declaration, spec=dataclasses.replace(spec, convention=member,
                                                                         preset=result["preset"]))

    return answer_each([declaration.target], requests, declaration.timeout, options, answer_of, declaration_of,
                       how=declaration.how())[0]


def _first_preset(flags: dict) -> str:
    """The first preset a target called as ``flags`` say can be (its axes the signature's, the whole
    head rotated): the declaration identify reads the caches under."""
    from .spec import SIGNATURE_AXES

    head_dim = flags.get("head_dim")
    axes = SIGNATURE_AXES.get(flags.get("signature"))
    for name in PRESETS:
        member = at_head_dim(name, int(head_dim)) if head_dim is not None else PRESETS[name]
        if (axes is None or len(member.axes) == axes) and (head_dim is None or member.rotary_dim == int(head_dim)):
            return name
    return "qwen2-vl"


class Identification:
    """``identify`` of a multi-axis rotary target: how it is called from the flags, its member from its caches."""

    def __init__(self, call, flags: dict):
        from posenc_spec.gate.declaration import declare

        keys = {"target": call.target, "api": call.api, "timeout": call.timeout, "max_positions": call.max_positions}
        self.declaration = dataclasses.replace(declare({**keys, "convention": _first_preset(flags), **flags},
                                                       flags=True), strict=call.strict)

    def run(self, options) -> dict:
        return identify_target(self.declaration, options)

    def compared_keys(self, flags: dict) -> dict:
        return flags

    def differences(self, answer: dict, declared) -> list[str]:
        said = declared.spec.convention.as_dict()
        return [f"{key} {answer[key]} (declared {said[key]})" for key in said if answer.get(key) != said[key]]

    def slip(self, result: dict, compared):
        """With a declaration, the variant of it (:func:`.slips.variants`) the answer is; without
        one none (every member, and every variant of a preset, is one some model means)."""
        from posenc_spec.gate.identify.hint import Hint
        from posenc_spec.gate.identify.toml_text import assignments

        if compared is None:
            return None
        found = member_of(result["convention"])
        for variant in slips.variants(compared.spec.convention):
            if variant.rows is None and variant.convention == found:
                said = assignments(dict(variant.keys))
                return Hint((variant.slip,), f"it is the declared convention with a slip ({said})")
        return None

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        member = member_of(result["convention"])
        keys = {"convention": result["preset"]}
        base = at_head_dim(result["preset"], self.declaration.spec.head_dim)
        keys.update({NAMES.aliases.get(field, field): value for field, value in member.as_dict().items()
                     if base.as_dict()[field] != value})
        keys.update(self.declaration.calling.declared_keys())
        spec = self.declaration.spec
        keys["head_dim"] = spec.head_dim
        if spec.config:
            keys["model_config"] = spec.config
        return keys
