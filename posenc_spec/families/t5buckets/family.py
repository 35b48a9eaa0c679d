"""What the gate's core asks of the T5-bucket family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

from posenc_spec.gate.family import Family

from . import grid
from .judge import BucketJudge
from .keys import NAMES
from .spec import declare


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


FAMILY = T5Buckets()
