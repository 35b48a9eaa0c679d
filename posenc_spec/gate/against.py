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
"""

from __future__ import annotations

import numpy as np

from posenc_spec.regression import RecordedArray, RecordedCall, Snapshot, SnapshotError
from posenc_spec.regression.compare import compare_call
from posenc_spec.regression.ulp import bfloat16_bits, bfloat16_values

from .calls import ArrayArg, CallRequest, Outcome
from .judge import failed, passed

CHECK_ID = "regression"


def snapshot_requests(probes) -> list[CallRequest]:
    """Every call of a grid once (the determinism repeat is the same call), labelled by its
    slot, or by its check id for the sinusoidal odd and degenerate calls."""
    return [probe.request(probe.check_id if probe.role in ("odd", "degenerate") else probe.slot)
            for probe in probes if probe.role != "repeat"]


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


def calls_within(diffs, max_ulp: int) -> str:
    """``"N of M recorded calls within K ULP"``."""
    within = sum(diff.passed for diff in diffs)
    return f"{within} of {len(diffs)} recorded calls within {max_ulp} ULP"


def judge_regression(snapshot: Snapshot, outcomes: list[Outcome], requests: list[CallRequest], max_ulp: int):
    """The ``regression`` check and the per-call comparisons (for the JSON report; None
    after the last one when a replay is not its recorded call)."""
    diffs = []
    try:
        for _, _, diff in replay_diffs(snapshot, requests, outcomes, max_ulp):
            diffs.append(diff)
    except SnapshotError as error:
        return failed(CHECK_ID, str(error)), [*diffs, None]
    failing = [diff for diff in diffs if not diff.passed]
    shown = failing[0] if failing else max(diffs, key=lambda diff: diff.max_ulp, default=None)
    summary = calls_within(diffs, max_ulp)
    detail = f"; worst: {shown.describe()}" if shown is not None else ""
    if failing:
        return failed(CHECK_ID, summary + detail), diffs
    return passed(CHECK_ID, summary + detail), diffs
