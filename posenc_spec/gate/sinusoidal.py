"""The gate's sinusoidal family (table and timesteps APIs): its calls and its judge.

The grid and check ids are :mod:`posenc_spec.gate.grid`'s; the single checks are
:mod:`posenc_spec.gate.judge`'s. :class:`SinusoidalJudge` judges call after call and keeps,
when asked, the table a picture of a failing target is best drawn from.
"""

from __future__ import annotations

import numpy as np

from posenc_spec import checks
from posenc_spec.conventions import Convention

from . import grid, judge
from .identify.fit import Sample
from .identify.fit import answer as fit_answer
from .report import KeptTable

# The grid's slots identify fits on, and those it is checked on afterwards.
FIT_SLOTS = {"table": ("128x64", "50x8"), "timesteps": ("every-step-x128", "first-50x8")}
CHECK_SLOTS = {"table": ("300x512", "1024x768"), "timesteps": ("int-draws-x320", "float-draws-x64")}
NEAREST_SLOTS = {slot for slots in (*FIT_SLOTS.values(), *CHECK_SLOTS.values()) for slot in slots}


def probes(declaration) -> list[grid.Probe]:
    return grid.probes_for(declaration.api, declaration.t_max, declaration.max_positions, declaration.spec.skip_odd,
                           declaration.spec.x_layout)


def prepare(declaration, dtype: str = "float32") -> None:
    """Compute the expected tables of the grid for the most common output dtype while the
    template boots (they are cached; another dtype gets its own)."""
    for probe in probes(declaration):
        if probe.role == "odd" and declaration.spec.convention.odd == "error":
            continue
        degenerate = probe.width == 2 and declaration.spec.convention.freq_shift == 1
        try:
            checks.expectation(probe.positions, probe.width, declaration.spec.convention, dtype, degenerate)
        except ValueError:  # a width this convention does not define
            pass


class SinusoidalJudge:
    """Checks of one table or timesteps target, call by call (``results`` is the engine's)."""

    def __init__(self, declaration, results, keep_table: bool):
        self.convention, self.results, self.keep_table = declaration.spec.convention, results, keep_table
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


def nearest(declaration, tables: dict) -> dict | None:
    """``identify``'s answer from the run's own tables (slot -> (positions, table, dtype)),
    or None when the run holds too few of them."""
    from .identify.declared import sinusoidal_keys
    from .identify.toml_text import assignments, flags

    fit = [_sample(*tables[slot]) for slot in FIT_SLOTS.get(declaration.api, ()) if slot in tables]
    check = [_sample(*tables[slot]) for slot in CHECK_SLOTS.get(declaration.api, ()) if slot in tables]
    if len(fit) < len(FIT_SLOTS.get(declaration.api, ())) or not fit:
        return None
    found = fit_answer(fit, check)
    if found["convention"] is None:
        return {"name": "none", "message": found["message"]}
    fields = found["convention"]
    member = Convention(**{**fields, "odd": "error"})
    slots = ", ".join(slot for slot in (*FIT_SLOTS[declaration.api], *CHECK_SLOTS[declaration.api]) if slot in tables)
    if member == declaration.spec.convention.replace(odd="error"):
        return {"name": found["name"], "convention": fields,
                "message": f"the tables at {slots} are the declared {declaration.convention_name()} (max "
                           f"error/tolerance {found['max_error_ratio']:.3g}): what fails is elsewhere"}
    described = (f"{fields['layout']}, {fields['first']} first, shift {fields['freq_shift']}, base {fields['base']}, "
                 f"offset {fields['offset']}, scale {fields['scale']}")
    keys = sinusoidal_keys(member, declaration.spec.preset, odd=False)
    label = " ".join([keys["convention"], *(["with"] if len(keys) > 1 else []),
                      ", ".join(f"{key} {value}" for key, value in keys.items() if key != "convention")]).strip()
    return {"name": found["name"], "convention": fields,
            "message": f"the tables are {label} ({described}; max error/tolerance "
                       f"{found['max_error_ratio']:.3g}); if that is intended, declare {flags(keys)} "
                       f"({assignments(keys)})"}


def _sample(positions, table, dtype):
    rows = np.arange(positions, dtype=np.float64) if np.ndim(positions) == 0 else np.asarray(positions, np.float64)
    return Sample(np.asarray(table, dtype=np.float64), dtype, rows)


def hints(declaration, probes, outcomes, report) -> list:
    """What the run's own tables say the slip is (:mod:`posenc_spec.gate.identify.slips`)."""
    from .identify.slips import Table, diagnose

    statuses = {check.name: check.status for check in report.checks}
    tables = [Table(probe.slot, _sample(probe.positions, outcome.table, outcome.dtype), probe.positions,
                    statuses.get(f"formula[{probe.slot}]") == "failed")
              for probe, outcome in zip(probes, outcomes, strict=True)
              if probe.role == "table" and not judge.call_problem(probe, outcome)
              and statuses.get(f"formula[{probe.slot}]") in ("passed", "failed")]
    found = report.nearest or {}
    if found.get("name", "unknown") == "unknown":  # no fit was tried on the run's tables
        return diagnose(declaration.spec.convention, declaration.api, tables)
    fitted = Convention(**{**found["convention"], "odd": "error"}) if found.get("convention") else None
    return diagnose(declaration.spec.convention, declaration.api, tables, fitted)
