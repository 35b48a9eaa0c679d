"""The calls the gate makes of an ALiBi target, and the check ids they produce.

The grid is sized by what a bug needs to show, each call kept for a reason written here.

Head counts (:data:`HEAD_COUNTS`, 28 of 1 .. 128; the model's alone when a declaration gives
``num_heads``). The slopes of ``H`` heads depend on ``H`` only through ``P``, the power of two
at or below it, and the ``H - P`` extra heads, which take the odd members of ``2P``'s
sequence: every slip of the rule shows at one of these kinds of count, and the grid holds each
kind at every power to 128 (the corpus's first failing counts: 1, 2, 3, 5, 6, 8 and 9):

- each power of two, 1 .. 128 (one geometric sequence; a closest power computed through a
  logarithm that rounds the wrong way; head order and sign at one head and at two);
- one past each, ``P + 1`` (3, 5, 9, 17, 33, 65: the first extra head, the first odd member:
  a geometric sequence for every count, the power rounded up, the even members taken) and
  two past, ``P + 2`` (6, 10, 18, 34, 66: a second extra head, where a missing stride or a
  slice of the extra heads shows: at 3 and 5 the first of ``2P``'s slopes is the odd one);
- one below the next power, ``2P - 1`` (7, 15, 31, 63, 127: ``P - 1`` extra heads, every odd
  member but the last: a slice one short or one long);
- the models' counts: 12 (the paper's own interleave example), 40 (Baichuan-13B), 71
  (Falcon-7B: 7 extra heads, an odd number), 112 (BLOOM-176B: 48 extra heads, more than half
  of ``P``).

Under the paper's rule at ``B = 8``, every slope of up to 8 heads is ``2 ** -k`` for an integer
``k``, which float16 and bfloat16 hold; from 9 heads on some are not, so a slope rounded to a
narrow dtype shows from 9 on. A partial ALiBi (``alibi_heads = K``) takes the counts from ``K``,
with ``K`` and ``K + 1`` (the model with one unbiased head).

Every head count gets the *sweep*, calls small enough to make for all of them: they hold every
head's slope and the bias's form. The *deep* head counts (:data:`DEEP_HEADS`) also get the
long calls, the dtypes and the decoding steps, where precision, caches and positions go wrong
whatever the head count: one head (its slope ``2 ** -8`` exact in every dtype: a long call
shows a rounded position alone); 12 (the first deep count whose slopes float16 and bfloat16
round, with the interleave); 128 (the most heads: the largest powers of the finest ratio, where
a bound derived too tight would first fail correct code, and the largest calls).

The long calls, by what shows there (bfloat16 holds every integer up to 256, float16 up to
2048, float32 up to 2**24: :data:`EXACT_INTEGERS`):

- one key (``L=1``): size-1 axes, squeezed or not, and a bias with no distance;
- 64 keys, and its ``64x64`` prefill: a call longer than the sweep's (a cache built for 8 keys
  and reused), and the narrow dtypes' own rounding at positions every dtype holds;
- 258 keys (``L=258``, the step ``p=257``): key 257, the first integer bfloat16 rounds;
- 2050 keys (``L=2050``, ``p=2049``): key 2049, the first integer float16 rounds. In float32
  they show a bias formed in the narrow dtype whatever dtype is asked for (at one head, where
  the slope is exact, nothing else shows it); in their own narrow dtype, positions counted or
  summed in it, which stop at its last integer (a narrow dtype's rounding of the output alone
  hides a position off by one, not a count that stops);
- a decoding step inside the prefill (``p=31``, not its last row): a cache sliced from the
  wrong corner or row; the steps at 257 and 2049 are past the prefill, where a cache grows;
- a left-padded mask (``mask-left``: 3 padded, 61 kept) and one with a hole (``mask-hole``:
  30 kept, 4 padded, 30 kept), in float32: padding moves positions below 64, which every
  dtype holds.

Float32 positions round only past 2**24 keys, beyond any call's budget: no call asks for them.
Where a signature takes a dtype, float32 is asked at every length, each narrow dtype at 64
keys and at the first length past its integers (:func:`call_dtypes`). A slope returned by
itself is judged by the bias it makes at 8192 keys, a length models use
(:func:`~.tolerance.slope_tolerance`), whatever calls were made. By signature:

- ``heads`` (``alibi-slopes``): one call ``fn(H)`` per head count.
- ``heads-length`` and ``heads-length-max``: sweep ``L=7``; deep ``L=1, 64, 258, 2050``.
- ``mask-heads-dtype``: sweep ``L=7:float32``; deep all-ones masks of ``L=1, 64, 258,
  2050`` in float32, ``L=64`` and ``L=2050`` in float16, ``L=64`` and ``L=258`` in bfloat16,
  and ``mask-left`` and ``mask-hole`` in float32.
- ``heads-mask``, ``module-ij`` and ``module-scores`` (a row per query, called with
  ``(q_len, k_len)``): sweep a prefill ``8x8`` then a decoding step ``p=7`` (one query at
  position 7 over keys ``0 .. 7``); deep a prefill ``64x64``, then steps ``p=31, 257, 2049``.
  A module is built once per head count and gets every call of its head count, in order:
  a cache kept between a prefill and a decoding step is judged at every step.
  ``module-scores`` (whose scores carry the dtype) makes ``64x64`` in float32, float16 and
  bfloat16, ``p=257`` in bfloat16 and ``p=2049`` in float16 besides float32.

A call is made only where its result holds at most :data:`ELEMENT_BUDGET` elements (2**21:
a ``(31, 258, 258)`` bias does, a ``(1, 2050, 2050)`` one does not; the long distances of
the forms with a row per query come from the decoding steps), and only where its keys fit
under a declared ``max_positions``.

Without a declared ``max_positions`` the long calls' lengths are the gate's choice, not a
promise of the target. Correct code may build the whole ``(heads, keys, keys)`` square and
slice its last row for a decoding step (Baichuan's mask, a cached full bias): 2.2 GB at
128 heads and 2050 keys, past a small per-target memory limit. Such a call that runs out of
memory (:func:`chosen_size`: beyond the prefill's keys, its float32 square at least
:data:`SQUARE_FLOOR` bytes) is a note, not a failure: the target is judged on the calls it
could make, the shorter ones of the same head count among them.

The signatures real code has (the child makes each call: :mod:`.adapters`; :func:`.judge.read`
reads what each returns as the oracle's layout)::

    api / signature         the target is called as                      and returns
    alibi-slopes
      heads                 fn(num_heads)                                num_heads slopes, any shape
                            (x-transformers' AlibiPositionalBias._get_slopes, labml's get_slopes,
                             transformers' _get_alibi_slopes with kwargs = {device = "cpu"})
    alibi-bias
      heads-length          fn(num_heads, length)                        (heads, rows, length) after
      heads-length-max      fn(num_heads, length, alibi_bias_max)        any size-1 axes
                            (llm-foundry's build_alibi_bias; transformers' build_mpt_alibi_tensor)
      mask-heads-dtype      fn(attention_mask, num_heads, dtype)         (batch * heads, 1, keys)
                            (transformers' BLOOM and Falcon build_alibi_tensor; mask int64 (1, keys),
                             dtype a torch dtype)
      heads-mask            fn(num_heads, mask)                          (queries, keys, heads)
                            (labml's get_alibi_biases; mask the (queries, keys) causal mask, 1 keep)
      module-ij             Module(**init)(q_len, k_len)                 (heads, q_len, k_len)
                            (x-transformers' AlibiPositionalBias(heads)(i, j))
      module-scores         Module(**init)(scores)                       scores + bias
                            (keras-hub's AlibiBias; scores zeros (1, heads, q_len, k_len) in the
                             call's dtype: what it returns is the bias)

Check ids (``S`` a call's slot without its head count: ``L=7``, ``64x64``, ``p=31``,
``L=2050:float16``, ``mask-left:float32``; each check of a slot judges it at every head
count that makes the call, and its message names the head count of the worst call):

``call[S]``, ``finite[S]``, ``formula[S]``, ``linear[S]``, ``equivalent[S]``
    the call returned a bias of the expected shape in a floating dtype, finite where it is
    judged, within its bound of the exact bias (up to a constant per row where declared);
    steps of one slope between neighbouring keys; the paper's attention up to a constant per
    row (:mod:`.properties`).
``toeplitz[S]``
    (the forms with a row per query, calls of several queries) the bias depends on ``k - q`` alone.
``diagonal[S]``
    (unless ``up_to_row_constant``) exactly 0 at distance 0.
``unbiased-heads[S]``
    (partial ALiBi) the heads past ``alibi_heads`` add exactly nothing.
``decode[S]``
    (decoding steps within their prefill) the step agrees with the prefill's row for its query.
``call[h=A-B]``, ``finite[h=A-B]``, ``formula[h=A-B]``, ``head-ratio[h=A-B]``
    (``alibi-slopes``: ``h=1-128`` over the grid's counts; ``h=112`` for a declared head count)
    the slopes within their bounds, and their ratios between heads.
``determinism``, ``aliasing``, ``global-state``
    as for every family (:mod:`posenc_spec.families.sinusoidal.grid`): the repeat is the sweep
    call of the last head count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.calls import ArrayArg, CallRequest

from .conventions import AlibiConvention

# Every power of two to 128 (one geometric sequence, and where a closest power computed
# through a logarithm rounds the wrong way); one and two heads past each (the first odd member
# of the next power's sequence; a second, where a stride or a slice of the extra heads shows);
# one below the next power (every odd member but the last); and the models' counts: 12 (the
# paper's own interleave example), 40 (Baichuan-13B), 71 (Falcon-7B: 7 extra heads, an odd
# number), 112 (BLOOM-176B: 48 extra heads, more than half of 64).
POWERS = tuple(2**k for k in range(8))
HEAD_COUNTS = tuple(sorted({*POWERS, *(p + 1 for p in POWERS[1:7]), *(p + 2 for p in POWERS[2:7]),
                            *(2 * p - 1 for p in POWERS[2:7]), 12, 40, 71, 112}))
DEEP_HEADS = (1, 12, 128)
SWEEP_LENGTH = 7
SWEEP_PREFILL = 8
PREFILL = 64
DECODE_POSITIONS = (31,)
# The last integer each narrow dtype holds exactly, and so every position up to it.
EXACT_INTEGERS = {"bfloat16": 256, "float16": 2048}
LONG_DECODE_POSITIONS = (EXACT_INTEGERS["bfloat16"] + 1, EXACT_INTEGERS["float16"] + 1)  # 257, 2049
LENGTHS = (1, 7, 64, *(p + 1 for p in LONG_DECODE_POSITIONS))  # 258 and 2050 keys: the last one past each
LEFT_PADDED = (0,) * 3 + (1,) * 61
WITH_HOLE = (1,) * 30 + (0,) * 4 + (1,) * 30
DTYPES = ("float32", "float16", "bfloat16")
# The dtypes a request names by index (an int crosses to the child; a text does not).
DTYPE_CODES = ("float32", "float16", "bfloat16", "float64")
ELEMENT_BUDGET = 2**21
# A call whose (heads, keys, keys) float32 square is smaller than this cannot run out of any
# memory a target may be given (64 MiB, the smallest --max-memory): its memory failure is its own.
SQUARE_FLOOR = 2**26
# The signatures real code has (docs/families/alibi.md, and the table of the module docstring).
SIGNATURES = ("heads", "heads-length", "heads-length-max", "mask-heads-dtype", "heads-mask", "module-ij",
              "module-scores")
MODULE_SIGNATURES = ("module-ij", "module-scores")  # the target is a class: one object per head count
ROW_SIGNATURES = ("heads-mask", "module-ij", "module-scores")  # called with (q_len, k_len)
TAKES_DTYPE = ("mask-heads-dtype", "module-scores")


@dataclass(frozen=True)
class AlibiCall:
    """One call of a target: ``q_len`` queries over ``k_len`` keys (``mask``: one row of an
    attention mask, for ``mask-heads-dtype``), the ``dtype`` handed to the signatures that take
    one, its ``slot`` (the check ids' ``S``), and its ``step``: ``table``, ``prefill`` or
    ``decode`` (a decoding step after the prefill of the same head count and dtype)."""

    slot: str
    num_heads: int
    q_len: int
    k_len: int
    dtype: str = "float32"
    mask: tuple | None = None
    step: str = "table"

    @property
    def size(self) -> str:
        """``h=H:S``: the call, with its head count."""
        return f"h={self.num_heads}" + (f":{self.slot}" if self.slot else "")

    @property
    def decode_position(self) -> int:
        return self.k_len - 1


def head_counts(declared: int | None = None, least: int = 1) -> tuple[int, ...]:
    """The grid's head counts: the declared model's, or those of :data:`HEAD_COUNTS` from
    ``least`` (a partial ALiBi's ``alibi_heads``: a model has at least that many heads) to
    128, with ``least`` itself and one more (the fewest heads of the model, and the first
    count with an unbiased head)."""
    if declared is not None:
        return (declared,)
    return tuple(sorted({count for count in HEAD_COUNTS if count >= least} | {least, least + 1} & set(range(1, 129))))


def deep_heads(counts: tuple[int, ...]) -> tuple[int, ...]:
    """The head counts that also get the long calls: :data:`DEEP_HEADS` among ``counts``, the
    largest of them when none is (a partial ALiBi from 4 heads keeps 12 and 128)."""
    return tuple(count for count in counts if count in DEEP_HEADS) or counts[-1:]


def call_dtypes(k_len: int) -> tuple[str, ...]:
    """The dtypes a call of ``k_len`` keys is made in, where the signature takes one: float32;
    every dtype at the prefill's length, whose positions each holds exactly; and a narrow dtype
    at the length whose last key is the first integer it rounds (258 keys for bfloat16, 2050
    for float16)."""
    if k_len == PREFILL:
        return DTYPES
    return ("float32", *(dtype for dtype, last in EXACT_INTEGERS.items() if k_len - 1 == last + 1))


def _with_dtypes(calls: list[AlibiCall], dtypes_of) -> list[AlibiCall]:
    """Each call in each of ``dtypes_of(call)``, dtype by dtype (a module gets its float32 calls first)."""
    return [AlibiCall(f"{call.slot}:{dtype}", call.num_heads, call.q_len, call.k_len, dtype, call.mask, call.step)
            for dtype in DTYPES for call in calls if dtype in dtypes_of(call)]


def _row_calls(num_heads: int, prefill: int, positions) -> list[AlibiCall]:
    made = [AlibiCall(f"{prefill}x{prefill}", num_heads, prefill, prefill, step="prefill")]
    return made + [AlibiCall(f"p={p}", num_heads, 1, p + 1, step="decode") for p in positions]


def sweep_calls(signature: str, num_heads: int) -> list[AlibiCall]:
    """The small calls every head count gets."""
    if signature == "heads":
        return [AlibiCall("", num_heads, 0, 0)]
    if signature == "mask-heads-dtype":
        return [AlibiCall(f"L={SWEEP_LENGTH}:float32", num_heads, 1, SWEEP_LENGTH, mask=(1,) * SWEEP_LENGTH)]
    if signature in ("heads-length", "heads-length-max"):
        return [AlibiCall(f"L={SWEEP_LENGTH}", num_heads, SWEEP_LENGTH, SWEEP_LENGTH)]
    made = _row_calls(num_heads, SWEEP_PREFILL, (SWEEP_PREFILL - 1,))
    return _with_dtypes(made, lambda call: DTYPES[:1]) if signature in TAKES_DTYPE else made


def deep_calls(signature: str, num_heads: int) -> list[AlibiCall]:
    """The long calls, the dtypes and the decoding steps of a deep head count."""
    if signature == "heads":
        return []
    if signature == "mask-heads-dtype":
        masks = [(f"L={length}", (1,) * length) for length in LENGTHS]
        masks += [("mask-left", LEFT_PADDED), ("mask-hole", WITH_HOLE)]
        made = [AlibiCall(slot, num_heads, 1, len(mask), mask=mask) for slot, mask in masks]
        # Padding moves positions below 64, which every dtype holds: the masks' calls are float32's.
        made = _with_dtypes(made, lambda call: call_dtypes(call.k_len) if all(call.mask) else DTYPES[:1])
        swept = {call.slot for call in sweep_calls(signature, num_heads)}
        return [call for call in made if call.slot not in swept]
    if signature in ("heads-length", "heads-length-max"):
        return [AlibiCall(f"L={length}", num_heads, length, length) for length in LENGTHS if length != SWEEP_LENGTH]
    made = _row_calls(num_heads, PREFILL, (*DECODE_POSITIONS, *LONG_DECODE_POSITIONS))
    return _with_dtypes(made, lambda call: call_dtypes(call.k_len)) if signature in TAKES_DTYPE else made


def returned_shape(signature: str, call: AlibiCall) -> tuple[int, ...]:
    """The largest result the call may return: ``(H,)`` slopes, else ``(H, q_len, k_len)``."""
    return (call.num_heads,) if signature == "heads" else (call.num_heads, call.q_len, call.k_len)


def chosen_size(call: AlibiCall, max_positions: int | None) -> bool:
    """Whether ``call``'s length is the gate's choice and large enough that building its
    ``(heads, keys, keys)`` square may exceed a target's memory: no ``max_positions``
    declared, more keys than the prefill's, and a float32 square of at least
    :data:`SQUARE_FLOOR` bytes."""
    return max_positions is None and call.k_len > PREFILL + 1 and 4 * call.num_heads * call.k_len**2 >= SQUARE_FLOOR


def _fits(signature: str, call: AlibiCall, convention: AlibiConvention, max_positions: int | None) -> bool:
    rows = 1 if convention.key_only or signature == "mask-heads-dtype" else call.q_len
    return call.num_heads * rows * call.k_len <= ELEMENT_BUDGET and (max_positions is None
                                                                     or call.k_len <= max_positions)


def calls(signature: str, num_heads: int, convention: AlibiConvention, deep: bool = True,
          max_positions: int | None = None) -> list[AlibiCall]:
    """The calls of one head count, in order (a module gets all of them, on one object)."""
    made = sweep_calls(signature, num_heads) + (deep_calls(signature, num_heads) if deep else [])
    return [call for call in made if _fits(signature, call, convention, max_positions)]


# -- probes: the calls as the gate's engine takes them ----------------------------------------


@dataclass(frozen=True, eq=False)
class AlibiProbe:
    """One call of the gate's grid (the engine's probe contract: ``slot`` unique, ``role``
    ``table`` or ``repeat``, ``check_id``, :meth:`request`). ``group`` is the slot of the
    check ids (the call's slot, or the head counts' range for slopes); ``prefill`` the slot of
    the prefill a decoding step follows (None: no ``decode`` check)."""

    slot: str
    role: str
    call: AlibiCall
    group: str
    checks: tuple[str, ...] = ()
    check_id: str | None = None
    repeats: str | None = None
    rng: str = "a"
    prefill: str | None = None
    signature: str = "heads"

    def check_ids(self) -> list[str]:
        if self.role != "table":
            return [self.check_id]
        return [f"{check}[{self.group}]" for check in self.checks]

    def request(self, label: str | None = None) -> CallRequest:
        """``(num_heads, q_len, k_len, dtype index[, mask])``, read by :mod:`.adapters`."""
        call = self.call
        args = [call.num_heads, call.q_len, call.k_len, DTYPE_CODES.index(call.dtype)]
        if call.mask is not None:
            args.append(ArrayArg(np.array([call.mask], dtype=np.int64), "int64", "torch", "attention_mask"))
        return CallRequest(label or self.slot, tuple(args), returned_shape(self.signature, call), rng=self.rng)


SLOPE_CHECKS = ("call", "finite", "formula", "head-ratio")


def bias_checks(call: AlibiCall, convention: AlibiConvention, with_decode: bool) -> tuple[str, ...]:
    """The checks of one bias call under ``convention`` (none that could never apply to it)."""
    checks = ["call", "finite", "formula", "linear"]
    if not convention.key_only and call.q_len > 1:
        checks.append("toeplitz")
    if not convention.up_to_row_constant:
        checks.append("diagonal")
    checks.append("equivalent")
    if convention.alibi_heads is not None:
        checks.append("unbiased-heads")
    if with_decode:
        checks.append("decode")
    return tuple(checks)


def heads_group(counts: tuple[int, ...]) -> str:
    """``h=1-128`` (or ``h=112`` for one count): the slot of the slopes' check ids, from the
    fewest heads to the most."""
    return f"h={counts[0]}" if len(counts) == 1 else f"h={counts[0]}-{counts[-1]}"


def probes(signature: str, convention: AlibiConvention, attention_heads: int | None = None,
           max_positions: int | None = None) -> list[AlibiProbe]:
    """Every call of the grid, head count by head count, then the determinism repeat."""
    counts = head_counts(attention_heads, convention.alibi_heads or 1)
    deep = deep_heads(counts)
    made: list[AlibiProbe] = []
    for count in counts:
        prefills: dict[str, AlibiCall] = {}
        for call in calls(signature, count, convention, count in deep, max_positions):
            slot = call.size
            if signature == "heads":
                made.append(AlibiProbe(slot, "table", call, heads_group(counts), SLOPE_CHECKS, signature=signature))
                continue
            if call.step == "prefill":
                prefills[call.dtype] = call
            prefill = prefills.get(call.dtype) if call.step == "decode" else None
            within = prefill is not None and call.decode_position < prefill.k_len
            made.append(AlibiProbe(slot, "table", call, call.slot, bias_checks(call, convention, within),
                                   prefill=prefill.size if within else None, signature=signature))
    repeated = next((probe for probe in made if probe.call.num_heads == counts[-1]), None)
    if repeated is not None:
        made.append(AlibiProbe(repeated.slot, "repeat", repeated.call, repeated.group, check_id="determinism",
                               repeats=repeated.slot, rng="b", signature=signature))
    return made


def plan_ids(probes_made: list[AlibiProbe]) -> list[str]:
    """Every check id of a run over ``probes_made``, in report order."""
    ids = dict.fromkeys(["import"])
    for probe in probes_made:
        ids.update(dict.fromkeys(probe.check_ids()))
    return [*ids, "aliasing", "global-state"]
