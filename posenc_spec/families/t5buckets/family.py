"""What the gate's core asks of the T5-bucket family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

from posenc_spec.gate.family import Family

from . import grid
from .judge import BucketJudge
from .keys import NAMES
from .spec import declare

# The checks of what the buckets are (a failed call, or int-min alone, shows no slip).
VALUE_CHECKS = ("range", "formula", "exact-small", "halves", "monotone", "saturation", "relative-only")


class T5Buckets(Family):
    names = NAMES

    def declare(self, keys, context):
        return declare(keys, context)

    def probes(self, declaration) -> list:
        spec = declaration.spec
        return grid.probes_for(spec.convention, spec.signature, spec.query_offset, spec.square_only)

    def plan_ids(self, calls) -> list[str]:
        return grid.plan_ids(calls)

    def judge(self, declaration, results, keep_table):
        return BucketJudge(declaration.spec, results)

    def nearest(self, declaration, judged):
        from .slips import nearest_member, observations_of

        declared = declaration.spec.convention
        member = nearest_member(observations_of(judged.calls, declared), declared)
        if member is None or member == declared:
            return None
        return {"name": member.name(), "message": f"the buckets are those of {member.name()}", **member.as_dict()}

    def hints(self, declaration, probes, outcomes, report) -> list:
        from .slips import diagnose, observations_of

        if not any(check.status == "failed" and check.name.partition("[")[0] in VALUE_CHECKS
                   for check in report.checks):
            return []
        declared = declaration.spec.convention
        return diagnose(observations_of(zip(probes, outcomes, strict=True), declared), declared)


FAMILY = T5Buckets()
