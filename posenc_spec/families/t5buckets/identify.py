"""``identify`` of a T5-bucket target: its bucket parameters, read from the buckets it returns.

The target is called as ``check`` calls it under the declaration the flags make (signature,
``init``, ``arg_names`` ...; a function that takes its settings gets the ``bidirectional``,
``num_buckets`` and ``max_distance`` given, T5's encoder by default): every call of that
grid. The answer is the member (:func:`~.slips.nearest_member`: direction, bucket count,
distance and sign) whose buckets every call returned within the float32 band, fitted on the
largest call and held to every other; then ``check`` judges the answer on its whole grid,
with the target's object built (or its function called) with the answer's settings, so that
what ``identify`` names, ``check`` accepts. Where no member fits, the answer is "none" with
the hints (:func:`~.slips.diagnose`) as its message.

``-2**(b-1)`` (``int-min[D]``) says nothing about the parameters: no caller passes it, and
nearly every copy of T5's code takes ``abs()`` of it and returns it unchanged. ``check``
notes what a target does there, never fails it, and the answer says those notes as
``check`` gives them (:func:`posenc_spec.gate.identify.checked`).
"""

from __future__ import annotations

import dataclasses
import math

from posenc_spec.gate.identify import answer_each

from . import grid, slips
from .spec import with_convention


def _answer(target: str, declared, calls) -> dict:
    observations = slips.observations_of(calls, declared)
    failed = [f"{probe.slot}: {outcome.message}" for probe, outcome in calls if not outcome.ok]
    if not observations:
        problem = failed[0] if failed else "no call returned integer buckets of the shape asked"
        return {"target": target, "name": "none", "convention": None, "max_error_ratio": math.inf, "nearest": None,
                "message": f"none: no call gave buckets to fit ({problem})"}
    member = slips.nearest_member(observations, declared)
    if member is None:
        said = "; ".join(hint.text() for hint in slips.diagnose(observations, declared)) or \
            "no member of the family, and no slip the hints know, gives these buckets"
        return {"target": target, "name": "none", "convention": None, "max_error_ratio": math.inf, "nearest": None,
                "message": f"none: {said}"}
    return {"target": target, "name": member.name(), "convention": member.as_dict(), "max_error_ratio": 0.0,
            "message": f"{member.name()} ({_settings(member)})"}


def _settings(member) -> str:
    sign = "" if member.relative_position == "memory-minus-query" else f", {member.relative_position}"
    return (f"bidirectional {'true' if member.bidirectional else 'false'}, num_buckets {member.num_buckets}, "
            f"max_distance {member.max_distance}{sign}")


def identify_target(declaration, options=None) -> dict:
    """The answer for ``declaration``'s target (see the module docstring); IdentifyError when it
    does not import."""
    spec = declaration.spec
    probes = grid.probes_for(spec.convention, spec.signature, spec.query_offset, spec.square_only)
    requests = [probe.request() for probe in probes]

    def answer_of(target, outcomes):
        return _answer(target, spec.convention, list(zip(probes, outcomes, strict=True)))

    def declaration_of(target, result):
        member = slips.BucketConvention(**result["convention"])
        return dataclasses.replace(declaration, spec=with_convention(spec, member))

    return answer_each([declaration.target], requests, declaration.timeout, options, answer_of, declaration_of,
                       how=declaration.how())[0]
