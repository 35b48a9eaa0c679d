"""The verdicts on what one call of the grid (:mod:`.grid`) returned, each named by its check id.

:func:`judge_call` takes the buckets a probe's call returned (as an array) and gives every check
of that probe but ``call[S]``, whose verdict is the caller's (the call ran, or it raised);
:func:`judge_repeat` gives ``determinism``. A result of the wrong shape fails every check
of its slot with one message; nothing else is assumed about it.

``-2**(b-1)`` (the ``int-min`` calls) is no input a caller can pass (:func:`.grid.unreachable`):
a wrong bucket there, or a call that raises or crashes on it, is a note, never a failure.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from posenc_spec.results import CheckResult, noted

from . import properties
from .conventions import BucketConvention
from .grid import Probe, unreachable
from .tolerance import DEFAULT_LOG_DTYPE

_STRUCTURAL = {
    "exact-small": properties.check_exact_small,
    "halves": properties.check_halves,
    "monotone": properties.check_monotone,
    "saturation": properties.check_saturation,
}


def _named(result: CheckResult, check_id: str) -> CheckResult:
    return dataclasses.replace(result, name=check_id)


# What a call on an input no caller passes may do and be noted, not failed: raise, or take its
# process down (a reply that breaks the protocol, a limit or a hang are the gate's concern, and fail).
NOTED_OUTCOMES = ("raised", "exit", "died")


def _unreachable(result: CheckResult, probe: Probe) -> CheckResult:
    """A verdict at ``-2**(b-1)``: a failure there is a note (see the module docstring)."""
    if result.status != "failed":
        return result
    return noted(result.name, f"{result.message}; {unreachable(probe.dtype)}", result.worst)


def judge_call(probe: Probe, buckets, convention: BucketConvention, log_dtype=DEFAULT_LOG_DTYPE) -> list[CheckResult]:
    """The verdicts of :meth:`Probe.check_ids` but ``call[S]`` (and ``determinism``)."""
    values = np.asarray(buckets)
    relative = probe.relative_positions(convention)
    ids = [check_id for check_id in probe.check_ids() if not check_id.startswith("call[")]
    if probe.role == "repeat":
        raise ValueError("a repeat call is judged by judge_repeat, not judge_call")
    if values.shape != relative.shape:
        message = f"returned shape {values.shape} where the relative positions have shape {relative.shape}"
        verdicts = [CheckResult(check_id, "failed", message) for check_id in ids]
        return [_unreachable(verdict, probe) for verdict in verdicts] if probe.role == "int-min" else verdicts
    if probe.role == "extremes":
        return [_named(properties.check_formula(values, convention, relative, log_dtype), ids[-1])]
    if probe.role == "int-min":
        return [_unreachable(_named(properties.check_formula(values, convention, relative, log_dtype), ids[-1]),
                             probe)]
    if values.dtype.kind not in "iu":
        integer = properties.check_integer(values)
        rest = f"not judged further: {integer.message}"
        return [_named(integer, ids[0]), *(CheckResult(check_id, "failed", rest) for check_id in ids[1:])]
    verdicts = {
        "integer": properties.check_integer(values),
        "range": properties.check_range(values, convention, relative),
        "formula": properties.check_formula(values, convention, relative, log_dtype),
        **{name: check(values, convention, relative) for name, check in _STRUCTURAL.items()},
    }
    if probe.kind == "table":
        verdicts["relative-only"] = properties.check_relative_only(values)
    return [_named(verdicts[check_id.partition("[")[0]], check_id) for check_id in ids]


def judge_repeat(first, again) -> CheckResult:
    """``determinism``: the repeated call returned the same buckets, element for element."""
    first, again = np.asarray(first), np.asarray(again)
    if first.shape != again.shape:
        return CheckResult("determinism", "failed", f"shape {again.shape} on the repeat, {first.shape} before")
    differing = np.flatnonzero(first != again)
    if differing.size:
        flat = int(differing[0])
        return CheckResult("determinism", "failed", f"{differing.size} buckets differ on the repeat; the first, "
                                                    f"element {flat}: {first.flat[flat]} then {again.flat[flat]}")
    return CheckResult("determinism", "passed", f"the same {first.size} buckets again")


class BucketJudge:
    """The gate's judge of one T5-bucket target, call by call (``results``: the engine's
    :class:`~posenc_spec.gate.judge.Results`); ``spec`` its :class:`~.spec.BucketSpec`."""

    def __init__(self, spec, results):
        self.spec, self.results = spec, results
        self.calls: list = []  # (probe, outcome) of every call, for the nearest member

    def judge(self, probe: Probe, outcome) -> bool:
        """Judge one call; whether it returned an array (the determinism repeat compares it)."""
        if probe.role == "sequence":
            self.results.merge(self._decode_step(probe, outcome))
            return False
        ids = probe.check_ids()
        self.calls.append((probe, outcome))
        if not outcome.ok:
            if outcome.status == "not-run":
                self.results.add(CheckResult(ids[0], "skipped", outcome.message))
            elif probe.role == "int-min" and outcome.status in NOTED_OUTCOMES:
                self.results.add(noted(ids[0], f"{probe.slot}: {outcome.message}; {unreachable(probe.dtype)}"))
            else:
                self.results.add(CheckResult(ids[0], "failed", f"{probe.slot}: {outcome.message}"))
            self.results.not_run(ids[1:], ids[0], f"the call for {probe.slot} returned nothing to check")
            return False
        self.results.add(CheckResult(ids[0], "passed", f"returned {outcome.message}"))
        values = outcome.table
        for result in judge_call(probe, values, self.spec.convention, self.spec.log_dtype):
            self.results.add(result)
        return True

    def _decode_step(self, probe: Probe, outcome) -> CheckResult:
        """``decode`` of one call of the sequence: the call's buckets exact (its own words first)."""
        if outcome.status == "not-run":
            return CheckResult("decode", "skipped", f"{probe.slot}: {outcome.message}")
        if not outcome.ok:
            return CheckResult("decode", "failed", f"{probe.slot}: {outcome.message}")
        values = outcome.table
        if values.dtype.kind not in "iu" or values.shape != probe.result_shape():
            return CheckResult("decode", "failed", f"{probe.slot}: returned {values.dtype} {values.shape}, "
                                                   f"not integer buckets of shape {probe.result_shape()}")
        result = properties.check_formula(values, self.spec.convention, probe.relative_positions(self.spec.convention),
                                          self.spec.log_dtype)
        return dataclasses.replace(result, name="decode", message=f"{probe.slot} (the module reused, one query "
                                                                  f"after a prefill): {result.message}")

    def kept_table(self):
        """The widest call's buckets, for the report's bucket map (``check --plots``): a
        :class:`~posenc_spec.gate.report.KeptTable` whose ``positions`` are the relative
        positions the call stood for, each once, sorted (None: no call returned integer buckets)."""
        from posenc_spec.gate.report import KeptTable

        from .plot import widest_call

        drawn = widest_call(self.spec, self.calls)
        if drawn is None:
            return None
        probe, relative, buckets = drawn
        return KeptTable(probe.slot, relative, buckets, "int64")
