"""The calls the gate makes of an ALiBi target, and the check ids they produce.

Head counts ``1 .. 128``: every power of two and every count between (BLOOM-176B's 112,
Falcon-7B's 71 among them), or the one a declaration fixes. Per head count, by signature:

- ``slopes``: one call, ``fn(H)``.
- a bias with a row per query (``causal``, ``symmetric``), called with ``(q_len, k_len)``
  (``module-ij``, ``module-scores``, ``heads-mask``): a prefill of ``64 x 64``, then, on the
  same module, decoding steps of one query at ``p = 1, 31, 63`` over keys ``0 .. p``, then
  longer steps at ``p = 256, 2048, 8192`` (bfloat16 holds every integer only up to 256,
  float16 up to 2048).
- ``heads-length`` and ``heads-length-max``: lengths ``1, 2, 7, 64, 257, 2049, 8193``.
- ``mask-heads-dtype``: all-ones masks of those lengths, a left-padded mask (three padding
  keys, then 61 kept) and a mask with a hole (30 kept, 4 padded, 30 kept).

A call is made only where its table holds at most :data:`ELEMENT_BUDGET` elements (2**21:
a ``(31, 257, 257)`` bias does, a ``(1, 2049, 2049)`` one does not; the long distances of
the forms with a row per query come from the decoding steps). Signatures that take a dtype are called in float32,
float16 and bfloat16.

Check ids (``H`` the head count, ``S`` the call's slot: ``64x64``, ``p=31``, ``L=2049``,
``mask-left``, ``mask-hole``, with ``:T`` for the dtype where the signature takes one):

``call[h=H]``, ``finite[h=H]``, ``slopes[h=H]``, ``head-ratio[h=H]``
    (slopes) the slopes within ``m (delta_s + u_o)``; their ratios between heads.
``call[h=H:S]``, ``finite[h=H:S]``, ``formula[h=H:S]``, ``linear[h=H:S]``, ``toeplitz[h=H:S]``,
``diagonal[h=H:S]``, ``equivalent[h=H:S]``, ``unbiased-heads[h=H:S]``
    (biases) :mod:`.properties`: the bias within its bounds (up to a row constant where
    declared); steps of one slope between neighbouring keys; ``k - q`` alone decides it;
    exactly 0 at distance 0; the paper's attention up to a row constant; the heads past
    ``alibi_heads`` exactly 0.
``decode[h=H:p=P]``
    (the calls with a prefill) the decoding step agrees with the prefill's row for query
    ``P`` (skipped past the prefill's length).
``determinism``, ``global-state``
    as for every family (:mod:`posenc_spec.families.sinusoidal.grid`).
"""

from __future__ import annotations

from .conventions import AlibiConvention
from .signatures import TAKES_DTYPE, AlibiCall

HEAD_COUNTS = tuple(range(1, 129))
PREFILL = 64
DECODE_POSITIONS = (1, 31, 63)
LONG_DECODE_POSITIONS = (256, 2048, 8192)
LENGTHS = (1, 2, 7, 64, 257, 2049, 8193)
LEFT_PADDED = (0,) * 3 + (1,) * 61
WITH_HOLE = (1,) * 30 + (0,) * 4 + (1,) * 30
DTYPES = ("float32", "float16", "bfloat16")
ELEMENT_BUDGET = 2**21


def head_counts(declared: int | None = None) -> tuple[int, ...]:
    """The grid's head counts: the declared model's, or every count from 1 to 128."""
    return HEAD_COUNTS if declared is None else (declared,)


def _within_budget(call: AlibiCall, convention: AlibiConvention) -> bool:
    rows = 1 if convention.key_only else call.q_len
    return call.num_heads * rows * call.k_len <= ELEMENT_BUDGET


def _base_calls(signature: str, num_heads: int, convention: AlibiConvention) -> list[AlibiCall]:
    if signature == "slopes":
        return [AlibiCall("", num_heads, 0, 0)]
    if signature == "mask-heads-dtype":
        masks = [(f"L={length}", (1,) * length) for length in LENGTHS]
        masks += [("mask-left", LEFT_PADDED), ("mask-hole", WITH_HOLE)]
        return [AlibiCall(slot, num_heads, 1, len(mask), mask=mask) for slot, mask in masks]
    if signature in ("heads-length", "heads-length-max"):
        return [AlibiCall(f"L={length}", num_heads, length, length) for length in LENGTHS]
    prefill = AlibiCall(f"{PREFILL}x{PREFILL}", num_heads, PREFILL, PREFILL, role="prefill")
    steps = [AlibiCall(f"p={p}", num_heads, 1, p + 1, role="decode")
             for p in (*DECODE_POSITIONS, *LONG_DECODE_POSITIONS)]
    return [prefill, *steps]


def calls(signature: str, num_heads: int, convention: AlibiConvention) -> list[AlibiCall]:
    """The calls of one head count, in order (a module gets all of them, on one object)."""
    made = [call for call in _base_calls(signature, num_heads, convention) if _within_budget(call, convention)]
    if signature not in TAKES_DTYPE:
        return made
    return [AlibiCall(f"{call.slot}:{dtype}", call.num_heads, call.q_len, call.k_len, dtype, call.mask, call.role)
            for dtype in DTYPES for call in made]


BIAS_CHECKS = ("call", "finite", "formula", "linear", "toeplitz", "diagonal", "equivalent", "unbiased-heads")
SLOPE_CHECKS = ("call", "finite", "slopes", "head-ratio")


def check_id(check: str, call: AlibiCall) -> str:
    if check == "decode":
        return f"decode[h={call.num_heads}:{call.slot}]"
    return f"{check}[h={call.num_heads}{':' + call.slot if call.slot else ''}]"


def check_ids(signature: str, num_heads: int, convention: AlibiConvention) -> list[str]:
    """Every check id the calls of one head count produce (a skipped check keeps its id)."""
    ids = []
    for call in calls(signature, num_heads, convention):
        ids += [check_id(check, call) for check in (SLOPE_CHECKS if signature == "slopes" else BIAS_CHECKS)]
        if call.role == "decode":
            ids.append(check_id("decode", call))
    return ids
