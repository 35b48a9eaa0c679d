"""What a failing table's own values say: which member of the family they are
(:func:`nearest`, ``identify``'s fit on the tables the run already holds), and the slip they
show (:func:`hints`, :mod:`.slips`)."""

from __future__ import annotations

import numpy as np

from posenc_spec.families.sinusoidal.conventions import Convention
from posenc_spec.families.sinusoidal.fit import Sample
from posenc_spec.families.sinusoidal.fit import answer as fit_answer
from posenc_spec.families.sinusoidal.judge import CHECK_SLOTS, FIT_SLOTS, call_problem


def nearest(declaration, tables: dict) -> dict | None:
    """``identify``'s answer from the run's own tables (slot -> (positions, table, dtype)),
    or None when the run holds too few of them."""
    from posenc_spec.families.sinusoidal.declared import sinusoidal_keys
    from posenc_spec.gate.identify.toml_text import assignments, flags

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
    """What the run's own tables say the slip is (:mod:`posenc_spec.families.sinusoidal.slips`)."""
    from posenc_spec.families.sinusoidal.slips import Table, diagnose

    statuses = {check.name: check.status for check in report.checks}
    tables = [Table(probe.slot, _sample(probe.positions, outcome.table, outcome.dtype), probe.positions,
                    statuses.get(f"formula[{probe.slot}]") == "failed")
              for probe, outcome in zip(probes, outcomes, strict=True)
              if probe.role == "table" and not call_problem(probe, outcome)
              and statuses.get(f"formula[{probe.slot}]") in ("passed", "failed")]
    found = report.nearest or {}
    if found.get("name", "unknown") == "unknown":  # no fit was tried on the run's tables
        return diagnose(declaration.spec.convention, declaration.api, tables)
    fitted = Convention(**{**found["convention"], "odd": "error"}) if found.get("convention") else None
    return diagnose(declaration.spec.convention, declaration.api, tables, fitted)
