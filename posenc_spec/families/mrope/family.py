"""What the gate's core asks of the multi-axis rotary family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

from posenc_spec.gate.family import Family

from . import grid
from .keys import API as CACHE_API
from .keys import APPLY_API, NAMES, POSITIONS_API
from .spec import declare


class Mrope(Family):
    names = NAMES
    value_checks = ("formula", "norm", "identity", "relative")

    def declare(self, keys, context):
        return declare(keys, context)

    def probes(self, declaration) -> list:
        spec = declaration.spec
        if declaration.api == POSITIONS_API:
            return grid.sequence_probes(spec.spatial_merge_size)
        if declaration.api == APPLY_API:
            return grid.apply_probes(spec.convention, spec.signature, spec.head_dim, declaration.max_positions)
        return grid.probes_for(spec.convention, spec.signature, spec.head_dim, declaration.max_positions)

    def plan_ids(self, calls) -> list[str]:
        return grid.plan_ids(calls)

    def judge(self, declaration, results, keep_table):
        from .judge import ApplyJudge, MropeJudge, PositionsJudge

        spec = declaration.spec
        if declaration.api == POSITIONS_API:
            return PositionsJudge(spec.spatial_merge_size, spec.temporal_interval, results)
        if declaration.api == APPLY_API:
            return ApplyJudge(spec.convention, spec.signature, results)
        return MropeJudge(spec.convention, results)

    def nearest(self, declaration, judged):
        from .slips import nearest

        if declaration.api != CACHE_API:
            return None
        return nearest(declaration.spec, judged.caches)

    def hints(self, declaration, probes, outcomes, report) -> list:
        from .slips import apply_hints, hints, position_hints

        if declaration.api == POSITIONS_API:
            return position_hints(declaration.spec, probes, outcomes)
        if declaration.api == APPLY_API:
            return apply_hints(declaration.spec, probes, outcomes)
        return hints(declaration.spec, probes, outcomes)

    def likely_fix(self, reason: str, api: str) -> str:
        if "positional argument" in reason:
            return ("declare the target's signature (x-position-ids, ids, get-1d, grid-2d, grid-3d or hidden-states) "
                    "and bind its other arguments with kwargs")
        return ""

    def plot(self, declaration, sizes, options):
        from .plot import plot

        return plot(declaration, sizes, options)

    def identify_request(self, flags, call):
        from .identify import Identification

        return Identification(call, flags)


FAMILY = Mrope()
