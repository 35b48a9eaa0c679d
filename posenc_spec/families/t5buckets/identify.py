"""``identify`` of a T5-bucket target: its bucket parameters, read from the buckets it returns.

The target is called as ``check`` calls it under the declaration the flags make (signature,
``init``, ``bucket_args`` ...; a function that takes its settings gets the ``bidirectional``,
``num_buckets`` and ``max_distance`` given, T5's encoder by default): every call of that
grid. The answer is the member (:func:`~.slips.nearest_member`: direction, bucket count,
distance and sign) whose buckets every call returned within the float32 band, fitted on the
largest call and held to every other; then ``check`` judges the answer on its whole grid,
with the target's object built (or its function called) with the answer's settings, so that
what ``identify`` names, ``check`` accepts. Where no member fits, the answer is "none" with
the hints (:func:`~.slips.diagnose`) as its message.

``-2**(b-1)`` (``int-min[D]``) says nothing about the parameters: every copy of T5's code
takes ``abs()`` of it and returns it unchanged. A target that does so is answered with its
member and a note, and checked with ``int-min[*]`` expected to fail.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from posenc_spec.gate.identify import answer_each
from posenc_spec.gate.xfails import parse_xfails

from . import grid, oracle, slips
from .spec import with_convention

INT_MIN_NOTE = "int-min[*]  # abs(-2**(b-1)) wraps in every copy of T5's code"


def _int_min_buckets(calls) -> dict:
    """``{dtype: bucket}`` the target returned at ``-2**(b-1)``, where it is not the exact one."""
    wrong = {}
    for probe, outcome in calls:
        if probe.role == "int-min" and outcome.ok and outcome.table.size == 1:
            wrong[probe.dtype] = int(outcome.table.reshape(-1)[0])
    return wrong


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
    exact = {dtype: int(oracle.exact_bucket(np.iinfo(dtype).min, member)) for dtype in ("int32", "int64")}
    wraps = {dtype: bucket for dtype, bucket in _int_min_buckets(calls).items() if bucket != exact[dtype]}
    note = "".join(f"; at -2**{np.iinfo(dtype).bits - 1} ({dtype}) it returns {bucket}, not {exact[dtype]}"
                   for dtype, bucket in wraps.items())
    return {"target": target, "name": member.name(), "convention": member.as_dict(), "max_error_ratio": 0.0,
            "int_min_wraps": bool(wraps), "message": f"{member.name()} ({_settings(member)}){note}"}


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
        xfails = parse_xfails(INT_MIN_NOTE, "identify") if result.get("int_min_wraps") else declaration.xfails
        return dataclasses.replace(declaration, spec=with_convention(spec, member), xfails=xfails)

    return answer_each([declaration.target], requests, declaration.timeout, options, answer_of, declaration_of,
                       how=declaration.how())[0]
