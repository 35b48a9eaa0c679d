"""What a failing report should say to do: one cause said once, the member of the family
the target does compute, and the slip its tables show.

:func:`common_cause` finds a failure every call shares (a ``TypeError`` from every call, a
class where a function was expected, transposed tables) and names the likely fix;
:func:`nearest` runs ``identify``'s fit on tables the run already holds, so that a target
declared under the wrong convention learns which one it computes; :func:`hints` names the
slip the run's tables show, when they show one (:mod:`posenc_spec.gate.identify.slips`,
:mod:`posenc_spec.gate.identify.rope_slips`).
"""

from __future__ import annotations

import re

import numpy as np

from posenc_spec.conventions import Convention

_SIZE_PREFIX = re.compile(r"^[^:]*?: ")
# The sinusoidal grid's slots identify fits on, and those it is checked on afterwards.
FIT_SLOTS = {"table": ("128x64", "50x8"), "timesteps": ("every-step-x128", "first-50x8")}
CHECK_SLOTS = {"table": ("300x512", "1024x768"), "timesteps": ("int-draws-x320", "float-draws-x64")}
# The checks of the values a target computes: when one fails, the tables may show the slip.
FORMULA_CHECKS = ("formula[", "identity[", "attention-factor[", "norm[", "passthrough[")


def _likely_fix(reason: str, api: str) -> str:
    takes_tensor = re.search(r"(TypeError|AttributeError).*'int' object|(TypeError|AttributeError).*\bint\b", reason)
    if api == "table" and takes_tensor:
        return "the function may take a tensor of timesteps: try --api timesteps"
    if api == "timesteps" and re.search(r"TypeError|AttributeError.*Tensor", reason):
        return "the function may take (num_positions, dim): try --api table"
    if "transposed" in reason or "rows for" in reason:
        return "check the argument order: the gate calls fn(num_positions, dim) and wants (positions, features)"
    if re.search(r"returned an? [A-Z]\w* of object values", reason):
        return "TARGET may name a class: point it at the function or method that returns the table"
    if "extra leading batch axis" in reason:
        return "return table[0]: the gate wants (positions, features)"
    return ""


def reason_of(check) -> str:
    """A check's reason without the size it was called at (``50x8: ...``)."""
    return _SIZE_PREFIX.sub("", check.message, count=1)


def common_reason(report) -> str | None:
    """The reason every call of the target failed with, when they all share one."""
    calls = [check for check in report.checks if check.name.startswith("call[")]
    if len(calls) < 2 or any(check.status != "failed" for check in calls):
        return None
    reasons = {reason_of(check) for check in calls}
    return reasons.pop() if len(reasons) == 1 else None


def common_cause(report) -> list[str]:
    """One line when every call of the target failed for the same reason (with the likely fix)."""
    reason = common_reason(report)
    if reason is None:
        return []
    fix = _likely_fix(reason, report.declaration.api)
    return [f"every call failed the same way: {reason}" + (f"; likely fix: {fix}" if fix else "")]


def nearest(declaration, tables: dict) -> dict | None:
    """``identify``'s answer from the run's own tables (slot -> (positions, table, dtype)),
    or None when the run holds too few of them."""
    from .identify import answer  # the fit and the sandbox it can run in: only for a failing target
    from .identify.declared import sinusoidal_keys
    from .identify.toml_text import assignments, flags

    fit = [_sample(*tables[slot]) for slot in FIT_SLOTS.get(declaration.api, ()) if slot in tables]
    check = [_sample(*tables[slot]) for slot in CHECK_SLOTS.get(declaration.api, ()) if slot in tables]
    if len(fit) < len(FIT_SLOTS.get(declaration.api, ())) or not fit:
        return None
    found = answer(fit, check)
    if found["convention"] is None:
        return {"name": "none", "message": found["message"]}
    fields = found["convention"]
    member = Convention(**{**fields, "odd": "error"})
    slots = ", ".join(slot for slot in (*FIT_SLOTS[declaration.api], *CHECK_SLOTS[declaration.api]) if slot in tables)
    if member == declaration.convention.replace(odd="error"):
        return {"name": found["name"], "convention": fields,
                "message": f"the tables at {slots} are the declared {declaration.convention_name()} (max "
                           f"error/tolerance {found['max_error_ratio']:.3g}): what fails is elsewhere"}
    described = (f"{fields['layout']}, {fields['first']} first, shift {fields['freq_shift']}, base {fields['base']}, "
                 f"offset {fields['offset']}, scale {fields['scale']}")
    keys = sinusoidal_keys(member, declaration.preset, odd=False)
    label = " ".join([keys["convention"], *(["with"] if len(keys) > 1 else []),
                      ", ".join(f"{key} {value}" for key, value in keys.items() if key != "convention")]).strip()
    return {"name": found["name"], "convention": fields,
            "message": f"the tables are {label} ({described}; max error/tolerance "
                       f"{found['max_error_ratio']:.3g}); if that is intended, declare {flags(keys)} "
                       f"({assignments(keys)})"}


def _sample(positions, table, dtype):
    from .identify.fit import Sample

    rows = np.arange(positions, dtype=np.float64) if np.ndim(positions) == 0 else np.asarray(positions, np.float64)
    return Sample(np.asarray(table, dtype=np.float64), dtype, rows)


def _formula_failed(report) -> bool:
    return any(check.status == "failed" and check.name.startswith(FORMULA_CHECKS) for check in report.checks)


def hints(declaration, probes, outcomes, report) -> list:
    """What the run's own tables say the slip is (:mod:`posenc_spec.gate.identify.hint`): empty
    unless a check of the values failed, and when nothing explains them."""
    if not _formula_failed(report):
        return []
    try:
        return _hints(declaration, probes, outcomes, report)
    except Exception:  # a hint is advice: whatever a target returned, the verdict stands without it
        return []


def _hints(declaration, probes, outcomes, report) -> list:
    from .judge import call_problem

    statuses = {check.name: check.status for check in report.checks}
    if declaration.rope is not None:
        from .identify.rope_slips import diagnose as diagnose_rope

        return diagnose_rope(declaration.rope, declaration.api, list(zip(probes, outcomes, strict=True)), statuses,
                             declaration.max_positions)
    from .identify.slips import Table, diagnose

    tables = [Table(probe.slot, _sample(probe.positions, outcome.table, outcome.dtype), probe.positions,
                    statuses.get(f"formula[{probe.slot}]") == "failed")
              for probe, outcome in zip(probes, outcomes, strict=True)
              if probe.role == "table" and not call_problem(probe, outcome)
              and statuses.get(f"formula[{probe.slot}]") in ("passed", "failed")]
    found = report.nearest or {}
    if found.get("name", "unknown") == "unknown":  # no fit was tried on the run's tables
        return diagnose(declaration.convention, declaration.api, tables)
    fitted = Convention(**{**found["convention"], "odd": "error"}) if found.get("convention") else None
    return diagnose(declaration.convention, declaration.api, tables, fitted)


def identify_command(declaration) -> str:
    """The ``identify`` command that says which member a target computes."""
    extra = f" --api {declaration.api}" if declaration.api != "table" else ""
    return f"posenc-spec identify {declaration.name}{extra}"
