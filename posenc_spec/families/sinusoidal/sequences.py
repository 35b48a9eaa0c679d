"""The call sequences real code plays on a table or timesteps target, and their check ids.

The grid (:mod:`posenc_spec.families.sinusoidal.grid`) calls each size once, float32 first. Caches, memos
and buffers fail in the order of calls instead: a table cached at the first length asked
and sliced for a longer one, grown by appending rows counted from 0 again, stored in half
precision once asked twice; a memo of timestep embeddings keyed on the batch's shape; a
bfloat16 call that builds what a later float32 call reuses. So after the grid the target
plays these sequences, in this order, each call judged against the formula at its own size
and values; the calls of a sequence share one check id, and the first of its worst calls
is reported. They are played at widths the grid never asks (16 for tables, 32 for
timesteps): a cache, a memo or a module kept per width starts empty there, as it would in
a process of its own, at none of the cost of one.

``grow[d=16]`` (table API)
    one width at growing lengths: 24 positions, the same 24 again, 80 (past the length a
    cache holds), then 40 (a cache that outgrew the call).
``dtype-order[64x32]`` (timesteps API)
    64 timesteps as bfloat16, the same as float16, the same as float32 (not rounded), then
    the first 32 as float32: each expected at exactly the value it holds, so a bfloat16 or
    float16 call that builds or fills a cache a later float32 call reads shows there. The
    grid requires int64 and float32 timesteps only: a target that raises on the bfloat16 or
    float16 call refuses a dtype nothing requires, which is a note, and the calls it takes
    judge it (:func:`~posenc_spec.families.sinusoidal.judge.judge_sequence_call`).
``memo[48x32]`` (timesteps API)
    two calls of the same shape with other values (int64 steps where ``t_max`` has 48 of
    them, float32 draws otherwise).

A table API ``fn(n, d)`` takes no dtype: what a module does when its table is asked for in
another dtype (a cache cast with the model, reused for float32 later) shows only where a
call carries one (timesteps, rotary ``x``), never through ``fn(n, d)``.
"""

from __future__ import annotations

import math

import numpy as np

from posenc_spec.families.sinusoidal.grid import Probe
from posenc_spec.gate.calls import held_in

GROW_WIDTH = 16
GROW_LENGTHS = ((24, "the first call"), (24, "the same size again"), (80, "past the length asked before"),
                (40, "shorter, after the longest"))
TIMESTEP_WIDTH = 32
DTYPE_ORDER_COUNT = 64
MEMO_COUNT = 48
SEQUENCE_SEED = 20250601
FLOAT16_MAX = float(np.finfo(np.float16).max)


def _capped(length: int, max_positions: int | None) -> int:
    return length if max_positions is None else min(length, max_positions)


def table_sequences(max_positions=None) -> list[Probe]:
    check_id = f"grow[d={GROW_WIDTH}]"
    probes, before = [], None
    for length, what in GROW_LENGTHS:
        length = _capped(length, max_positions)
        note = f"{length}x{GROW_WIDTH}, {what}" + (f" ({before}x{GROW_WIDTH})" if before else "")
        probes.append(Probe(f"grow-{length}x{GROW_WIDTH}", "sequence", length, GROW_WIDTH, check_id=check_id,
                            derived=False, note=note))
        before = length
    return probes


def timestep_sequences(t_max: float, max_positions=None) -> list[Probe]:
    generator = np.random.default_rng(SEQUENCE_SEED)
    # Below t_max even once rounded up to bfloat16 (2**-9 relative); float16 finite.
    drawn = np.minimum(generator.uniform(0.0, 0.99 * t_max, size=DTYPE_ORDER_COUNT), FLOAT16_MAX)
    drawn = drawn.astype(np.float32)[: _capped(DTYPE_ORDER_COUNT, max_positions)]
    shorter = drawn[: max(drawn.size // 2, 1)]
    order_id = f"dtype-order[{DTYPE_ORDER_COUNT}x{TIMESTEP_WIDTH}]"
    calls = [(held_in(drawn, "bfloat16"), "bfloat16", "the first call"),
             (held_in(drawn, "float16"), "float16", "after the bfloat16 call"),
             (drawn, None, "after the bfloat16 and float16 calls of the same length"),
             (shorter, None, "shorter, after the others")]
    probes = [Probe(f"dtype-order-{values.size}-{dtype or 'float32'}", "sequence", values.size, TIMESTEP_WIDTH,
                    values, order_id, derived=False, input_dtype=dtype,
                    note=f"{values.size} {dtype or 'float32'} timesteps x {TIMESTEP_WIDTH}, {what}")
              for values, dtype, what in calls]
    count = _capped(MEMO_COUNT, max_positions)
    top = math.floor(t_max)
    memo_id = f"memo[{MEMO_COUNT}x{TIMESTEP_WIDTH}]"
    for index, what in enumerate(("the first call", "the same shape, other values")):
        if top >= MEMO_COUNT:
            values = generator.integers(0, top, size=count, endpoint=True).astype(np.int64)
        else:
            values = generator.uniform(0.0, t_max, size=count).astype(np.float32)
        probes.append(Probe(f"memo-{index + 1}", "sequence", count, TIMESTEP_WIDTH, values, memo_id, derived=False,
                            note=f"{count} {values.dtype.name} timesteps x {TIMESTEP_WIDTH}, {what}"))
    return probes


def sequences_for(api: str, t_max: float, max_positions=None) -> list[Probe]:
    """The sequences of a table or timesteps target, in the order they are played."""
    if api == "table":
        return table_sequences(max_positions)
    return timestep_sequences(t_max, max_positions)
