"""What the gate's core asks of the 2-D sincos family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Family

from . import grid, spec
from .judge import Sincos2dJudge, table_problem
from .keys import NAMES

CHECKED_DTYPE = "float32"  # the dtype whose bounds must be able to tell a table apart


class Sincos2dFamily(Family):
    names = NAMES
    # A table with rows the declaration does not count fails shape, not formula: its values still show why.
    value_checks = ("formula", "shape")

    def declare(self, keys, context):
        return spec.declare(keys, context)

    def assert_checkable(self, declaration) -> None:
        """A usage error when no table call of the grid would tell the declared table from one
        whose every angle is 0: the options leave nothing for float32 to check."""
        from . import judge, properties

        convention = declaration.spec.convention
        calls = [call for call in self.probes(declaration) if call.role == "table"]
        for call in calls:
            try:
                expected = judge.expectation(call.height, call.width, call.dim, convention, CHECKED_DTYPE)
            except ValueError:  # a size the convention refuses: told apart by that alone
                return
            if properties.shows_its_angles(expected):
                return
        if calls:
            raise UsageError(f"{declaration.name}: a table whose every angle is 0 (each sine 0, each cosine 1) is "
                             f"within the {CHECKED_DTYPE} bounds of {declaration.convention_name()} at every call: "
                             "the declared positions and frequencies (scale, offset, base size, bases) leave "
                             "angles float32 cannot resolve, so nothing can be checked")

    def regression_bounds(self, declaration):
        from . import judge

        convention = declaration.spec.convention

        def pieces(probe, outcome):
            if probe.role != "table" or table_problem(outcome):
                return None
            try:
                expected = judge.expectation(probe.height, probe.width, probe.dim, convention, outcome.dtype)
            except ValueError:  # no bound for this dtype
                return None
            if tuple(outcome.table.shape) != tuple(expected.tolerance.shape):
                return None
            return [(outcome.table, expected.tolerance)]

        return pieces

    def probes(self, declaration) -> list:
        return grid.calls(declaration.spec.convention, declaration.calling.signature, declaration.max_positions)

    def plan_ids(self, made) -> list[str]:
        return grid.plan_ids(made)

    def judge(self, declaration, results, keep_table):
        return Sincos2dJudge(declaration.spec.convention, results)

    def nearest(self, declaration, judged) -> dict | None:
        from .identify import nearest

        return nearest(declaration, judged.tables)

    def hints(self, declaration, probes, outcomes, report) -> list:
        from .identify import hints

        return hints(declaration, probes, outcomes, report)

    def likely_fix(self, reason: str, api: str) -> str:
        if "takes square grids only" in reason:
            return "the target takes one side: keep signature dim-size, its grids are square"
        if "missing" in reason and "positional argument" in reason:
            return "check the signature: the gate calls fn(height, width, dim) unless signature names another call"
        return ""

    def plot(self, declaration, sizes, options):
        from .plot import plot

        return plot(declaration, sizes, options)

    def identify_request(self, flags, call):
        from .identify import Identification

        return Identification(call, flags)


FAMILY = Sincos2dFamily()
