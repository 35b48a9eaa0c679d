"""``identify``: which member of the family does a target compute? Found from its tables alone.

The target is called (in the worker process) at 128 positions for widths 64 and 16, and at
50 positions for width 7. For each of the four layouts-and-first-functions and both
frequency shifts the columns are paired as that structure says, each pair read as the
complex number ``z = cos + i sin``, and its phase followed along the positions:

- the phase advances by ``scale * omega_k`` per position; the pairs whose advance is
  below 1 radian (a contiguous run from the lowest frequency up, where integer positions
  cannot alias) give ``ln|advance_k| = ln|scale| - k ln(base) / (h - shift)``, a straight
  line in k, so the slope gives the base and the intercept the scale;
- the phase at row 0 is ``scale * offset * omega_k``: the lowest frequency gives the
  offset unambiguously, the higher ones refine it.

Rounded values (an integer base, offset and scale) are tried first. Each candidate is
then judged the way ``check`` judges: the largest error/tolerance ratio
(:mod:`posenc_spec.tolerance`) over both tables; the first candidate within bound (ratio
<= 1) is the answer. Width 16 beside width 64 separates the shifts (at one width, shift
0 with one base equals shift 1 with another). The width-7 call then tells the odd-width
behaviour: an exception (``error``), or the ``zero-pad`` or ``ceil`` table.

When nothing fits, the answer is "none", with the nearest convention (fitted or preset)
and its ratio. With integer positions a scale above pi per position is only seen through
the lower frequencies; a table that aliases everywhere cannot be fitted.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from posenc_spec import checks
from posenc_spec.conventions import FUNCTIONS, LAYOUTS, PRESETS, Convention
from posenc_spec.tolerance import compare

from .engine import APIS, DEFAULT_TIMEOUT
from .loader import absolute_target, parse_target
from .worker import load, run_calls, run_worker

PROBE_LENGTH = 128
PROBE_WIDTHS = (64, 16)
ODD_PROBE = (50, 7)
UNALIASED_STEP = 1.0  # radians per position: well below pi, so unwrapping the phase is safe


class IdentifyError(Exception):
    """The target could not be imported (exit status 2)."""


def _ratio(table: np.ndarray, dtype: str, positions, convention: Convention) -> float:
    try:
        exp = checks.expectation(positions, table.shape[1], convention, dtype)
    except ValueError:  # a width this convention does not define
        return math.inf
    return compare(table, exp.table, exp.tolerance).max_ratio


def _max_ratio(tables, convention: Convention) -> float:
    return max(_ratio(table, dtype, positions, convention) for table, dtype, positions in tables)


def _round_significant(value: float, digits: int) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def _fit(table: np.ndarray, positions: np.ndarray, structure: Convention):
    """``(base, scale, offset)`` under ``structure``'s layout, first function and shift,
    or None when the columns do not pair up into a rotating phase."""
    width = table.shape[1]
    h = width // 2
    if h - structure.freq_shift < 1:
        return None
    columns = structure.columns(width)
    first = np.flatnonzero(columns.is_first & (columns.partner >= 0))
    first = first[np.argsort(columns.pair[first])]
    second = columns.partner[first]
    sin_columns, cos_columns = (first, second) if structure.first == "sin" else (second, first)
    z = table[:, cos_columns] + 1j * table[:, sin_columns]
    if not np.all(np.isfinite(z)) or np.max(np.abs(np.abs(z) - 1.0)) > 0.1:
        return None
    steps = np.angle(np.sum(z[1:] * np.conj(z[:-1]), axis=0))
    valid = []
    for k in range(h - 1, -1, -1):  # from the lowest frequency up, while the step is unaliased
        if abs(steps[k]) >= UNALIASED_STEP:
            break
        valid.append(k)
    valid = np.array(sorted(valid))
    if valid.size < 2:
        return None
    phase = np.unwrap(np.angle(z[:, valid]), axis=0)
    centred = positions - positions.mean()
    slopes = centred @ (phase - phase.mean(axis=0)) / (centred @ centred)
    intercepts = phase.mean(axis=0) - slopes * positions.mean()
    if np.any(slopes == 0):
        return None
    line_slope, line_intercept = np.polyfit(valid, np.log(np.abs(slopes)), 1, w=np.abs(slopes))
    log_base = -line_slope * (h - structure.freq_shift)
    if not log_base > 0 or not math.isfinite(log_base):
        return None
    scale = float(np.sign(np.median(slopes)) * math.exp(line_intercept))
    # Offset: the lowest frequency fixes it up to a long period; each higher one refines it.
    offset = None
    for slope, intercept in sorted(zip(slopes, intercepts, strict=True), key=lambda pair: abs(pair[0])):
        wrapped = math.remainder(intercept, 2 * math.pi)
        if offset is None:
            offset = wrapped / slope
        else:
            turns = round((offset * slope - wrapped) / (2 * math.pi))
            offset = (wrapped + 2 * math.pi * turns) / slope
    return math.exp(log_base), scale, float(offset)


def _candidates(base: float, scale: float, offset: float):
    """Rounded values first, the raw fit last."""
    bases = [round(base), _round_significant(base, 3), _round_significant(base, 2), base]
    scales = [round(scale), _round_significant(scale, 3), scale]
    offsets = [round(offset), offset]

    def unique(values, valid):
        seen = []
        for value in values:
            if valid(value) and all(abs(value - other) > 1e-12 * max(1.0, abs(value)) for other in seen):
                seen.append(value)
        return seen

    for b, s, o in itertools.product(unique(bases, lambda v: v > 1), unique(scales, lambda v: v != 0),
                                     unique(offsets, math.isfinite)):
        yield float(b), float(s), float(o) if o != round(o) else int(round(o))


def _tidy(value: float):
    return int(value) if float(value).is_integer() else value


def identify_tables(tables, odd=None) -> dict:
    """Identify from ``tables``: a list of ``(table, dtype name, positions)`` at even widths
    (both probe widths for the shift to be known). ``odd`` is what the width-7 call did:
    None (not tried), ``("raised", message)`` or ``("table", table, dtype, positions)``."""
    tables = [(np.asarray(table, dtype=np.float64), dtype, np.asarray(positions, dtype=np.float64))
              for table, dtype, positions in tables]
    widest = max(tables, key=lambda item: item[0].shape[1])
    presets = {name: _max_ratio(tables, preset) for name, preset in PRESETS.items()}
    found, found_ratio, best, best_ratio = None, math.inf, None, math.inf
    structures = []
    for layout, first, shift in itertools.product(LAYOUTS, FUNCTIONS, (0, 1)):
        structure = Convention(layout, first, shift)
        fit = _fit(widest[0], widest[2], structure)
        if fit is not None:
            raw = structure.replace(base=fit[0], scale=fit[1], offset=fit[2])
            structures.append((_max_ratio(tables, raw), structure, fit))
    for _raw_ratio, structure, fit in sorted(structures, key=lambda item: item[0]):
        for base, scale, offset in _candidates(*fit):
            try:
                candidate = structure.replace(base=base, scale=scale, offset=offset)
            except ValueError:
                continue
            ratio = _max_ratio(tables, candidate)
            if ratio < best_ratio:
                best, best_ratio = candidate, ratio
            if ratio <= 1.0:
                found, found_ratio = candidate, ratio
                break
        if found is not None:
            break
    for name, ratio in presets.items():
        if ratio < best_ratio:
            best, best_ratio = PRESETS[name], ratio
    odd_behaviour, odd_note = None, ""
    if found is not None:
        found, odd_behaviour, odd_note = _odd_behaviour(found, odd)
    result = {
        "name": _name(found) if found is not None else "none",
        "convention": None,
        "max_error_ratio": found_ratio if found is not None else best_ratio,
        "nearest": {"name": _name(best) if best is not None else None,
                    "convention": _fields(best) if best is not None else None,
                    "max_error_ratio": best_ratio},
        "presets": presets,
    }
    if found is not None:
        fields = _fields(found)
        fields["odd"] = odd_behaviour
        result["convention"] = fields
        result["message"] = (f"identified {_describe(found, odd_behaviour)}; max error/tolerance {found_ratio:.3g}"
                             + (f"; {odd_note}" if odd_note else ""))
    else:
        nearest = _name(best) if best is not None else "nothing"
        result["message"] = (f"none: no member of the family fits; nearest {nearest} "
                             f"(max error/tolerance {best_ratio:.3g})")
    return result


def _name(convention: Convention) -> str:
    """The preset's name when the convention is one apart from its odd-width behaviour."""
    for name, preset in PRESETS.items():
        if convention.replace(odd=preset.odd) == preset:
            return name
    return convention.name()


def _fields(convention: Convention) -> dict:
    fields = convention.as_dict()
    for key in ("base", "offset", "scale"):
        fields[key] = _tidy(fields[key])
    return fields


def _describe(convention: Convention, odd) -> str:
    return (f"{_name(convention)} ({convention.layout}, {convention.first} first, shift {convention.freq_shift}, "
            f"base {convention.base:g}, offset {convention.offset:g}, scale {convention.scale:g}, "
            f"odd widths: {odd or 'unidentified'})")


def _odd_behaviour(found: Convention, odd):
    if odd is None:
        return found, None, "odd widths not tried"
    if odd[0] == "raised":
        return found.replace(odd="error"), "error", ""
    if odd[0] == "table":
        _, table, dtype, positions = odd
        table = np.asarray(table, dtype=np.float64)
        for behaviour in ("zero-pad", "ceil"):
            try:
                candidate = found.replace(odd=behaviour)
            except ValueError:  # ceil is defined for shift 0 only
                continue
            if _ratio(table, dtype, positions, candidate) <= 1.0:
                return candidate, behaviour, ""
        return found, None, "its odd-width table matches neither zero-pad nor ceil"
    return found, None, f"at width 7 it {odd[1]}"


def _requests(api: str) -> list[dict]:
    requests = []
    for length, width in [(PROBE_LENGTH, width) for width in PROBE_WIDTHS] + [ODD_PROBE]:
        steps = None if api == "table" else np.arange(length, dtype=np.int64)
        requests.append({"label": f"{length}x{width}", "length": length, "width": width, "timesteps": steps,
                         "shape": (length, width)})
    return requests


def _identify_outcomes(target: str, requests: list[dict], outcomes) -> dict:
    tables, problems = [], []
    for request, outcome in zip(requests[:-1], outcomes[:-1], strict=True):
        if outcome.ok:
            tables.append((outcome.table, outcome.dtype, np.arange(request["length"], dtype=np.float64)))
        else:
            problems.append(f"at {request['label']} it {outcome.message}")
    odd_outcome = outcomes[-1]
    if odd_outcome.ok:
        odd = ("table", odd_outcome.table, odd_outcome.dtype, np.arange(requests[-1]["length"], dtype=np.float64))
    elif odd_outcome.status == "raised":
        odd = ("raised", odd_outcome.message)
    else:
        odd = ("other", odd_outcome.message)
    if not tables:
        return {"target": target, "name": "none", "convention": None, "max_error_ratio": None,
                "nearest": None, "presets": {}, "message": "none: no table to identify; " + "; ".join(problems)}
    result = {"target": target, **identify_tables(tables, odd)}
    if problems:
        result["message"] += "; " + "; ".join(problems)
    return result


def identify_many(targets, api: str = "table", timeout: float = DEFAULT_TIMEOUT) -> list[dict]:
    """:func:`identify_target` for several targets, in one worker process."""
    targets = list(targets)
    for target in targets:
        parse_target(target)
    if api not in APIS:
        raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")
    requests = _requests(api)
    results = []
    with run_worker() as worker:
        for target in targets:
            resolved = absolute_target(target)
            imported, message = load(worker, resolved, timeout)
            if not imported:
                raise IdentifyError(message)
            outcomes = list(run_calls(worker, resolved, requests, timeout))
            results.append(_identify_outcomes(target, requests, outcomes))
    return results


def identify_target(target: str, api: str = "table", timeout: float = DEFAULT_TIMEOUT) -> dict:
    """The ``identify`` JSON for ``target``: :func:`identify_tables` on its tables at 128
    positions (widths 64 and 16) and at 50 positions (width 7), plus ``target``.

    Raises :class:`IdentifyError` when the target cannot be imported and ValueError for a
    malformed TARGET or API.
    """
    return identify_many([target], api, timeout)[0]
