"""``identify`` of a table or timesteps target: which member of the family it computes.

The target is called (in a sealed child, as ``check`` calls it) on *fit* probes: 128
positions at widths 64 and 16 for the table API; for the timesteps API 1024 float32
timesteps evenly spread over ``[0, t_max]`` (so that even fast frequencies are sampled
finely) at widths 64 and 16, and the int64 steps ``0..127`` at width 64; and a width-7
probe for the odd-width behaviour. :mod:`.fit` finds the member that fits every fit table.
Before answering, that member goes through ``check``'s own formula check on *validation*
probes it was not fitted on (two sizes of ``check``'s grid): if they fail, the answer is
"none", with the fitted member as the nearest and by how much it misses. Width 16 beside
width 64 separates the shifts (at one width, shift 0 with one base equals shift 1 with
another); several lengths keep an offset fitted at one length honest at others.
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.families.sinusoidal import grid
from posenc_spec.families.sinusoidal.fit import answer, sample_of
from posenc_spec.families.sinusoidal.judge import call_problem
from posenc_spec.gate.declaration import DEFAULT_T_MAX, DEFAULT_TIMEOUT
from posenc_spec.gate.identify import answer_each
from posenc_spec.gate.options import RunOptions

FIT_LENGTH = 128
FIT_WIDTHS = (64, 16)
FLOAT_STEPS = 1024
ODD_PROBE = (50, 7)
VALIDATION_SLOTS = {"table": ("300x512", "1024x768"), "timesteps": ("int-draws-x320", "float-draws-x64")}


def _capped(length, max_positions):
    return length if max_positions is None else min(length, max_positions)


def _float_steps(count: int, t_max: float) -> np.ndarray:
    """``count`` float32 timesteps evenly spread over ``[0, t_max]``, none above ``t_max``."""
    steps = np.linspace(0.0, t_max, count).astype(np.float32)
    return np.where(steps.astype(np.float64) > t_max, np.nextafter(steps, np.float32(0)), steps)


def probes(api: str, t_max: float = DEFAULT_T_MAX, max_positions=None) -> tuple[list, grid.Probe, list]:
    """``(fit probes, the odd probe, validation probes)``."""
    length = _capped(FIT_LENGTH, max_positions)
    odd_length = _capped(ODD_PROBE[0], max_positions)
    if api == "table":
        fits = [grid.Probe(f"fit-{length}x{width}", "table", length, width) for width in FIT_WIDTHS]
        odd = grid.Probe("fit-odd", "odd", odd_length, ODD_PROBE[1])
    else:
        count = _capped(FLOAT_STEPS, max_positions)
        spread = _float_steps(count, t_max)
        fits = [grid.Probe(f"fit-float{count}x{width}", "table", count, width, spread) for width in FIT_WIDTHS]
        steps = np.arange(min(math.floor(t_max), length - 1) + 1, dtype=np.int64)
        if steps.size >= 3:
            fits.append(grid.Probe(f"fit-int{steps.size}x64", "table", steps.size, 64, steps))
        odd = grid.Probe("fit-odd", "odd", odd_length, ODD_PROBE[1], _float_steps(odd_length, t_max))
    slots = VALIDATION_SLOTS[api]
    validation = [probe for probe in grid.probes_for(api, t_max, max_positions) if probe.role == "table"
                  and probe.slot in slots]
    return fits, odd, validation


def identify_many(targets, api: str = "table", t_max: float = DEFAULT_T_MAX, timeout: float = DEFAULT_TIMEOUT,
                  max_positions=None, options: RunOptions | None = None, calling: dict | None = None,
                  strict: bool = False) -> list[dict]:
    """The identify answer for each target (each imported and called in its own sealed
    child, as ``calling`` declares: ``signature``, ``init``, ``method``, ``kwargs``,
    ``x_layout``, in a declaration's typed form; none: as it is; ``strict``: the check of
    the answer fails on a note). :class:`IdentifyError` when a target cannot be imported."""
    from posenc_spec.gate.declaration import declare

    calling = dict(calling or {})
    how = declare({"target": "calling:how", "api": api, **calling}).how() if calling else None
    fits, odd, validation = probes(api, t_max, max_positions)
    calls = [*fits, odd, *validation]

    def answer_of(target, run_outcomes) -> dict:
        outcomes = dict(zip(calls, run_outcomes, strict=True))
        fit_samples = [sample for probe in fits if (sample := sample_of(probe, outcomes[probe])) is not None]
        checks = [sample for probe in validation if (sample := sample_of(probe, outcomes[probe])) is not None]
        result = {"target": target, **answer(fit_samples, checks, odd, outcomes[odd])}
        problems = [f"at {probe.slot} it {call_problem(probe, outcomes[probe])}" for probe in fits
                    if call_problem(probe, outcomes[probe])]
        if problems:
            result["message"] += "; " + "; ".join(problems)
        return result

    def declaration_of(target, result):
        from posenc_spec.families.sinusoidal.declared import answer_keys
        from posenc_spec.gate.declaration import declare

        return declare({"target": target, **answer_keys(result, api, t_max, max_positions), "t_max": t_max,
                        "timeout": timeout, **calling})

    return answer_each(targets, [probe.request() for probe in calls], timeout, options, answer_of, declaration_of,
                       how=how, strict=strict)


def identify_target(target: str, **options) -> dict:
    return identify_many([target], **options)[0]


# The slips whose value no convention takes on purpose: an answer one of them away from a
# preset is that preset with the slip (base 100 is vaswani's 10000 with `i/d` for `2i/d`).
SLIP_ONLY = ("exponent-i-over-d", "log10-for-ln", "log2-for-ln")


def known_slip(found, declared=None, what: str = "positions"):
    """The :class:`~posenc_spec.gate.identify.hint.Hint` of the known slip ``found`` (a
    :class:`~.conventions.Convention`) is: of ``declared`` (every change from it a named slip),
    else of the preset it is one :data:`SLIP_ONLY` slip away from; None when it is none."""
    from posenc_spec.families.sinusoidal.conventions import PRESETS
    from posenc_spec.families.sinusoidal.slips import changes
    from posenc_spec.gate.identify.hint import Hint

    found = found.replace(odd="error")
    if declared is not None:
        nearby = {"the declared convention": declared.replace(odd="error")}
    elif any(not changes(found, preset.replace(odd="error"), what) for preset in PRESETS.values()):
        return None
    else:
        nearby = {name: preset.replace(odd="error") for name, preset in PRESETS.items()}
    for name, member in nearby.items():
        found_changes = changes(found, member, what)
        if not found_changes or (declared is None and (len(found_changes) != 1
                                                       or found_changes[0].slip not in SLIP_ONLY)):
            continue
        words = "; ".join(change.words for change in found_changes)
        return Hint(tuple(change.slip for change in found_changes), f"it is {name} with a slip: {words}")
    return None
