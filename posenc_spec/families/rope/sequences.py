"""The call sequences real code plays on a rotary target, and their check ids.

The grid (:mod:`posenc_spec.families.rope.grid`) makes each call once, float32 first, batch 1,
``x`` contiguous, apply calls longest first. Rotary bugs live in state and call patterns
more than in formulas: a cos/sin cache built for one length and reused for another, keyed
on the length but not the dtype or the offset, grown by appending rows counted from 0
again; a path taken only for one-token decode steps; positions broadcast wrong for a batch
of two; a kernel that assumes a contiguous ``q``. So after the grid the target plays these
sequences at one head size ``D``, in this order, each call judged against the oracle at
its own positions; the calls of a sequence share one check id and the first of its worst
calls is reported. ``D`` starts clean: where the grid asks several head sizes it is one
the grid never asks (32), so that a module built or a cache kept per head size starts
empty, and the sequences come after the grid; where the grid asks one (a declared
``head_dim``), it is that one, and the sequences come first, before anything has been
asked of the target. Every call of a head size goes to one module instance, as a model
keeps it. The sequences that
build or grow a cache come in order of growing length (24, 42, then 96 positions), so that
each builds or grows whatever a cache held before it:

``dtype-order[d=D]`` (``x`` carries a dtype: rope-apply, an ``x-positions`` cache)
    positions ``0..23`` with bfloat16 ``x``, then float16, then float32, then ``0..11`` in
    float32: a cache built or grown by a half-precision call and read by a float32 one.
    Every dtype it hands ``x`` in is one the grid requires (``grid.X_DTYPES``): a sequence
    requires nothing the grid does not.
``decode[d=D]``
    a prefill of ``0..39``, then one-position decode steps at 40 and 41 (a ``length``
    cache: lengths 40, 41 and 42).
``offsets[d=D]`` (not a ``length`` cache)
    8 positions at offset 0, then at offset 20: a cache keyed on the length alone.
``grow[d=D]``
    ``0..15``, ``0..95``, then ``0..15`` again: a short call before a long one (apply
    included), and a short one after it (a cache read from its end).
``batch[d=D]`` (rope-apply but ``thd``; a ``batched`` or ``x-positions`` cache)
    ``x`` (or the positions) with batch 2: two rows of other values at the same positions
    ``0..11``.
``rows[d=D]`` (where positions have a batch axis: a ``batched`` or ``x-positions`` cache,
the ``q-k-cos-sin`` and ``x-input-pos`` signatures)
    two rows at different positions: ``0..11``, and ``29..34`` then ``0..5`` (a continued
    sequence and a new one packed behind it, as continuous batching and left padding make).
``view[d=D]`` (rope-apply)
    ``x`` handed over as a transposed, non-contiguous view in its declared layout (``bhsd``:
    ``(b, s, h, d)`` memory viewed as ``(b, h, s, d)``, as transformers hands ``q`` to
    ``apply_rotary_pos_emb``): the input real callers of that layout pass, so a call that
    raises on it fails.

Positions stay below ``--max-positions``; the sizes shrink with it, the ids do not. A
``rope-freqs`` target takes no positions: none of these applies to it.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.families.rope import grid
from posenc_spec.families.rope.grid import RopeProbe

SEQUENCE_SEED = 600  # x's seeds, apart from the grid's
DTYPE_LENGTH = 24
PREFILL = 40
DECODE_STEPS = 2
OFFSET_LENGTH = 8
OFFSETS = (0, 20)
GROW = (16, 96, 16)
BATCH_LENGTH = 12
PACKED_START = 29
PER_ROW = {"rope-cache": ("batched", "x-positions"), "rope-apply": ("q-k-cos-sin", "x-input-pos")}


SPARE_HEADS = (32, 16, 96)  # head sizes the default grid (8, 64, 128) never asks


def sequence_head(spec) -> int:
    """The head size the sequences are played at: where the grid asks several, one it never
    asks (a module built, or a cache kept, per head size starts empty there); else the one
    it asks."""
    if len(spec.head_dims) > 1:
        for head in SPARE_HEADS:
            try:
                spec.convention.frequencies(head)
            except ValueError:  # a rotary size or factor list this head size cannot take
                continue
            if head not in spec.head_dims:
                return head
    return spec.head_dims[0]


def plays_first(spec) -> bool:
    """Whether the sequences come before the grid: their head size is one the grid calls (a
    declared ``head_dim``), and after the grid whatever it built for that size is there."""
    return sequence_head(spec) in spec.head_dims


class _Builder:
    """The probes of one target's sequences: its kind of call, head size and cap."""

    def __init__(self, spec, api: str, signature: str, cap: int | None):
        self.spec, self.api, self.signature, self.cap = spec, api, signature, cap
        self.head = sequence_head(spec)
        self.kind = "apply" if api == "rope-apply" else "cache"
        self.call = spec.cache_call if self.kind == "cache" else "positions"
        self.probes: list[RopeProbe] = []
        self.seed = SEQUENCE_SEED

    def size(self, length: int) -> int:
        return length if self.cap is None else max(1, min(length, self.cap))

    def add(self, name: str, slot: str, positions, dtype: str = "float32", batch: int = 1, view: bool = False,
            note: str = "") -> None:
        positions = np.asarray(positions, dtype=np.int64)
        rows = positions.shape[-1]
        x = None
        if self.kind == "apply" or self.call == "x-positions":
            self.seed += 1
            x = np.stack([grid.x_values(self.head, rows, dtype, self.seed + 1000 * row) for row in range(batch)])
        self.probes.append(RopeProbe(f"d={self.head}:{slot}", self.kind, "sequence", self.head, positions, x,
                                     dtype if x is not None else None, check_id=f"{name}[d={self.head}]",
                                     call=self.call, x_layout=self.spec.x_layout, view=view, note=note))

    def per_row(self) -> bool:
        return self.call in PER_ROW["rope-cache"] if self.kind == "cache" else self.signature in PER_ROW["rope-apply"]

    # -- the sequences, in the order they are played -------------------------------------

    def dtype_order(self) -> None:
        if self.kind == "cache" and self.call != "x-positions":
            return  # nothing of the call carries a dtype
        length = self.size(DTYPE_LENGTH)
        shorter = max(length // 2, 1)
        for dtype, what in (("bfloat16", "the first call"), ("float16", "after the bfloat16 call"),
                            ("float32", "after the bfloat16 and float16 calls")):
            self.add("dtype-order", f"dtype-order-{dtype}", np.arange(length), dtype,
                     note=f"positions 0..{length - 1}, {dtype} x, {what}")
        self.add("dtype-order", "dtype-order-shorter", np.arange(shorter),
                 note=f"positions 0..{shorter - 1}, float32 x, after the bfloat16 call of 0..{length - 1}")

    def decode(self) -> None:
        prefill = self.size(PREFILL + DECODE_STEPS) - DECODE_STEPS if self.cap is not None else PREFILL
        prefill = max(prefill, 1)
        steps = [step for step in range(prefill, prefill + DECODE_STEPS) if self.cap is None or step < self.cap]
        if self.call == "length":
            for length in [prefill, *(step + 1 for step in steps)]:
                self.add("decode", f"decode-length-{length}", np.arange(length),
                         note=f"length {length}, after a prefill of {prefill}" if length > prefill else
                         f"a prefill of length {prefill}")
            return
        self.add("decode", "decode-prefill", np.arange(prefill), note=f"a prefill of positions 0..{prefill - 1}")
        for number, step in enumerate(steps, 1):
            self.add("decode", f"decode-{step}", [step],
                     note=f"decode step {number}, position {step} alone, after a prefill of 0..{prefill - 1}")

    def offsets(self) -> None:
        if self.call == "length":
            return  # a length cache has no offset
        length = self.size(OFFSET_LENGTH)
        for offset in OFFSETS:
            offset = offset if self.cap is None else min(offset, self.cap - length)
            self.add("offsets", f"offset-{offset}", np.arange(offset, offset + length),
                     note=f"{length} positions at offset {offset}" + (", after offset 0" if offset else ""))

    def grow(self) -> None:
        short, long, again = (self.size(length) for length in GROW)
        for slot, length, what in (("grow-short", short, "before a longer call"), ("grow-long", long, "after a "
                                   "shorter call"), ("grow-short-again", again, f"after positions 0..{long - 1}")):
            self.add("grow", slot, np.arange(length), note=f"positions 0..{length - 1}, {what}")

    def batch(self) -> None:
        if (self.kind == "cache" and not self.per_row()) or self.spec.x_layout == "thd":
            return
        length = self.size(BATCH_LENGTH)
        positions = np.arange(length)
        if self.per_row():
            positions = np.stack([positions, positions])
        self.add("batch", "batch", positions, batch=2,
                 note=f"batch 2, both rows at positions 0..{length - 1}, other values")

    def rows(self) -> None:
        if not self.per_row() or self.spec.x_layout == "thd":
            return
        length = self.size(BATCH_LENGTH)
        packed = length // 2
        start = PACKED_START if self.cap is None else max(0, min(PACKED_START, self.cap - packed))
        second = np.concatenate([np.arange(start, start + packed), np.arange(length - packed)])
        self.add("rows", "rows", np.stack([np.arange(length), second]), batch=2,
                 note=f"batch 2, rows at positions 0..{length - 1} and {start}..{start + packed - 1} then "
                      f"0..{length - packed - 1}")

    def view(self) -> None:
        if self.kind != "apply":
            return
        length = self.size(BATCH_LENGTH)
        self.add("view", "view", np.arange(length), view=True,
                 note=f"positions 0..{length - 1}, x a transposed non-contiguous view "
                      f"(its memory in the order of axes {grid.VIEW_ORDER[self.spec.x_layout]})")


def probes_for(spec, api: str, signature: str, max_positions=None) -> list[RopeProbe]:
    """The sequences of a rotary target, in the order they are played (none for rope-freqs)."""
    if api == "rope-freqs":
        return []
    builder = _Builder(spec, api, signature, grid.longest_length(spec.convention, max_positions))
    for sequence in (builder.dtype_order, builder.decode, builder.offsets, builder.grow, builder.batch,
                     builder.rows, builder.view):
        sequence()
    return builder.probes


def sequence_ids(probes) -> list[str]:
    """The sequences' check ids, in the order they are played."""
    return list(dict.fromkeys(probe.check_id for probe in probes))
