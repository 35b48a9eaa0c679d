"""The calls the gate makes of a RoPE target, and the check ids they produce.

Positions (int64): ``0..63``; powers of two and their neighbours from 128 to 131072
(bfloat16 holds integers exactly only up to 256, float16 up to 2048); the region around
``original_max_position_embeddings`` and around ``--max-positions``; 32 seeded draws below
the largest. Head sizes 8, 64 and 128 (or ``--head-dim``). A ``cache_call = "length"``
target builds its table for ``0..L-1``: lengths 64 and 8193.

``--max-positions`` is the model's ``max_position_embeddings``: the longest sequence it
takes, so every call stays below it (a cache built once for that many positions is
correct code) and the long call reaches its last position, beyond 131072 when larger.
Under ``dynamic`` without ``original_max_position_embeddings`` it is ``L0`` instead, the
length that scaling starts from, and caps nothing.

The types whose frequencies follow the call's length (``dynamic``, ``longrope``) switch
when ``L = max(positions) + 1`` passes ``L0``: each head size also gets a call of length
``L0`` and one of ``L0 + 1`` (``0..63`` and the last two positions below ``L``; a
``length`` cache: those lengths), before the long call, and the ``L0 + 1`` call again right
after it, a history call: a state kept from the long call shows there even where a call
below ``L0`` would reset it.

Check ids (``D`` the head size; ``T`` the dtype of ``x`` where the call takes one):

``call[d=D]``, ``finite[d=D]``, ``formula[d=D]``
    (rope-freqs) ``fn(D)`` returns ``r/2`` inverse frequencies (float32 or float64) within
    their bounds; ``attention-factor[d=D]``: the factor a tuple returns, or 1 for a bare
    array, is the convention's ``A``.
``call[d=D:S]``, ``finite[d=D:S]``, ``formula[d=D:S]``
    (rope-cache; ``S`` = ``long`` for every position of the grid, ``short`` for ``0..63``,
    with ``:T`` for an ``x-positions`` cache) cos and sin within their bounds;
    ``identity[d=D:S]``: at position 0, cos = A and sin = 0 (``S`` also ``length-N`` for
    the calls of length ``L0`` and ``L0 + 1``); ``prefix[d=D]``: the cache of ``0..32``
    agrees with the first rows of the cache of ``0..99``; ``history[d=D]``: the short call
    (and the ``L0 + 1`` one) made again after the long one is still right.
``call[d=D:T]``, ``finite[d=D:T]``, ``formula[d=D:T]``, ``passthrough[d=D:T]``, ``norm[d=D:T]``, ``identity[d=D:T]``
    (rope-apply) the rotated ``x`` within its bounds; the features beyond ``rotary_dim`` bit
    for bit; each rotated pair keeps its length times A; position 0 gives ``A x``;
    ``relative[d=D]``: ``q(m) . k(n)`` equals ``q(m + S) . k(n + S)`` for ``S = 65536``
    (less when ``--max-positions`` is smaller); ``history[d=D]``: the short call (and the
    ``L0 + 1`` one) again after the long one; ``length-N`` slots as for caches, float32 x.
``determinism``, ``aliasing``, ``global-state``
    as for tables (:mod:`posenc_spec.families.sinusoidal.grid`).
``dtype-order[d=D]``, ``decode[d=D]``, ``offsets[d=D]``, ``grow[d=D]``, ``batch[d=D]``, ``rows[d=D]``, ``view[d=D]``
    the call sequences, after the grid at a head size it never asks, or before it at a
    declared head size (:mod:`posenc_spec.families.rope.sequences`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.calls import ArrayArg, CallRequest, held_in

X_DTYPES = ("float32", "bfloat16", "float16")
SHORT = 64
LONGEST = 131072
RANDOM_DRAWS = 32
PREFIX_LENGTHS = (33, 100)
LENGTHS = (SHORT, 8193)  # a "length" cache: positions 0..L-1
RELATIVE_SHIFT = 65536
RELATIVE_ROWS = 16
HEADS = 2  # heads of x: the relative check reads head 0 as q and head 1 as k
POSITION_SEED = 20240515
X_SEED = 314159


LENGTH_DEPENDENT = ("dynamic", "longrope")


def longest_length(convention, max_positions=None) -> int | None:
    """The longest call the grid makes: ``max_positions`` (None: no cap), except where it
    is dynamic's ``L0`` (see the module docstring)."""
    if convention.rope_type == "dynamic" and convention.param("original_max_position_embeddings") is None:
        return None
    return max_positions


def switch_lengths(convention, max_positions=None) -> tuple[int, ...]:
    """``(L0, L0 + 1)`` for a type whose frequencies follow the call's length, within the cap; else ``()``."""
    if convention.rope_type not in LENGTH_DEPENDENT:
        return ()
    cap, l0 = longest_length(convention, max_positions), convention.original_length()
    return tuple(length for length in (l0, l0 + 1) if length > SHORT and (cap is None or length <= cap))


def grid_positions(convention, max_positions=None) -> np.ndarray:
    """Every position of the long calls, sorted (see the module docstring)."""
    cap = longest_length(convention, max_positions)
    if cap is not None:
        top = cap - 1
    else:
        top = max(LONGEST, max_positions or 0)
    found = set(range(SHORT))
    for power in range(7, 18):
        found |= {2**power - 1, 2**power, 2**power + 1}
    for anchor in (convention.param("original_max_position_embeddings"), max_positions):
        if anchor:
            found |= {value for value in range(anchor - 2, anchor + 3) if value >= 0}
    found |= set(np.random.default_rng(POSITION_SEED).integers(0, top, size=RANDOM_DRAWS, endpoint=True).tolist())
    return np.array(sorted(value for value in found if value <= top), dtype=np.int64)


def capped(positions: np.ndarray, cap: int | None) -> np.ndarray:
    return positions if cap is None else positions[positions < cap]


def switch_positions(length: int) -> np.ndarray:
    """A call of length ``length``: ``0..63`` and the two positions below it."""
    return np.unique(np.concatenate([np.arange(SHORT), [length - 2, length - 1]])).astype(np.int64)


def x_values(head_dim: int, rows: int, dtype: str, seed_offset: int = 0) -> np.ndarray:
    """Seeded ``(HEADS, rows, head_dim)`` values, exact in ``dtype``."""
    generator = np.random.default_rng(X_SEED + 1000 * head_dim + seed_offset)
    return held_in(generator.standard_normal((HEADS, rows, head_dim)), dtype)


# How each x layout's memory is laid out when x is handed over as a view (the view
# sequence): the axes in this order, then viewed back as the layout (bhsd from bshd
# memory, as transformers' q; bshd from bhsd; sbhd from bshd; thd from htd).
VIEW_ORDER = {"bhsd": (0, 2, 1, 3), "bshd": (0, 2, 1, 3), "sbhd": (1, 0, 2, 3), "thd": (1, 0, 2)}
# x as the target takes it, from the canonical (batch, heads, seq, head_dim)
_TO_LAYOUT = {"bshd": lambda x: x.transpose(0, 2, 1, 3), "bhsd": lambda x: x,
              "sbhd": lambda x: x.transpose(2, 0, 1, 3), "thd": lambda x: x[0].transpose(1, 0, 2)}
_FROM_LAYOUT = {"bshd": lambda y: y.transpose(0, 2, 1, 3), "bhsd": lambda y: y,
                "sbhd": lambda y: y.transpose(1, 2, 0, 3), "thd": lambda y: y.transpose(1, 0, 2)[None]}


def to_layout(x: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(_TO_LAYOUT[layout](x))


def from_layout(y: np.ndarray, layout: str) -> np.ndarray:
    """A result in ``layout`` back in the canonical ``(1, heads, seq, head_dim)``."""
    return _FROM_LAYOUT[layout](y)


@dataclass(frozen=True, eq=False)
class RopeProbe:
    """One call of a RoPE target. ``kind``: freqs, cache or apply; ``role``: ``table`` (the
    ordinary checks), ``prefix``, ``history``, ``relative``, ``repeat`` or ``sequence`` (one
    check each; the calls of a sequence share it: :mod:`.sequences`). ``positions`` are the
    int64 positions the call covers, ``(seq,)``, or ``(batch, seq)`` where each row of a
    batch has its own; ``x`` the canonical ``(batch, heads, seq, head_dim)`` values of an
    apply or x-positions call, exact in ``x_dtype``, handed over as a non-contiguous view
    when ``view``; ``note`` says what a call of a sequence is."""

    slot: str
    kind: str
    role: str
    head_dim: int
    positions: np.ndarray | None = None
    x: np.ndarray | None = None
    x_dtype: str | None = None
    check_id: str | None = None
    repeats: str | None = None
    rng: str = "a"
    call: str = "positions"
    x_layout: str = "bshd"
    inputs: tuple = ()  # what an apply call hands beside x and positions (cos and sin, or freqs_cis)
    view: bool = False
    note: str = ""

    @property
    def rows(self) -> np.ndarray:
        """The positions as ``(batch, seq)``: one row each."""
        return self.positions if self.positions.ndim == 2 else self.positions[None]

    def check_ids(self) -> list[str]:
        if self.role != "table":
            return [self.check_id]
        names = {"freqs": ("call", "finite", "formula", "attention-factor"),
                 "cache": ("call", "finite", "formula", "identity"),
                 "apply": ("call", "finite", "formula", "passthrough", "norm", "identity")}[self.kind]
        return [f"{name}[{self.slot}]" for name in names]

    def request(self, label: str | None = None) -> CallRequest:
        label = label or self.slot
        if self.kind == "freqs":
            return CallRequest(label, (self.head_dim,), (self.head_dim // 2,), max_items=2)
        positions = ArrayArg(self.positions, "int64", "torch", "positions")
        if self.kind == "apply":
            order = VIEW_ORDER[self.x_layout] if self.view else None
            x = ArrayArg(to_layout(self.x, self.x_layout), self.x_dtype, "torch", "x", order)
            return CallRequest(label, (x, positions, *self.inputs), (self.x.size,), rng=self.rng)
        cache_size = self.positions.size * self.head_dim  # as large as the widest legitimate form: (L, r) twice
        if self.call == "length":
            return CallRequest(label, (self.positions.size, self.head_dim), (cache_size,), max_items=2,
                               allow_complex=True, rng=self.rng)
        if self.call == "batched":
            positions = ArrayArg(self.rows, "int64", "torch", "positions")
        if self.call == "x-positions":
            x = ArrayArg(np.ascontiguousarray(self.x[:, 0]), self.x_dtype, "torch", "x")  # (batch, seq, head_dim)
            return CallRequest(label, (x, ArrayArg(self.rows, "int64", "torch", "positions")),
                               (cache_size,), max_items=2, allow_complex=True, rng=self.rng)
        return CallRequest(label, (positions, self.head_dim), (cache_size,), max_items=2, allow_complex=True,
                           rng=self.rng)


def _head_probes(spec, api: str, head_dim: int, long_positions: np.ndarray, cap: int | None,
                 switches: tuple[int, ...]) -> list[RopeProbe]:
    d = f"d={head_dim}"
    if api == "rope-freqs":
        return [RopeProbe(d, "freqs", "table", head_dim)]
    short = capped(np.arange(SHORT, dtype=np.int64), cap)
    calls = [("short", short)] + [(f"length-{length}", switch_positions(length)) for length in switches]
    if api == "rope-cache":
        return _cache_probes(spec, head_dim, calls, long_positions, cap, switches)
    probes = [RopeProbe(f"{d}:{dtype}", "apply", "table", head_dim, long_positions,
                        x_values(head_dim, long_positions.size, dtype)[None], dtype, x_layout=spec.x_layout)
              for dtype in X_DTYPES]
    probes[0:0] = [RopeProbe(f"{d}:{name}", "apply", "table", head_dim, positions,
                             x_values(head_dim, positions.size, "float32")[None], "float32", x_layout=spec.x_layout)
                   for name, positions in calls[1:]]
    rows = np.arange(min(RELATIVE_ROWS, cap or RELATIVE_ROWS), dtype=np.int64)
    shift = RELATIVE_SHIFT if cap is None else min(RELATIVE_SHIFT, cap - rows.size)
    x = x_values(head_dim, rows.size, "float32", 1)[None]
    probes.append(RopeProbe(f"{d}:relative", "apply", "relative", head_dim,
                            np.concatenate([rows, rows + shift]), np.concatenate([x, x], axis=2), "float32",
                            check_id=f"relative[{d}]", x_layout=spec.x_layout))
    for name, positions in _again(calls):
        probes.append(RopeProbe(f"{d}:{name}-again", "apply", "history", head_dim, positions,
                                x_values(head_dim, positions.size, "float32")[None], "float32",
                                check_id=f"history[{d}]", x_layout=spec.x_layout))
    return probes


def _again(calls):
    """The calls made again after the long one: the call just past ``L0`` first (a short
    call before it could reset a kept state), then the short call."""
    return calls[2:3] + calls[:1]


def _cache_probes(spec, head_dim, calls, long_positions, cap, switches) -> list[RopeProbe]:
    d = f"d={head_dim}"
    if spec.cache_call == "length":
        long_positions = capped(np.arange(LENGTHS[1], dtype=np.int64), cap)
        calls = calls[:1] + [(name, np.arange(length, dtype=np.int64))
                             for (name, _), length in zip(calls[1:], switches, strict=True)]
    dtypes = X_DTYPES if spec.cache_call == "x-positions" else (None,)
    first = dtypes[0]

    def probe(slot, role, positions, dtype, check_id=None):
        x = x_values(head_dim, positions.size, dtype)[None] if dtype else None
        return RopeProbe(slot, "cache", role, head_dim, positions, x, dtype, check_id=check_id, call=spec.cache_call)

    probes = []
    for dtype in dtypes:
        suffix = f":{dtype}" if dtype else ""
        named = calls if dtype == first else calls[:1]
        for name, positions in [*named, ("long", long_positions)]:
            probes.append(probe(f"{d}:{name}{suffix}", "table", positions, dtype))
    probes += [probe(f"{d}:{name}-again", "history", positions, first, f"history[{d}]") for name, positions in
               _again(calls)]
    for length in PREFIX_LENGTHS:
        probes.append(probe(f"{d}:prefix-{length}", "prefix", capped(np.arange(length, dtype=np.int64), cap), first,
                            f"prefix[{d}]"))
    return probes


def probes_for(spec, api: str, max_positions=None) -> list[RopeProbe]:
    """Every call, in order: per head size its calls, then the determinism repeat."""
    long_positions = grid_positions(spec.convention, max_positions)
    cap = longest_length(spec.convention, max_positions)
    switches = switch_lengths(spec.convention, max_positions)
    probes = [probe for head_dim in spec.head_dims
              for probe in _head_probes(spec, api, head_dim, long_positions, cap, switches)]
    first = next(probe for probe in probes if probe.role == "table")
    probes.append(RopeProbe(first.slot, first.kind, "repeat", first.head_dim, first.positions, first.x, first.x_dtype,
                            check_id="determinism", repeats=first.slot, rng="b", call=first.call,
                            x_layout=first.x_layout))
    return probes


def with_rotation(probes, spec, signature: str, compact: bool = False) -> list[RopeProbe]:
    """The apply calls handing the target the declared convention's own rotation, as real
    apply functions take it (:mod:`posenc_spec.gate.signatures`): cos and sin of
    ``x``'s rows in the declared pair layout, rounded to ``x``'s dtype (``q-k-cos-sin``,
    shape ``(1, seq, r)``), or ``freqs_cis = cos + i sin`` in complex64 (``xq-xk-freqs-cis``,
    ``(seq, r/2)``), or with ``compact`` cos and sin each ``(batch, seq, r/2)`` (GPT-J's and
    flash-attn's); the attention factor inside when it is in-cache."""
    from posenc_spec.families.rope import oracle

    made = []
    for probe in probes:
        if probe.kind == "apply":
            length = int(probe.positions.max()) + 1  # the call's length, for every row
            parts = [oracle.cache(row, spec.convention, probe.head_dim, length) for row in probe.rows]
            cos, sin = np.stack([cos for cos, _ in parts]), np.stack([sin for _, sin in parts])
            if signature == "xq-xk-freqs-cis":  # one row: (seq, r/2)
                inputs = (ArrayArg((cos[0] + 1j * sin[0]).astype(np.complex64), "complex64", "torch", "freqs_cis"),)
            else:  # (batch, seq, r), one row for every row of positions
                inputs = tuple(ArrayArg(held_in(part if compact else oracle.expand(part, spec.rope_layout),
                                                probe.x_dtype),
                                        probe.x_dtype, "torch", name) for name, part in (("cos", cos), ("sin", sin)))
            probe = dataclasses.replace(probe, inputs=inputs)
        made.append(probe)
    return made


def plan_ids(probes) -> list[str]:
    """Every check id a run over ``probes`` reports, in report order (the calls of a
    sequence, and the history calls, share one)."""
    ids = ["import"]
    for probe in probes:
        ids += [check_id for check_id in probe.check_ids() if check_id not in ids]
    return ids + ["aliasing", "global-state"]
