"""``identify`` of an ALiBi target: which member of the family its values are.

The target is called as its declaration says (``signature``, ``init``, ``method``,
``kwargs``) at the head counts of :data:`FIT_HEADS` (and the model's ``num_heads``):
each count's small calls, and at one head the long calls, where the precision of the
product shows. From those values, in order:

1. partial ALiBi: heads that add exactly nothing after the biased ones, the same number of
   biased heads at every count that has more (``alibi_heads``);
2. the slope rule and ``alibi_bias_max``: each head's slope, measured from its steps between
   neighbouring keys (or returned, for ``alibi-slopes``), against every rule and every B of
   :data:`BIAS_MAXES` (B also read off one head's slope, ``2 ** -B``);
3. the bias: the first member of :func:`bias_candidates` under which every call passes
   ``formula`` (the form, its region, where queries sit, the padding, a constant per row,
   then the compute dtype).

The answer is then checked by ``check`` on its whole grid, so that what ``identify`` names,
``check`` accepts: "check accepts it" only where no check fails (its notes, findings beyond
what the declaration promises, are named and fail nothing); the member stands, with
``check`` "does-not-conform", where only checks that say nothing about the convention fail
(:data:`~posenc_spec.gate.identify.NOT_THE_CONVENTION`); otherwise the answer is "none", with
the fitted member as the nearest and the first check that fails.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import integer

from .conventions import BIAS_FORMS, KEY_FORMS, PRESETS, AlibiConvention
from .grid import AlibiProbe, calls
from .keys import BIAS_API, BIAS_FIELDS, FIELD_KEYS
from .slips import Reading, fits, measured_slopes

FIT_HEADS = (1, 2, 3, 5, 8, 12, 71, 112)
# The slip each field of an answer that differs from the nearby member names ((key, value) first).
FIELD_SLIPS = {("slope_rule", "geometric"): "alibi-geometric-slopes", "slope_rule": "alibi-slope-rule",
               "alibi_bias_max": "alibi-bias-max", "alibi_heads": "alibi-partial-heads",
               "bias_form": "alibi-form", "query_positions": "alibi-queries-first", "key_positions": "alibi-padding",
               ("bias_dtype", "bfloat16"): "alibi-bfloat16"}
BIAS_MAXES = (8.0, 16.0, 4.0, 1.0, 2.0, 12.0, 32.0)
# Relative: a measured slope names a rule when it is this close. Loose, because a bias rounded to
# bfloat16 measures its slopes from rounded steps; formula, then check, decide after.
SLOPE_MATCH = 2**-5
LEFT_PADDED = (0,) * 3 + (1,) * 13


def _probes(signature: str, heads: tuple[int, ...]) -> list[AlibiProbe]:
    """Each head count's sweep, and the long calls at the first head count."""
    conv = PRESETS["bloom"] if signature == "mask-heads-dtype" else PRESETS["paper"]
    made = []
    for count in heads:
        for call in calls(signature, count, conv, deep=count == heads[0]):
            made.append(AlibiProbe(call.size, "table", call, call.slot, signature=signature))
    return made


def _biased_count(readings: list[Reading], conv: AlibiConvention) -> int | None:
    """``k`` when, at every count of more than ``k`` heads, the first ``k`` heads carry a bias
    and the others add exactly nothing (None: every head carries a bias)."""
    prefixes = []  # (heads, how many leading heads carry a bias)
    for reading in readings:
        heads = reading.probe.call.num_heads
        values = reading.values(conv).reshape(heads, -1)
        biased = np.flatnonzero(values.any(axis=1))
        if values.shape[1] < 2 or not biased.size:
            continue
        if biased.size != int(biased[-1]) + 1:
            return None  # a head without a bias between biased ones: no partial ALiBi
        prefixes.append((heads, biased.size))
    fewer = {count for heads, count in prefixes if count < heads}
    if len(fewer) != 1:
        return None
    count = fewer.pop()
    return count if all(biased == count for heads, biased in prefixes if heads > count) else None


def _slope_candidates(readings: list[Reading], conv: AlibiConvention) -> list[AlibiConvention]:
    """The slope rules and B under which every measured slope matches, most likely first."""
    measured = [(reading, measured_slopes(reading, conv)) for reading in readings
                if reading.dtype in ("float32", "float64")]  # a narrow dtype's steps are its rounding
    measured = [(reading, slopes) for reading, slopes in measured if slopes is not None]
    maxes = list(BIAS_MAXES)
    for reading, slopes in measured:
        first = abs(float(slopes[0])) if slopes.size else 0.0
        if reading.probe.call.num_heads == 1 and first > 0:
            read_off = round(-math.log2(first), 6)
            if 0 < read_off <= 64 and read_off not in maxes:
                maxes.insert(0, read_off)
    found = []
    for rule in ("paper", "geometric"):
        for bias_max in maxes:
            candidate = conv.replace(slope_rule=rule, alibi_bias_max=bias_max)
            if all(_slopes_match(candidate, reading, slopes) for reading, slopes in measured):
                found.append(candidate)
    return found


def _slopes_match(conv: AlibiConvention, reading: Reading, slopes: np.ndarray) -> bool:
    from . import oracle

    heads = reading.probe.call.num_heads
    count = conv.biased_heads(heads) if conv.alibi_heads is None or conv.alibi_heads <= heads else None
    if count is None:
        return True
    expected = oracle.slopes(heads, conv)[:count]
    return bool(np.all(np.abs(np.abs(slopes[:count]) - expected) <= SLOPE_MATCH * expected))


def bias_candidates(conv: AlibiConvention, signature: str) -> list[AlibiConvention]:
    """The members of the bias a target may compute, under ``conv``'s slopes, most likely first:
    the exact forms before those up to a constant per row, every key judged before only the
    causal ones (so that a symmetric bias is not taken for a causal one), the queries last
    before first, float32 arithmetic before bfloat16 and float16."""
    forms = [("key", "mask-cumsum"), ("key", "index"), ("key-last", "index")] if signature == "mask-heads-dtype" \
        else [(form, "index") for form in BIAS_FORMS]
    made = []
    for row_constant in (False, True):
        for region in ("full", "causal"):
            for form, positions in forms:
                key_only = form in KEY_FORMS
                if form == "symmetric" and (row_constant or region == "causal") or key_only and region == "full":
                    continue
                for queries in ("last",) if key_only else ("last", "first"):
                    made += [conv.replace(bias_form=form, key_positions=positions, bias_region=region,
                                          query_positions=queries, up_to_row_constant=row_constant, bias_dtype=dtype)
                             for dtype in (None, "bfloat16", "float16")]
    return made


def _slip_of(key: str, value) -> str | None:
    """The slip a field of an answer that differs from the nearby member's names (None: none known)."""
    return FIELD_SLIPS.get((key, value), FIELD_SLIPS.get(key))


def _preset(conv: AlibiConvention) -> str:
    """The preset ``conv`` differs least from."""
    fields = conv.as_dict()
    return min(PRESETS, key=lambda name: sum(PRESETS[name].as_dict()[key] != value for key, value in fields.items()))


def fit(readings: list[Reading], signature: str) -> tuple[AlibiConvention | None, str]:
    """The member every reading fits, and how it was found (or None, and why)."""
    base = PRESETS["bloom"] if signature == "mask-heads-dtype" else PRESETS["paper"]
    if not readings:
        return None, "no call returned values"
    biased = _biased_count(readings, base)
    if biased is not None:  # partial ALiBi: the counts below it are not the model's
        base = base.replace(alibi_heads=biased)
        readings = [reading for reading in readings if reading.probe.call.num_heads >= biased]
    slopes_only = signature == "heads"
    for candidate in _slope_candidates(readings, base):
        if slopes_only:
            if all(fits(candidate, reading) for reading in readings):
                return candidate, "the slopes"
            continue
        for member in bias_candidates(candidate, signature):
            if all(fits(member, reading) for reading in readings):
                return member, "the slopes and the bias"
    return None, ("no slope rule and B of the family give the slopes its calls show" if slopes_only
                  else "no member of the family gives every call's bias")


class Identification:
    """``identify`` of an ALiBi target (:class:`~posenc_spec.gate.family.Identification`)."""

    def __init__(self, call, flags: dict):
        from posenc_spec.gate.declaration import declare

        self.call, self.flags = call, dict(flags)
        heads = flags.get("num_heads")
        self.heads = integer("--num-heads", heads, maximum=4096) if heads is not None else None
        keys = {"target": call.target, "api": call.api, "max_positions": call.max_positions, "timeout": call.timeout,
                **{key: flags[key] for key in ("signature", "init", "method", "kwargs") if key in flags}}
        if call.api == BIAS_API and keys.get("signature") == "mask-heads-dtype":
            keys["convention"] = "bloom"  # what the signature's one row needs to be declared at all
        self.calling = declare(keys, flags=True)
        if self.calling.max_positions is not None:
            raise UsageError("--max-positions: identify calls the ALiBi grid's own lengths (check takes it)")

    @property
    def signature(self) -> str:
        return self.calling.spec.signature

    def _heads(self) -> tuple[int, ...]:
        return FIT_HEADS + ((self.heads,) if self.heads is not None and self.heads not in FIT_HEADS else ())

    def run(self, options) -> dict:
        from posenc_spec.gate.identify import IdentifyError
        from posenc_spec.gate.judge import Results
        from posenc_spec.gate.runner import run_target

        from .judge import AlibiJudge

        probes = _probes(self.signature, self._heads())
        run = run_target(self.calling, [probe.request() for probe in probes], options)
        if not run.imported:
            raise IdentifyError(run.import_message)
        reader = AlibiJudge(self.calling.spec.convention, Results())
        readings = []
        for probe, outcome in zip(probes, run.outcomes, strict=False):
            _, dtype, problem = reader.values(probe, outcome)
            if not problem:
                readings.append(Reading(probe, outcome.table, dtype))
        found, how = fit(readings, self.signature)
        if found is None:
            return {"name": "none", "convention": None, "max_error_ratio": math.inf, "nearest": None,
                    "message": f"none: {how} ({len(readings)} of {len(probes)} calls returned values)"}
        answer = {"name": found.name(), "convention": self._fields(found), "max_error_ratio": 0.0, "nearest": None,
                  "message": f"{found.name()}: {how} of {len(readings)} calls fit it"}
        return self._checked(answer, found, options)

    def _fields(self, found: AlibiConvention) -> dict:
        fields = {key: value for key, value in found.as_dict().items()
                  if not (self.signature == "heads" and key in BIAS_FIELDS)}
        return {**fields, "preset": _preset(found)}

    def answer_declaration(self, fields: dict):
        from posenc_spec.gate.declaration import declare

        return declare({"target": self.call.target, "api": self.call.api, "timeout": self.call.timeout,
                        **self.entry_keys({"convention": fields}, {})})

    def _checked(self, answer: dict, found: AlibiConvention, options) -> dict:
        """The answer after ``check`` judged it on its whole grid (see the module docstring)."""
        from posenc_spec.gate.engine import check_many
        from posenc_spec.gate.identify import NOT_THE_CONVENTION

        declaration = self.answer_declaration(answer["convention"])
        report = check_many([dataclasses.replace(declaration, strict=self.call.strict)], options)[0]
        notes = [check.name for check in report.checks if check.status == "noted"]
        noted = f" (notes, no failure: {', '.join(notes)})" if notes else ""
        failed = [check for check in report.failures() if check.name not in NOT_THE_CONVENTION]
        if not report.failures():
            return {**answer, "check": "conforms", "message": f"{answer['message']}; check accepts it on its whole "
                                                              f"grid{noted}"}
        if not failed:
            others = ", ".join(check.name for check in report.failures())
            return {**answer, "check": "does-not-conform", "message": f"{answer['message']}; check also fails "
                                                                      f"{others}, which no convention changes"}
        first = failed[0]
        worst = first.worst.ratio if first.worst is not None else math.inf
        nearest = {"name": answer["name"], "convention": answer["convention"], "max_error_ratio": worst}
        return {**answer, "name": "none", "convention": None, "max_error_ratio": worst, "nearest": nearest,
                "check": "does-not-conform",
                "message": f"none: {answer['name']} fits the calls identify made, but check rejects it on its whole "
                           f"grid (first {first.name}: {first.message})"}

    # -- the answer as declared keys ------------------------------------------------------

    def compared_keys(self, flags: dict) -> dict:
        return {**flags, **{key: self.flags[key] for key in ("signature", "init", "method", "kwargs",
                                                             "num_heads") if key in self.flags}}

    def differences(self, answer: dict, declared) -> list[str]:
        from posenc_spec.gate.identify.toml_text import value

        conv = declared.spec.convention
        return [f"{key} {value(answer[field])} where {value(getattr(conv, field))} is declared"
                for field, key in FIELD_KEYS.items() if field in answer and answer[field] != getattr(conv, field)]

    def slip(self, result: dict, compared):
        """Slopes of one geometric sequence at head counts that are not powers of two (the
        counts identify calls include such) are the paper's rule with the slip, unless the
        declaration says geometric; with a declaration, each other field that differs is its slip."""
        from posenc_spec.gate.identify.hint import Hint
        from posenc_spec.gate.identify.toml_text import value

        fields = result["convention"]
        declared = compared.spec.convention if compared is not None else None
        differs = [key for key in FIELD_KEYS if key in fields and _slip_of(key, fields[key])
                   and (fields[key] != getattr(declared, key) if declared is not None else
                        key == "slope_rule" and fields[key] == "geometric")]
        if not differs:
            return None
        slips = tuple(dict.fromkeys(_slip_of(key, fields[key]) for key in differs))
        member = "the declared convention" if declared is not None else "the paper's slopes"
        said = "; ".join(f"{FIELD_KEYS[key]} {value(fields[key])}" for key in differs)
        return Hint(slips, f"it is {member} with a slip ({said}): the heads' slopes at counts that are not powers "
                           "of two show it" if differs == ["slope_rule"] else f"it is {member} with a slip ({said})")

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        """``convention`` and the keys of the fields that differ from it, with how the target is called."""
        fields = result["convention"]
        preset = fields.get("preset") or _preset(AlibiConvention(**{key: fields[key] for key in FIELD_KEYS
                                                                     if key in fields}))
        keys = {"api": self.call.api}
        calling = self.calling.calling
        if self.call.api == BIAS_API and calling.signature != "heads-length":
            keys["signature"] = calling.signature
        if calling.init is not None:
            keys["init"] = dict(calling.init)
        if calling.method is not None:
            keys["method"] = calling.method
        if calling.kwargs:
            keys["kwargs"] = dict(calling.kwargs)
        if preset != "paper" or "convention" in defaults:
            keys["convention"] = preset
        for field, key in FIELD_KEYS.items():
            if field in fields and fields[field] != getattr(PRESETS[preset], field):
                keys[key] = fields[field]
        if self.heads is not None:
            keys["num_heads"] = self.heads
        return keys

