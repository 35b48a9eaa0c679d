"""What the gate's core asks of the ALiBi family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Family

from . import grid
from .keys import NAMES
from .spec import declare


def _probes(declaration) -> list:
    spec = declaration.spec
    return grid.probes(spec.signature, spec.convention, spec.attention_heads, declaration.max_positions)


class Alibi(Family):
    names = NAMES

    def declare(self, keys, context):
        return declare(keys, context)

    def assert_checkable(self, declaration) -> None:
        """Every head count's sweep must fit under ``max_positions``: below it, most heads' slopes
        would go unjudged."""
        needed = max(call.k_len for call in grid.sweep_calls(declaration.spec.signature, 1))
        if declaration.max_positions is not None and declaration.max_positions < needed:
            where = f"{declaration.source}: " if declaration.source else ""
            raise UsageError(f"{where}max_positions {declaration.max_positions} is below the {needed} keys the ALiBi "
                             f"grid calls every head count with ({declaration.spec.signature})")

    def regression_bounds(self, declaration):
        from posenc_spec.gate.judge import Results

        from .judge import AlibiJudge, positions_of
        from .properties import expectation
        from .tolerance import longest_distance, slope_tolerance

        judged = AlibiJudge(declaration.spec.convention, Results())

        def pieces(probe, outcome):
            values, dtype, problem = judged.values(probe, outcome)
            if problem:
                return None
            call, conv = probe.call, declaration.spec.convention
            if probe.signature == "heads":
                return [(values, slope_tolerance(call.num_heads, conv, longest_distance(declaration.max_positions)))]
            exp = expectation(call.num_heads, positions_of(call, conv), conv, dtype)
            return [(values, exp.tolerance)]

        return pieces

    def probes(self, declaration) -> list:
        return _probes(declaration)

    def plan_ids(self, calls) -> list[str]:
        return grid.plan_ids(calls)

    def judge(self, declaration, results, keep_table):
        from .judge import AlibiJudge

        return AlibiJudge(declaration.spec.convention, results, declaration.max_positions)

    def nearest(self, declaration, judged) -> dict | None:
        from .slips import nearest

        return nearest(declaration, judged)

    def hints(self, declaration, probes, outcomes, report) -> list:
        from .slips import hints

        return hints(declaration, probes, outcomes, report)

    def likely_fix(self, reason: str, api: str) -> str:
        if api == "alibi-bias" and "positional argument" in reason:
            return ("the function may take other arguments: declare its signature (heads-length, heads-length-max, "
                    "mask-heads-dtype, heads-mask, module-ij or module-scores)")
        if api == "alibi-slopes" and "positional argument" in reason:
            return ("alibi-slopes calls fn(num_heads): bind the other arguments with kwargs "
                    "(kwargs = {device = \"cpu\"})")
        return ""

    def plot(self, declaration, sizes, options):
        from .plot import plot

        return plot(declaration, sizes, options)

    def identify_request(self, flags, call):
        from .identify import Identification

        return Identification(call, flags)


FAMILY = Alibi()
