"""Regression checking through the gate: record a target's calls, replay them, compare in ULPs.

The bridge between the gate (calls, outcomes, check results) and
:mod:`posenc_spec.regression` (recorded arrays, snapshot files, ULP comparison), which
knows nothing of the gate. :func:`snapshot_requests` is the grid a snapshot records (the
gate's default grid for the API: every size, the odd widths and the degenerate ones, the
float and int64 timesteps); :func:`record` turns an outcome into a
:class:`~posenc_spec.regression.RecordedCall`; :func:`replay_requests` rebuilds the exact
calls of a snapshot; :func:`replay_diffs` compares their replies with the record, and
:func:`judge_regression` is the ``regression`` check (``plot --against`` draws what
:func:`replay_diffs` found).

Which comparison applies (:func:`regression_rule`):

- ``--max-ulp N`` given: every element within N ULP, wherever the snapshot was recorded.
- recorded in the same numeric environment
  (:func:`posenc_spec.environment.numeric_environment`): bit for bit.
- recorded in another one, with a declared convention: each element of the replay within
  the sum of the convention's per-element bounds (:mod:`posenc_spec.tolerance`, as the
  ``formula`` check computes them) of the recorded value and of the new one, since both
  must be correct; the ULP distances are still reported, and a warning names the
  difference of environment. A call the convention's grid does not make (another
  ``--max-positions``, an odd width under ``odd=error``) has no bound and stays bit for bit.
- recorded in another one, with no convention (a learned table, a custom RoPE): there is no
  tolerance to use, so bit for bit, and the message says how the environments differ and
  what to do (declare the convention, give ``--max-ulp``, or record on this machine).

A snapshot of format 1 records no numeric environment: it counts as another one.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from posenc_spec.environment import numeric_differences, numeric_environment
from posenc_spec.regression import RecordedArray, RecordedCall, Snapshot, SnapshotError
from posenc_spec.regression.compare import compare_call, input_difference
from posenc_spec.regression.ulp import bfloat16_bits, bfloat16_values

from .calls import ArrayArg, CallRequest, Outcome
from .judge import failed, passed

CHECK_ID = "regression"
FORMAT_1 = "the snapshot records no numeric environment (format 1)"


def _label(probe) -> str:
    return getattr(probe, "label", None) or probe.slot


def snapshot_requests(probes) -> list[CallRequest]:
    """Every call of a grid once (the determinism repeat is the same call), labelled by its
    slot, or by the ``label`` its family gives it."""
    return [probe.request(_label(probe)) for probe in probes if probe.role != "repeat"]


def _bits(array: np.ndarray, dtype: str) -> np.ndarray:
    """The array as a snapshot holds it: bfloat16 (carried as float32) back to its uint16 bits."""
    if dtype == "bfloat16":
        return bfloat16_bits(array)
    return np.array(array, dtype=np.dtype(dtype), copy=True)


def _recorded_arg(arg):
    if isinstance(arg, ArrayArg):
        return RecordedArray(_bits(arg.values, arg.dtype), arg.dtype, arg.container)
    return arg


def record(request: CallRequest, outcome: Outcome) -> RecordedCall:
    """What a call did, as a snapshot records it. A call that did not return numbers is
    recorded as raising: the exception type, or ``GateFailure`` for an exit, a crash, a
    hang or a result that is not numbers (the snapshot cannot hold it)."""
    args = tuple(_recorded_arg(arg) for arg in request.args)
    if outcome.ok:
        outputs = tuple(RecordedArray(_bits(array, dtype), dtype, container)
                        for array, dtype, container in zip(outcome.arrays, outcome.dtypes, outcome.containers,
                                                           strict=True))
        return RecordedCall(request.label, args, outputs)
    raised = outcome.exception if outcome.status == "raised" and outcome.exception else "GateFailure"
    if not all(part.isidentifier() for part in raised.split(".")):
        raised = "GateFailure"
    return RecordedCall(request.label, args, None, raised)


def _replayed_arg(arg):
    if not isinstance(arg, RecordedArray):
        return arg
    values = arg.values
    if arg.dtype == "bfloat16":
        values = bfloat16_values(values)
    return ArrayArg(values, arg.dtype, arg.container, "argument")


def replay_requests(snapshot: Snapshot) -> list[CallRequest]:
    """The recorded calls, argument for argument. A call may return what it returned before
    (a call recorded as raising, as much as the largest recorded output); the reply is read
    only up to that size."""
    outputs = [output for call in snapshot.calls for output in call.outputs or ()]
    overall = max((output.values.size for output in outputs), default=1)
    most_items = max((len(call.outputs or ()) for call in snapshot.calls), default=1)
    requests = []
    for call in snapshot.calls:
        largest = max((output.values.size for output in call.outputs), default=1) if call.outputs else overall
        items = len(call.outputs) if call.outputs else most_items
        requests.append(CallRequest(call.label, tuple(_replayed_arg(arg) for arg in call.args), (largest,),
                                    max_items=max(items, 1), allow_complex=True))
    return requests


def replay_diffs(snapshot: Snapshot, requests: list[CallRequest], outcomes: list[Outcome], max_ulp: int):
    """Each recorded call, its replay recorded as :func:`record` records it, and the two
    compared in ULPs: ``(call, replayed, diff)`` in the snapshot's order, one at a time.
    :class:`SnapshotError` when a replay is not its recorded call (it cannot be, unless
    :func:`replay_requests` rebuilt it wrongly)."""
    for call, request, outcome in zip(snapshot.calls, requests, outcomes, strict=True):
        replayed = record(request, outcome)
        try:
            diff = compare_call(call, replayed, max_ulp)
        except SnapshotError as error:
            raise SnapshotError(f"the replay of {call.label} is not the recorded call: {error}") from None
        yield call, replayed, diff


@dataclasses.dataclass(frozen=True)
class Rule:
    """Which comparison the ``regression`` check applies (see the module docstring):
    ``kind`` is ``exact``, ``max-ulp`` or ``tolerance``; ``differences`` say how the
    numeric environment differs from the snapshot's (empty: the same)."""

    kind: str
    max_ulp: int = 0
    differences: tuple[str, ...] = ()

    def describe(self, convention: str | None = None) -> str:
        """The comparison in words (``convention``: the declared one's name, said in full)."""
        if self.kind == "max-ulp":
            return f"within {self.max_ulp} ULP (--max-ulp)"
        if self.kind == "tolerance":
            if convention is None:
                return "within the declared convention's tolerance"
            return f"within the tolerance of the declared convention ({convention}; the recorded and the new " \
                   "value's bounds added)"
        return "bit for bit" + ("" if self.differences else " (recorded in this numeric environment)")

    def advice(self) -> str:
        """For an exact comparison across environments: what the user can do."""
        return (f"recorded in another numeric environment ({'; '.join(self.differences)}), where the same code may "
                "give other bits: declare the convention (its tolerance then applies), give --max-ulp N, or record "
                "the snapshot on this machine")


def regression_rule(declaration, snapshot: Snapshot) -> Rule:
    """The comparison for ``declaration`` (its ``max_ulp_given``, whether a convention is
    declared) against ``snapshot``, here."""
    recorded = snapshot.meta["environment"]
    if "cpu_flags" not in recorded:
        differences = (FORMAT_1,)
    else:
        differences = tuple(numeric_differences(recorded, numeric_environment()))
    if declaration.max_ulp_given:
        return Rule("max-ulp", declaration.max_ulp, differences)
    if differences and declaration.formula:
        return Rule("tolerance", 0, differences)
    return Rule("exact", 0, differences)


def calls_within(diffs, max_ulp: int) -> str:
    """``"N of M recorded calls within K ULP"``."""
    within = sum(diff.passed for diff in diffs)
    return f"{within} of {len(diffs)} recorded calls within {max_ulp} ULP"


def judge_regression(declaration, snapshot: Snapshot, outcomes: list[Outcome], requests: list[CallRequest],
                     probes=()):
    """The ``regression`` check, the per-call comparisons (for the JSON report; None after
    the last one when a replay is not its recorded call) and the warnings, under
    :func:`regression_rule`. ``probes``: the grid of the declared convention, whose bounds
    the tolerance rule uses."""
    rule = regression_rule(declaration, snapshot)
    bounds = _Bounds(declaration, probes) if rule.kind == "tolerance" else None
    # An exact rule under a declared convention still measures a change in the convention's
    # units, so that a change within rounding says so (near zero a ULP is tiny: millions of
    # them can be far inside the bound); the verdict stays exact.
    measured = _Bounds(declaration, probes) if rule.kind != "tolerance" and declaration.formula else None
    diffs, ratios = [], []
    try:
        for call, _, diff in replay_diffs(snapshot, requests, outcomes, rule.max_ulp):
            if measured is not None and not diff.passed:
                ratios.append(measured.judge(call, outcomes[len(diffs)], diff).bound_ratio)
            diffs.append(diff if bounds is None else bounds.judge(call, outcomes[len(diffs)], diff))
    except SnapshotError as error:
        return failed(CHECK_ID, str(error)), [*diffs, None], []
    failing = [diff for diff in diffs if not diff.passed]
    shown = failing[0] if failing else max(diffs, key=lambda diff: diff.max_ulp, default=None)
    within = sum(diff.passed for diff in diffs)
    summary = f"{within} of {len(diffs)} recorded calls {rule.describe(declaration.convention_name())}"
    if bounds is not None and bounds.unbounded:
        summary += f" ({bounds.unbounded} bit for bit: not on the convention's grid)"
    detail = f"; worst: {shown.describe()}" if shown is not None else ""
    detail += _in_convention_units(ratios) if failing else ""
    warnings = []
    if rule.differences and (rule.kind != "exact" or not failing):
        warnings.append(f"regression: the snapshot was recorded in another numeric environment "
                        f"({'; '.join(rule.differences)}); compared {rule.describe()}")
    if failing:
        advice = f"; {rule.advice()}" if rule.kind == "exact" and rule.differences else ""
        return failed(CHECK_ID, summary + detail + advice), diffs, warnings
    return passed(CHECK_ID, summary + detail), diffs, warnings


def _in_convention_units(ratios: list) -> str:
    """A failing exact comparison in the declared convention's units (empty where a call had no bound)."""
    known = [ratio for ratio in ratios if ratio is not None]  # None: raised, another shape, or off the grid
    if not known:
        return ""
    worst = max(known)
    if worst > 1.0:
        return f"; in the declared convention's units the largest change is {worst:.3g} times an element's bound"
    if len(known) < len(ratios):
        return (f"; in the declared convention's units the values that moved stay within rounding ({worst:.3g} of "
                "an element's bound at most); the other changes are named above")
    return (f"; in the declared convention's units the largest change is {worst:.3g} of an element's bound: "
            "within rounding (record the snapshot again to accept it, or give --max-ulp N)")


class _Bounds:
    """The tolerance rule: a replayed call against its record within the sum of the two
    values' bounds under the declared convention (the ``formula`` check's bounds)."""

    def __init__(self, declaration, probes):
        self.declaration = declaration
        self.probes = {_label(probe): probe for probe in probes if probe.role != "repeat"}
        self.unbounded = 0
        self._pieces = declaration.family.regression_bounds(declaration)

    def judge(self, call: RecordedCall, outcome: Outcome, diff):
        """``diff`` (an exact comparison) judged again within the bounds where it failed."""
        probe = self._probe(call)
        if probe is None:
            self.unbounded += call.outputs is not None
            return diff
        if diff.passed or diff.problem or any(output.problem for output in diff.outputs):
            return diff  # raised, or another shape, dtype or number of outputs: no tolerance covers it
        old = Outcome("ok", "recorded", [_carried(out) for out in call.outputs], [out.dtype for out in call.outputs],
                      [out.container for out in call.outputs], is_tuple=outcome.is_tuple)
        old_pieces = self._pieces(probe, old)
        new_pieces = self._pieces(probe, outcome) if old_pieces is not None else None
        if new_pieces is None:
            return diff
        ratio = 0.0
        for (before, bound_before), (after, bound_after) in zip(old_pieces, new_pieces, strict=True):
            ratio = max(ratio, _worst_ratio(before, after, bound_before + bound_after))
        within = ratio <= 1.0
        outputs = tuple(dataclasses.replace(output, passed=within or output.max_ulp == 0) for output in diff.outputs)
        return dataclasses.replace(diff, passed=within, outputs=outputs, bound_ratio=ratio)

    def _probe(self, call: RecordedCall):
        """The convention's call of the same label and arguments, or None."""
        probe = self.probes.get(call.label)
        if probe is None:
            return None
        args = tuple(_recorded_arg(arg) for arg in probe.request(call.label).args)
        return None if input_difference(call, RecordedCall(call.label, args, None, "Unused")) else probe


def _carried(array: RecordedArray) -> np.ndarray:
    """A recorded output as an outcome carries it (bfloat16 as the float32 values)."""
    return bfloat16_values(array.values) if array.dtype == "bfloat16" else array.values


def _worst_ratio(before: np.ndarray, after: np.ndarray, bound: np.ndarray) -> float:
    """The largest ``|after - before| / bound``; NaN at the same place in both is no error,
    NaN in one of them an infinite one."""
    from posenc_spec.tolerance import ratios

    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if before.shape != after.shape:
        return np.inf
    with np.errstate(all="ignore"):
        error = np.abs(after - before)
    error[np.isnan(before) & np.isnan(after)] = 0.0
    error[np.isinf(before) & (before == after)] = 0.0
    return float(ratios(error, np.broadcast_to(bound, error.shape)).max(initial=0.0))
