"""Which member of the 2-D sincos family a target computes (``identify`` and a failing run's
nearest member), and the slip a failing run's tables show (its hints).

The fit (:func:`fit`): the output layout and the extra tokens come from the shape of a
non-square table; the rest is a search over every member of the family built from the keys'
discrete values (which axis first, grouping and pairing, the denominator, the token order),
common bases and the presets' position transforms, plus the declared convention's own
parameters and those of its slips: the member whose tables are nearest to the target's.
It is an answer when every fitted table lies within its bound; ``identify`` then checks it
on grids it was not fitted on, then under the whole ``check`` grid
(:func:`posenc_spec.gate.identify.answer_each`).

``identify`` calls the target as ``fn(height, width, dim)`` (the canonical signature): a
target of another signature is identified through a function that calls it so.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from posenc_spec.gate.calls import CallRequest
from posenc_spec.tolerance import compare

from . import oracle
from .conventions import AXES, MAX_EXTRA_TOKENS, PRESETS, TOKEN_ORDERS, Sincos2d
from .grid import SQUARE_ONLY
from .judge import table_problem
from .properties import layout_keys
from .slips import OTHER_BASES, candidates, narrow_angles, narrow_output
from .spec import convention_keys, keys_between
from .tolerance import table_tolerance

API = "sincos2d"
# Non-square grids both ways round, three widths (one width cannot tell the denominator from the base).
FIT_GRIDS = ((3, 5, 16), (5, 3, 8), (4, 6, 32))
VALIDATION_GRIDS = ((7, 11, 64), (2, 3, 12))
# The position transforms the presets use, beside the declared one's and its slips'.
PRESET_POSITIONS = tuple(dict.fromkeys((conv.position, tuple(conv.position_parameters().items()))
                                       for conv in PRESETS.values()))
EXTRA_POSITIONS = (("index", (("offset", 1.0), ("scale", 1.0))),)
# A target that takes one side (grid.SQUARE_ONLY) is fitted on square grids: three sides and
# widths, as the non-square fit (a square grid cannot tell a swapped axis hidden by a
# transposed token order, and neither can any call such a target takes).
SQUARE_FIT_GRIDS = ((3, 3, 16), (5, 5, 8), (4, 4, 32))
SQUARE_VALIDATION_GRIDS = ((7, 7, 64), (2, 2, 12))
# How many members at most the nearest-member fit reads a failing run's tables for.
NEAREST_GRIDS = 3


def _as_table(table) -> np.ndarray:
    return np.asarray(table, dtype=np.float64)


def _sample(height: int, width: int, dim: int, table, dtype: str) -> tuple:
    return (height, width, dim, _as_table(table), dtype)


def _layout(sample) -> dict | None:
    height, width, dim, table, _ = sample
    return layout_keys(table.shape, height, width, dim)


def _shaped(sample, conv: Sincos2d) -> np.ndarray | None:
    height, width, dim, table, _ = sample
    expected = conv.shape(height, width, dim)
    return table.reshape(expected) if table.size == math.prod(expected) else None


def members(layout: Sincos2d) -> list[Sincos2d]:
    """Every member of the search: ``layout``'s output layout and extra tokens, each
    combination of the discrete keys, the common bases and the position transforms."""
    found = []
    pairings = (("by-axis", "concat"), ("by-axis", "interleaved"), ("by-function", "concat"))
    orders = TOKEN_ORDERS if layout.output_layout == "tokens" else (layout.token_order,)
    for axis, (grouping, pairing), shift, order, base, (position, parameters) in itertools.product(
            AXES, pairings, (0, 1), orders, OTHER_BASES, (*PRESET_POSITIONS, *EXTRA_POSITIONS)):
        found.append(layout.replace(first_axis=axis, grouping=grouping, pairing=pairing, freq_shift=shift,
                                    token_order=order, row_base=base, col_base=base, position=position,
                                    **dict(parameters)))
    return found


def _error(member: Sincos2d, samples, enough: float = math.inf) -> float:
    """The largest absolute error of ``samples`` against ``member`` (stops once past ``enough``)."""
    worst = 0.0
    for sample in samples:
        actual = _shaped(sample, member)
        if actual is None:
            return math.inf
        try:
            expected = oracle.table(*sample[:3], member)
        except ValueError:
            return math.inf
        with np.errstate(invalid="ignore"):
            error = np.max(np.abs(actual - expected), initial=0.0)
        worst = max(worst, math.inf if np.isnan(error) else float(error))
        if worst > enough:
            break
    return worst


def ratio(member: Sincos2d, samples) -> float:
    """The largest error/tolerance of ``samples`` against ``member`` (infinite where a shape differs)."""
    worst = 0.0
    for sample in samples:
        actual = _shaped(sample, member)
        if actual is None:
            return math.inf
        height, width, dim, _, dtype = sample
        try:
            bound = table_tolerance(height, width, dim, member, dtype)
        except ValueError:  # no bound for this dtype
            return math.inf
        worst = max(worst, compare(actual, oracle.table(height, width, dim, member), bound).max_ratio)
    return worst


def fit(samples, declared: Sincos2d | None = None) -> tuple[Sincos2d | None, float, str]:
    """``(member, max error/tolerance, why)`` of the nearest member (None: the shapes are no
    layout's): among every member of the search, or, given the ``declared`` convention, among
    it, its slips' members and the presets in the tables' layout."""
    layouts = {tuple(sorted(found.items())) if (found := _layout(sample)) else None for sample in samples}
    if None in layouts or len(layouts) != 1:
        shapes = ", ".join(f"{h}x{w}:d={d} -> {table.shape}" for h, w, d, table, _ in samples)
        return None, math.inf, f"the shapes ({shapes}) are no output layout of the family"
    layout = dict(layouts.pop())
    if declared is None:
        pool = members(Sincos2d(**layout))
    else:
        pool = [declared, *(slip.member for slip in candidates(declared) if slip.member is not None),
                *(preset.replace(**{"token_order": "row-major", "extra_tokens": 0, **layout})
                  for preset in PRESETS.values())]
    best, least = None, math.inf
    for member in pool:
        error = _error(member, samples, least)
        if error < least:
            best, least = member, error
    if best is None:
        return None, math.inf, "no member returns tables of these shapes"
    return best, ratio(best, samples), ""


def _keys_text(keys: dict) -> tuple[str, str]:
    from posenc_spec.gate.identify.toml_text import assignments, flags

    return flags(keys), assignments(keys)


def nearest(declaration, tables: dict) -> dict | None:
    """The member a failing run's own tables are (slot -> (probe, table, dtype)), or None when
    it holds too few tables to tell."""
    declared = declaration.spec.convention
    kept = sorted(tables.values(), key=lambda item: (item[0].height == item[0].width,
                                                     item[0].height * item[0].width * item[0].dim))
    samples, seen = [], set()
    for probe, table, dtype in kept:  # one table per grid and per width: several lengths and widths
        grid = (probe.height, probe.width)
        if 8 <= probe.dim <= 64 and min(grid) > 1 and not seen & {probe.dim, grid}:
            seen |= {probe.dim, grid}
            samples.append(_sample(probe.height, probe.width, probe.dim, table, dtype))
    samples = samples[:NEAREST_GRIDS]
    if len(samples) < 2:
        return None
    member, worst, why = fit(samples, declared)
    slots = ", ".join(f"{h}x{w}:d={d}" for h, w, d, _, _ in samples)
    if member is None or worst > 1:
        said = why or f"nearest {member.name()}, max error/tolerance {worst:.3g}"
        return {"name": "none", "message": f"no member of the family fits the tables at {slots} ({said})"}
    fields = member.as_dict()
    if member == declared:
        return {"name": member.name(), "convention": fields,
                "message": f"the tables at {slots} are the declared {declaration.convention_name()} (max "
                           f"error/tolerance {worst:.3g}): what fails is elsewhere"}
    keys = keys_between(declared, member)
    flags, assignments = _keys_text(keys)
    return {"name": member.name(), "convention": fields,
            "message": f"the tables at {slots} are {member.name()} (max error/tolerance {worst:.3g}); if that is "
                       f"intended, declare {flags} ({assignments})"}


def _explains(slip, conv: Sincos2d, kept) -> bool:
    """Whether ``slip``'s table is every kept table within its bound, and differs from the
    declared table beyond the bound on at least one."""
    differs = False
    # another output layout is read in its own shape only: (H, W, D) and row-major (N, D) hold one order
    relaid = slip.member is not None and slip.member.output_layout != conv.output_layout
    for height, width, dim, table, dtype in kept:
        expected = slip.table(conv, height, width, dim)
        if expected.size != table.size or (relaid and _without_batch(table.shape, expected.ndim) != expected.shape):
            return False
        bound = table_tolerance(height, width, dim, slip.member or conv, dtype)
        if not compare(table.reshape(expected.shape), expected, bound).ok:
            return False
        declared = oracle.table(height, width, dim, conv)
        differs = differs or declared.shape != expected.shape or not compare(expected, declared, bound).ok
    return differs


def _without_batch(shape: tuple, ndim: int) -> tuple:
    """``shape`` without the leading axes of size 1 beyond ``ndim`` (a batch of one, as a layout allows)."""
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return tuple(shape)


def _token_rows(conv: Sincos2d, probes, outcomes) -> list:
    """The hint where every token table has ``k`` rows more than its grid's tokens, ``k`` not
    the declared ``extra_tokens`` (a class token's row returned undeclared, or one declared
    and never returned), and the declaration with ``extra_tokens = k`` is every such table
    within its bound; empty otherwise (a table of the declared count, or of no such member)."""
    from posenc_spec.gate.identify.hint import Hint

    if conv.output_layout != "tokens":
        return []
    samples, counts = [], set()
    for probe, outcome in zip(probes, outcomes, strict=True):
        if probe.role != "table" or table_problem(outcome):
            continue
        table = _as_table(outcome.table)
        if table.ndim != 2 or table.shape[1] != probe.dim:
            return []
        counts.add(table.shape[0] - probe.height * probe.width)
        samples.append(_sample(probe.height, probe.width, probe.dim, table, outcome.dtype))
    if len(counts) != 1 or not samples:
        return []
    count = counts.pop()
    if count == conv.extra_tokens or not 0 <= count <= MAX_EXTRA_TOKENS:
        return []
    member = conv.replace(extra_tokens=count)
    if ratio(member, samples) > 1:
        return []
    said = f"every table has {count} row{'s' * (count != 1)} before the grid's tokens where extra_tokens " \
           f"{conv.extra_tokens} is declared (a class token's row)"
    return [Hint(("extra-tokens-count",), said, (("extra_tokens", count),))]


def hints(declaration, probes, outcomes, report) -> list:
    """The slip the run's tables show (each a :class:`~posenc_spec.gate.identify.hint.Hint`):
    those whose tables explain every table the run judged."""
    from posenc_spec.gate.identify.hint import Hint

    conv = declaration.spec.convention
    rows = _token_rows(conv, probes, outcomes)
    if rows:
        return rows
    statuses = {check.name: check.status for check in report.checks}
    kept = [_sample(probe.height, probe.width, probe.dim, outcome.table, outcome.dtype)
            for probe, outcome in zip(probes, outcomes, strict=True)
            if probe.role == "table" and probe.dim <= 64 and not table_problem(outcome)
            and (statuses.get(f"formula[{probe.slot}]") in ("passed", "failed")
                 or statuses.get(f"shape[{probe.slot}]") == "failed")]  # another layout's shape: its values tell
    found = [slip for slip in candidates(conv) if kept and _explains(slip, conv, kept)]
    if not found:
        narrow = (narrow_output(conv, kept) or narrow_angles(conv, kept)) if kept else None
        return [Hint(*narrow)] if narrow else []
    named = f"the tables are the declared {declaration.convention_name()} with "
    if len(found) > 1:  # the tables cannot tell these apart: each is a possible cause
        slips = tuple(dict.fromkeys(slip for candidate in found for slip in candidate.slips))
        return [Hint(slips, named + ", or with ".join(candidate.says for candidate in found))]
    slip = found[0]
    declare = tuple(keys_between(conv, slip.member).items()) if slip.member is not None else ()
    return [Hint(slip.slips, named + slip.says, declare)]


class Identification:
    """``identify`` of a 2-D sincos target, called as its declaration says (``call``: the
    signature, ``init``, ``method``, ``kwargs`` and the family's call keys, each as ``check``
    reads it; a target that takes square grids only is fitted on square ones)."""

    def __init__(self, call, flags: dict):
        from posenc_spec.gate.errors import UsageError

        if "t_max" in flags:
            raise UsageError(f"--t-max is read by --api timesteps, not by --api {call.api}")
        self.call = call

    def run(self, options) -> dict:
        from posenc_spec.gate.declaration import declare
        from posenc_spec.gate.identify import answer_each, call_keys_of

        call = self.call
        square = call.calling.signature in SQUARE_ONLY
        grids = [*SQUARE_FIT_GRIDS, *SQUARE_VALIDATION_GRIDS] if square else [*FIT_GRIDS, *VALIDATION_GRIDS]
        requests = [CallRequest(f"fit-{h}x{w}:d={d}", (h, w, d), (h * w + MAX_EXTRA_TOKENS, d)) for h, w, d in grids]

        def answer_of(target, outcomes):
            return answer(grids, outcomes)

        def declaration_of(target, result):
            return declare({"target": target, "api": API, **call_keys_of(call), **result["keys"],
                            "timeout": call.timeout})

        return answer_each([call.target], requests, call.timeout, options, answer_of, declaration_of,
                           how=call.how(), strict=call.strict)[0]

    def compared_keys(self, flags: dict) -> dict:
        return flags

    def differences(self, answer: dict, declared) -> list[str]:
        from posenc_spec.gate.identify.toml_text import value

        keys = keys_between(declared.spec.convention, Sincos2d(**answer))
        return [f"{key} {value(found)} (declared {value(getattr(declared.spec.convention, _field(key)))})"
                for key, found in keys.items()]

    def slip(self, result: dict, compared):
        """A member one of :func:`~.slips.candidates`' slips makes of the declared convention (the
        meshgrid's swapped axes make mae transformers), or, without a declaration, of a preset
        when the answer is no preset itself."""
        return known_slip(Sincos2d(**result["convention"]),
                          compared.spec.convention if compared is not None else None)

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        from posenc_spec.gate.identify.toml_text import number

        return {"api": API, **{key: number(value) for key, value in result["keys"].items()}}


def known_slip(found: Sincos2d, declared: Sincos2d | None = None):
    """The :class:`~posenc_spec.gate.identify.hint.Hint` of the slip that makes ``found`` of
    ``declared`` (else of a preset, when ``found`` is none of them); None when none does."""
    from posenc_spec.gate.identify.hint import Hint

    if declared is not None:
        nearby = {"the declared convention": declared}
    elif any(not keys_between(preset, found) for preset in PRESETS.values()):
        return None
    else:
        nearby = PRESETS
    for name, member in nearby.items():
        if not keys_between(member, found):
            continue
        for slip in candidates(member):
            if slip.member is not None and not keys_between(slip.member, found):
                return Hint(slip.slips, f"it is {name} with a slip: {slip.says}")
    return None


def _field(key: str) -> str:
    from .keys import FIELDS

    return "row_base" if key == "base" else FIELDS[key]


def answer(grids, outcomes) -> dict:
    """The answer from the outcomes of the fit grids and the validation grids (see the module docstring)."""
    samples, problems = [], []
    for (height, width, dim), outcome in zip(grids, outcomes, strict=False):
        problem = table_problem(outcome)
        if problem:
            problems.append(f"{height}x{width}:d={dim}: {problem}")
        else:
            samples.append(_sample(height, width, dim, outcome.table, outcome.dtype))
    none = {"name": "none", "convention": None, "max_error_ratio": math.inf}
    if problems:
        return {**none, "message": f"none: the calls did not return tables ({problems[0]})"}
    fitted, validation = samples[:len(FIT_GRIDS)], samples[len(FIT_GRIDS):]
    member, worst, why = fit(fitted)
    if member is None:
        return {**none, "message": f"none: {why}"}
    keys = convention_keys(member)
    found = {"name": member.name(), "convention": member.as_dict(), "keys": keys}
    if worst > 1:
        return {**none, "nearest": {**found, "max_error_ratio": worst},
                "message": f"none: the nearest member, {member.name()}, misses the fitted tables by {worst:.3g} "
                           "times their bound"}
    checked = ratio(member, validation)
    if checked > 1:
        return {**none, "nearest": {**found, "max_error_ratio": checked},
                "message": f"none: {member.name()} fits the fitted tables but misses "
                           f"{', '.join(f'{h}x{w}:d={d}' for h, w, d, _, _ in validation)} by {checked:.3g} times "
                           "their bound"}
    flags, assignments = _keys_text(keys)
    return {**found, "max_error_ratio": max(worst, checked),
            "message": f"{member.name()}: declare {flags} ({assignments}); max error/tolerance "
                       f"{max(worst, checked):.3g} on {len(samples)} grids"}
