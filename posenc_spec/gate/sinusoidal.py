"""The gate's sinusoidal family (table and timesteps APIs): its calls and its judge.

The grid and check ids are :mod:`posenc_spec.gate.grid`'s; the single checks are
:mod:`posenc_spec.gate.judge`'s. :class:`SinusoidalJudge` judges call after call and keeps,
when asked, the table a picture of a failing target is best drawn from.
"""

from __future__ import annotations

from posenc_spec import checks

from . import grid, judge
from .advice import CHECK_SLOTS, FIT_SLOTS
from .report import KeptTable

NEAREST_SLOTS = {slot for slots in (*FIT_SLOTS.values(), *CHECK_SLOTS.values()) for slot in slots}


def probes(declaration) -> list[grid.Probe]:
    return grid.probes_for(declaration.api, declaration.t_max, declaration.max_positions, declaration.skip_odd,
                           declaration.calling.x_layout)


def prepare(declaration, dtype: str = "float32") -> None:
    """Compute the expected tables of the grid for the most common output dtype while the
    template boots (they are cached; another dtype gets its own)."""
    for probe in probes(declaration):
        if probe.role == "odd" and declaration.convention.odd == "error":
            continue
        degenerate = probe.width == 2 and declaration.convention.freq_shift == 1
        try:
            checks.expectation(probe.positions, probe.width, declaration.convention, dtype, degenerate)
        except ValueError:  # a width this convention does not define
            pass


class SinusoidalJudge:
    """Checks of one table or timesteps target, call by call (``results`` is the engine's)."""

    def __init__(self, declaration, results, keep_table: bool):
        self.convention, self.results, self.keep_table = declaration.convention, results, keep_table
        self.kept, self.worst_ratio, self.full = None, 0.0, {}
        self.tables: dict = {}  # slot -> (positions, table, dtype) of the slots advice.nearest reads

    def judge(self, probe, outcome) -> bool:
        """Judge one call; whether it returned a table (the determinism repeat compares with it)."""
        if probe.role == "odd":
            self.results.add(judge.judge_odd(probe, outcome, self.convention))
            return False
        if probe.role == "degenerate":
            self.results.add(judge.judge_degenerate(probe, outcome, self.convention))
            return False
        if probe.role == "adds":
            self.results.add(judge.judge_adds(probe, outcome, self.convention))
            return False
        if probe.role == "sequence":
            self.results.merge(judge.judge_sequence_call(probe, outcome, self.convention))
            return False
        judge.judge_table(probe, outcome, self.convention, self.results)
        if not outcome.ok or judge.call_problem(probe, outcome):
            return False
        if probe.slot in NEAREST_SLOTS:
            self.tables[probe.slot] = (probe.positions, outcome.table, outcome.dtype)
        if probe.full:
            self.full[probe.slot] = (probe, outcome)
        formula = self.results.by_id.get(f"formula[{probe.slot}]")
        if self.keep_table and formula is not None and formula.status == "failed" and formula.worst is not None:
            if self.kept is None or formula.worst.ratio > self.worst_ratio:  # the most telling size
                self.kept = KeptTable(probe.slot, probe.positions, outcome.table, outcome.dtype)
                self.worst_ratio = formula.worst.ratio
        return True

    def kept_table(self) -> KeptTable | None:
        """The table to draw: where the formula failed worst, else the largest size with
        every property check (300x512 on the default grid)."""
        if self.kept is not None or not self.full:
            return self.kept
        probe, outcome = max(self.full.values(), key=lambda item: item[0].length * item[0].width)
        return KeptTable(probe.slot, probe.positions, outcome.table, outcome.dtype)
