"""The gate's side of the channel: call requests encoded, replies read back.

:func:`encode_args` turns a call's arguments into a header and raw payloads (bfloat16 as
its uint16 bits); :func:`read_outcome` turns a reply into an
:class:`~posenc_spec.gate.calls.Outcome`, checking everything against the request: the
call's id and token, the status, and each array's dtype (complex and integer ones only
where the request admits them), shape and byte count. Text from
the child is made one line and bounded; a reply that does not add up is a
:class:`~posenc_spec.gate.child.protocol.ChannelError` ("malformed reply").
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.regression.ulp import bfloat16_bits, bfloat16_values
from posenc_spec.text import one_line

from .calls import INTEGER_RESULTS, RESULT_ITEMSIZE, ArrayArg, CallRequest, Outcome
from .child.protocol import ChannelError

MAX_MESSAGE = 300
STATUSES = ("ok", "raised", "exit", "bad")
MAX_DIMENSIONS = 8


def encode_args(args) -> tuple[list, list]:
    specs, payloads = [], []
    for arg in args:
        if isinstance(arg, ArrayArg):
            carrier = arg.values
            if arg.dtype == "bfloat16":
                carrier = bfloat16_bits(arg.values)
            else:
                carrier = np.ascontiguousarray(arg.values, dtype=np.dtype(arg.dtype).newbyteorder("="))
            spec = {"array": len(payloads), "dtype": arg.dtype, "shape": list(arg.values.shape),
                    "as": arg.container, "name": arg.name}
            if arg.order is not None:
                spec["order"] = [int(axis) for axis in arg.order]
            specs.append(spec)
            payloads.append(carrier)
        elif isinstance(arg, bool) or not isinstance(arg, (int, float)):
            raise TypeError(f"unsupported call argument {arg!r}")
        else:
            specs.append({"int": arg} if isinstance(arg, int) else {"float": arg})
    return specs, payloads


def request_bytes(request: CallRequest) -> int:
    return 1024 + sum(arg.values.nbytes for arg in request.args if isinstance(arg, ArrayArg))


def text(value, limit: int = MAX_MESSAGE) -> str:
    """A text a child sent, on one line and at most ``limit`` characters; anything else is ""."""
    return one_line(value, limit) if isinstance(value, str) else ""


MAX_CHANGE_LINES = 20  # lines of global-state or import changes kept from one reply
CHANGE_LINE = 200  # characters of each


def change_lines(value) -> list[str]:
    """The change lines a child reported (a list of texts), bounded; anything else is none."""
    return [text(line, CHANGE_LINE) for line in value[:MAX_CHANGE_LINES]] if isinstance(value, list) else []


def _digests(value) -> dict:
    if not isinstance(value, dict):
        return {}
    return {text(key, 40): text(item, 80) for key, item in list(value.items())[:8]}


def read_outcome(header: dict, payloads: list, request: CallRequest, call_id: int, token=None) -> Outcome:
    """The :class:`Outcome` a reply describes, or :class:`ChannelError` when it does not add up."""
    if header.get("op") != "result" or header.get("id") != call_id or header.get("token") != token:
        raise ChannelError("malformed reply (not the answer to this call)")
    status = header.get("status")
    if status not in STATUSES:
        raise ChannelError("malformed reply (unknown status)")
    state, written, overwrote = header.get("state", []), header.get("written", []), header.get("overwrote", [])
    if not isinstance(state, list) or not isinstance(written, list) or not isinstance(overwrote, list):
        raise ChannelError("malformed reply (bad state list)")
    outcome = Outcome(status, text(header.get("message", "")), state=change_lines(state),
                      effects=change_lines(header.get("effects")), imports=text(header.get("imports", ""), 120),
                      written=[text(name, 40) for name in written[:8]],
                      overwrote=[text(what, CHANGE_LINE) for what in overwrote[:4]],
                      rng_before=_digests(header.get("rng_before")), rng_after=_digests(header.get("rng_after")),
                      exception=text(header.get("exception", ""), 80) or None)
    if status != "ok":
        if payloads:
            raise ChannelError("malformed reply (data with a failed call)")
        return outcome
    specs = header.get("arrays", [])
    if not isinstance(specs, list) or not specs or len(specs) != len(payloads) or len(specs) > request.max_items:
        raise ChannelError("malformed reply (the arrays do not match the data)")
    for spec, data in zip(specs, payloads, strict=True):
        refused = _add_array(outcome, spec, data, request)
        if refused:
            return Outcome("bad", refused, state=outcome.state, effects=outcome.effects, imports=outcome.imports,
                           written=outcome.written, overwrote=outcome.overwrote,
                           rng_before=outcome.rng_before, rng_after=outcome.rng_after)
    outcome.is_tuple = bool(header.get("tuple"))
    descriptions = [text(spec.get("description", ""), 120) for spec in specs]
    outcome.message = "; ".join(description for description in descriptions if description)
    return outcome


def _add_array(outcome: Outcome, spec, data, request: CallRequest) -> str | None:
    """Append one announced array to ``outcome`` (a reason when ``request`` refuses its dtype)."""
    if not isinstance(spec, dict):
        raise ChannelError("malformed reply (bad array)")
    dtype, shape = spec.get("dtype"), spec.get("shape")
    if (not isinstance(shape, list) or len(shape) > MAX_DIMENSIONS
            or not all(type(n) is int and n >= 0 for n in shape)):
        raise ChannelError("malformed reply (bad shape)")
    if dtype not in RESULT_ITEMSIZE:
        raise ChannelError("malformed reply (bad dtype)")
    if dtype.startswith("complex") and not request.allow_complex:
        return f"returned {dtype} values, not real numbers"
    if dtype in INTEGER_RESULTS and not request.allow_integer:
        return f"returned {dtype} values, not floating point"
    if len(data) != math.prod(shape) * RESULT_ITEMSIZE[dtype]:
        raise ChannelError("malformed reply (byte count does not match the shape)")
    if dtype == "bfloat16":
        array = bfloat16_values(np.frombuffer(data, dtype=np.uint16))
    else:
        array = np.frombuffer(data, dtype=np.dtype(dtype))
    outcome.arrays.append(array.reshape(shape))
    outcome.dtypes.append(dtype)
    outcome.containers.append("torch" if spec.get("container") == "torch" else "numpy")
    return None
