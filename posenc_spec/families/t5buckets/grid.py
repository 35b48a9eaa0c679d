"""The calls a gate makes of a T5-bucket target, the signatures real code has, and the check ids.

Signatures (``signature``; ``keywords`` renames the roles ``relative_position``,
``bidirectional``, ``num_buckets``, ``max_distance``, ``query_length``, ``key_length`` to the
callee's parameter names; a role named ``"causal"`` is passed negated, one named ``""`` is not
passed; every bucket result is an integer array of the input's shape)::

    signature   the target is called as                          real code
    static      fn(relative_position, bidirectional=,            transformers T5Attention, MT5Attention,
                   num_buckets=, max_distance=)                   LongT5Attention, SwitchTransformersAttention,
                -> buckets, the shape of relative_position        Pix2StructTextAttention, Pop2PianoAttention,
                                                                  UdopAttention ._relative_position_bucket;
                                                                  layoutlmv2's relative_position_bucket;
                                                                  MPNetEncoder.relative_position_bucket
                                                                  (bidirectional only: {bidirectional = ""});
                                                                  ProphetNet's compute_relative_buckets
                                                                  ({relative_position = "relative_positions",
                                                                  bidirectional = "is_bidirectional"});
                                                                  x-transformers' RelativePositionBias.
                                                                  _relative_position_bucket ({bidirectional =
                                                                  "causal"}); GluonNLP's relative_position_bucket
                                                                  (relative_position = "query-minus-memory")
    method      obj.METHOD(relative_position), obj built by       UMT5Attention(config)._relative_position_bucket,
                init with the declared settings                   WavLMAttention(..., num_buckets=,
                                                                  max_distance=)._relative_positions_bucket,
                                                                  LayoutLMv3Encoder.relative_position_bucket and
                                                                  CpmAntSegmentPositionEmbedding._position_bucket
                                                                  (settings as keywords)
    table       fn(query_length, key_length) -> (q, k) buckets    torchtune's _calc_birectional_rel_pos_to_bucket
                of r = k - (q + offset)                           (num_buckets, max_dist, max_seq_len): square,
                                                                  {query_length = "max_seq_len", key_length = ""}
    bias        obj.METHOD(q_len, k_len) -> (..., heads, q, k),   T5Attention.compute_bias(q, k), WavLMAttention.
                the gate first fills the embedding EMBEDDING      compute_bias(q, k) (heads, q, k); x-transformers'
                with row b = b (exact in float32 below 2**24),    RelativePositionBias(scale=1).forward(i, j) (the
                so that the bias read back is the bucket          queries the last i keys: query_offset = "end");
                                                                  torchtune's T5EncoderRelativePositionBias.forward()
                                                                  (square, its max_seq_len); MPNetEncoder.
                                                                  compute_position_bias(x), x (1, L, hidden)

``query_offset`` (tables and biases): ``start`` (query ``i`` at position ``i``, T5's
``compute_bias`` without a cache) or ``end`` (the queries are the last ``q_len`` of the keys:
x-transformers, and T5's ``compute_bias`` with ``past_seen_tokens = k_len - q_len``).

The calls (``S`` names a slot)::

    positions calls (static, method): relative positions as a 1-D torch tensor
      int64, int32       every r in [-4 max_distance, 4 max_distance] (beyond DENSE_LIMIT
                         values: that range's bucket starts and their neighbours, both signs,
                         every r up to 4 max_exact, and the powers of two), each dtype
      int64:2d           the (q, k) matrix T5's compute_bias hands it with past_seen_tokens = 2M:
                         k - (q + 2M), shape (17, 4M + 1)
      extremes:D         the largest distances a dtype holds: +-(2**(b-1) - 1), +-(2**(b-1) - 2)
                         (and, int64: +-2**31, +-2**32, +-(2**53 + 1))
      int-min:D          -2**(b-1) alone: no difference of two non-negative positions a dtype
                         holds reaches it (they span +-(2**(b-1) - 1)), and abs() returns it
                         unchanged (negative): nearly every implementation in the ecosystem gives
                         a wrong bucket there. What a target does there is a note, never a
                         failure (:func:`unreachable`); the extremes above are differences a
                         caller can pass (the largest position minus 0, and 0 minus it)
    table calls (table, bias): (q_len, k_len) of (1, 1), (5, 9), (9, 5), (1, L), (L, L) with
      L = min(max_distance + 2, TABLE_LIMIT); the square ones alone for a square-only target

    With ``max_positions`` N declared (the model's longest sequence: positions 0 .. N-1), no
    call hands a relative position beyond N - 1 either way: the positions calls keep those
    within it, ``int64:2d`` shrinks to fit, ``extremes:D`` are the largest distances N allows,
    +-(N - 1) and +-(N - 2) (within the dtype), and ``int-min:D`` is not called (it is further
    still); no table or decode call is longer than N.

    decode sequence (table, bias, with query_positions = last and both lengths): after the
      grid, a prefill of P x P (P = min(max_distance + 3, TABLE_LIMIT - 3), a size the grid never
      asks) and three decoding steps of one query, 1 x (P + 1), 1 x (P + 2), 1 x (P + 3), on the
      same module, each judged exactly: ``decode``

Every call expects integers (int32 or int64: :class:`~posenc_spec.gate.calls.CallRequest`'s
``allow_integer``); a bias comes back as the buckets its embedding was read through
(:mod:`.adapters`).

Check ids: ``call[S]``, ``integer[S]``, ``range[S]``, ``formula[S]``, ``exact-small[S]``,
``halves[S]``, ``monotone[S]``, ``saturation[S]`` for each slot; ``relative-only[S]`` for a
table; ``call[extremes:D]`` and ``formula[extremes:D]``; ``call[int-min:D]`` and
``int-min[D]`` (the formula at that one input: noted, not failed, where the call raises,
crashes or gives another bucket); ``determinism`` (the first slot again, bit
for bit); ``aliasing`` and ``global-state`` (as for every family). The judge of each call is
:mod:`.judge`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.calls import ArrayArg, CallRequest

from . import oracle
from .conventions import BucketConvention

SIGNATURES = ("static", "method", "table", "bias")
QUERY_OFFSETS = ("start", "end")
ROLES = ("relative_position", "bidirectional", "num_buckets", "max_distance", "query_length", "key_length")
DENSE_LIMIT = 1 << 20
TABLE_LIMIT = 2049
TWO_D_ROWS = 17
POSITION_CHECKS = ("call", "integer", "range", "formula", "exact-small", "halves", "monotone", "saturation")
TABLE_CHECKS = (*POSITION_CHECKS, "relative-only")


@dataclass(frozen=True, eq=False)
class Probe:
    """One call. ``kind``: ``positions`` (``values`` the int64 relative positions, handed in
    ``dtype``, in the declared sign) or ``table`` (``shape`` the ``(q_len, k_len)`` asked);
    ``role``: ``table`` (the ordinary checks), ``extremes``, ``int-min`` or ``repeat`` (the
    first call again, for the core's ``determinism``)."""

    slot: str
    kind: str
    role: str = "table"
    values: np.ndarray | None = None
    dtype: str = "int64"
    shape: tuple[int, int] | None = None
    query_offset: str = "start"

    def check_ids(self) -> list[str]:
        if self.role == "repeat":
            return ["determinism"]
        if self.role == "sequence":
            return ["decode"]
        if self.role == "extremes":
            return [f"call[{self.slot}]", f"formula[{self.slot}]"]
        if self.role == "int-min":
            return [f"call[{self.slot}]", f"int-min[{self.dtype}]"]
        names = TABLE_CHECKS if self.kind == "table" else POSITION_CHECKS
        return [f"{name}[{self.slot}]" for name in names]

    @property
    def check_id(self) -> str:
        """The check the call decides last: the formula of its slot, ``determinism`` or ``decode``."""
        return self.check_ids()[-1] if self.role != "table" else f"formula[{self.slot}]"

    @property
    def repeats(self) -> str | None:
        """The slot a repeat call repeats (None for the others)."""
        return self.slot if self.role == "repeat" else None

    def result_shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape) if self.kind == "positions" else tuple(self.shape)

    def request(self, label: str | None = None) -> CallRequest:
        """The call: the relative positions as a torch tensor of the probe's dtype, or the
        table's two lengths; integers expected back."""
        if self.kind == "positions":
            args = (ArrayArg(self.values, self.dtype, "torch", "relative_position"),)
        else:
            args = tuple(self.shape)
        return CallRequest(label or self.slot, args, self.result_shape(), allow_integer=True,
                           rng="b" if self.role == "repeat" else "a")

    def relative_positions(self, convention: BucketConvention) -> np.ndarray:
        """What the buckets returned must be the buckets of (int64, the result's shape)."""
        if self.kind == "positions":
            return self.values
        q_len, k_len = self.shape
        offset = k_len - q_len if self.query_offset == "end" else 0
        relative = np.arange(k_len, dtype=np.int64)[None, :] - (np.arange(q_len, dtype=np.int64)[:, None] + offset)
        return -relative if convention.relative_position == "query-minus-memory" else relative


def dense_positions(convention: BucketConvention, max_positions: int | None = None) -> np.ndarray:
    """The relative positions of the ``int64`` and ``int32`` slots (memory - query, sorted), none
    beyond ``max_positions - 1`` either way."""
    reach = 4 * convention.max_distance if max_positions is None else min(4 * convention.max_distance,
                                                                          max_positions - 1)
    if 2 * reach + 1 <= DENSE_LIMIT:
        return np.arange(-reach, reach + 1, dtype=np.int64)
    starts = np.array(oracle.bucket_starts(convention), dtype=np.int64)
    found = np.concatenate([starts - 1, starts, np.arange(4 * convention.max_exact + 1),
                            [convention.max_distance - 1, convention.max_distance, convention.max_distance + 1, reach],
                            2 ** np.arange(int(reach).bit_length())])
    found = np.unique(found[(found >= 0) & (found <= reach)])
    return np.unique(np.concatenate([-found, found]))


def _declared(relative: np.ndarray, convention: BucketConvention) -> np.ndarray:
    """Memory-minus-query positions in the declared sign."""
    return -relative if convention.relative_position == "query-minus-memory" else relative


def extremes(dtype: str, max_positions: int | None = None) -> np.ndarray:
    """The ``extremes:D`` inputs: the largest distances of both signs a dtype holds, or those
    ``max_positions`` allows (at most ``max_positions - 1``)."""
    top = int(np.iinfo(dtype).max)
    if max_positions is not None:
        longest = min(max_positions - 1, top)
        values = [longest, max(longest - 1, 0)]
    else:
        values = [top, top - 1]
    if dtype == "int64" and max_positions is None:
        values += [2**31, 2**32, 2**53 + 1]
    return np.array(sorted({sign * value for value in values for sign in (-1, 1)}), dtype=np.int64)


def unreachable(dtype: str) -> str:
    """Why ``-2**(b-1)`` of ``dtype`` is no input a caller passes, for the note that says what a
    target did there."""
    bits = np.iinfo(dtype).bits - 1
    return (f"-2**{bits} is no difference of two {dtype} positions (those span -(2**{bits} - 1) .. 2**{bits} - 1): "
            "no caller passes it")


def probes_for(convention: BucketConvention, signature: str = "static", query_offset: str = "start",
               square_only: bool = False, max_positions: int | None = None) -> list[Probe]:
    """Every call of a target of this signature, in order, the determinism repeat last; none
    hands a relative position beyond ``max_positions - 1`` (see the module docstring)."""
    if signature not in SIGNATURES:
        raise ValueError(f"signature must be one of {', '.join(SIGNATURES)}, got {signature!r}")
    longest = TABLE_LIMIT if max_positions is None else max_positions
    if signature in ("static", "method"):
        dense = _declared(dense_positions(convention, max_positions), convention)
        # The (q, k) matrix spans k - (q + past) for q < rows, k <= 2 past: |r| <= rows - 1 + past.
        rows = min(TWO_D_ROWS, longest)
        past = min(2 * convention.max_distance, DENSE_LIMIT // (2 * TWO_D_ROWS), longest - rows)
        two_d = np.arange(2 * past + 1, dtype=np.int64)[None, :] - (np.arange(rows, dtype=np.int64)[:, None]
                                                                     + past)
        probes = [Probe("int64", "positions", values=dense, dtype="int64")]
        if dense.size and np.abs(dense).max() <= np.iinfo(np.int32).max:
            probes.append(Probe("int32", "positions", values=dense, dtype="int32"))
        probes.append(Probe("int64:2d", "positions", values=_declared(two_d, convention), dtype="int64"))
        for dtype in ("int32", "int64"):
            probes.append(Probe(f"extremes:{dtype}", "positions", "extremes", extremes(dtype, max_positions), dtype))
            if max_positions is None:  # -2**(b-1) is beyond any declared bound
                minimum = np.array([np.iinfo(dtype).min], dtype=np.int64)
                probes.append(Probe(f"int-min:{dtype}", "positions", "int-min", minimum, dtype))
    else:
        side = min(convention.max_distance + 2, TABLE_LIMIT, longest)
        shapes = [(1, 1), (side, side)] if square_only else [(1, 1), (5, 9), (9, 5), (1, side), (side, side)]
        shapes = list(dict.fromkeys((min(q, longest), min(k, longest)) for q, k in shapes))
        probes = [Probe(f"{q}x{k}", "table", shape=(q, k), query_offset=query_offset) for q, k in shapes]
    first = probes[0]
    probes.append(Probe(first.slot, first.kind, "repeat", first.values, first.dtype, first.shape, first.query_offset))
    return probes


def decode_probes(convention: BucketConvention, signature: str, query_offset: str, square_only: bool,
                  max_positions: int | None = None) -> list[Probe]:
    """The decode sequence (see the module docstring); none where the queries are not the last
    keys, one length is all the target takes, or ``max_positions`` leaves no room for a prefill
    and three steps."""
    longest = TABLE_LIMIT if max_positions is None else min(max_positions, TABLE_LIMIT)
    if signature not in ("table", "bias") or query_offset != "end" or square_only or longest < 4:
        return []
    prefill = min(convention.max_distance + 3, longest - 3)
    shapes = [(prefill, prefill), *((1, prefill + step) for step in (1, 2, 3))]
    return [Probe(f"decode:{q}x{k}", "table", "sequence", shape=(q, k), query_offset="end") for q, k in shapes]


def plan_ids(probes) -> list[str]:
    """The check ids of a run, in order: ``import`` first, ``aliasing`` and ``global-state`` last."""
    ids = ["import"]
    for probe in probes:
        ids += [check_id for check_id in probe.check_ids() if check_id not in ids]
    return [*ids, "aliasing", "global-state"]


# -- the same calls in-process (the tests and the corpus): how a probe is handed to code of each
# signature, and its buckets read back, by the child's own rules (:mod:`.adapters`) ---------------


def keyword_arguments(convention: BucketConvention, keywords: dict | None = None, **values) -> dict:
    """The convention's settings and ``values`` (``relative_position``, ``query_length`` ...)
    under the callee's names: ``keywords`` maps a role to its parameter name, ``"causal"``
    passing the flag negated, ``""`` not passing it (the child's rule: :func:`.adapters.keywords`)."""
    settings = {"bidirectional": convention.bidirectional, "num_buckets": convention.num_buckets,
                "max_distance": convention.max_distance}
    from . import adapters  # the child's rule, read here for in-process calls

    names = {role: (keywords or {}).get(role, role) for role in (*settings, *values)}
    return adapters.keywords(names, settings, **values)


def positions_tensor(probe: Probe):
    """The probe's relative positions as the torch tensor of its dtype."""
    import torch

    return torch.tensor(probe.values, dtype=getattr(torch, probe.dtype))


def call_positions(function, probe: Probe, convention: BucketConvention, keywords: dict | None = None,
                   settings_from_object: bool = False) -> np.ndarray:
    """A static call ``function(relative_position=..., bidirectional=..., ...)``, or with
    ``settings_from_object`` a method's ``function(relative_position)`` (the object holds them)."""
    import torch

    with torch.no_grad():
        positions = positions_tensor(probe)
        if settings_from_object:
            return np.asarray(function(positions))
        return np.asarray(function(**keyword_arguments(convention, keywords, relative_position=positions)))


def call_table(function, probe: Probe, convention: BucketConvention, keywords: dict | None = None) -> np.ndarray:
    """A table call ``function(query_length=q, key_length=k, bidirectional=..., ...)``."""
    import torch

    q_len, k_len = probe.shape
    with torch.no_grad():
        return np.asarray(function(**keyword_arguments(convention, keywords, query_length=q_len, key_length=k_len)))


def bias_buckets(module, embedding: str, read, q_len: int, k_len: int) -> np.ndarray:
    """A bias module's ``(q_len, k_len)`` buckets, read back as the child reads them
    (:func:`.adapters.fill_embedding`, :func:`.adapters.bias_buckets`): ``read(module)``
    returns the bias ``(..., q_len, k_len)``; int64 where every head agrees and every value is
    whole, else the floats as read (``integer`` then fails); a ``BadResult`` when heads differ."""
    import torch

    from . import adapters

    module = module.eval()
    with torch.no_grad():
        adapters.fill_embedding(module, embedding)
        return adapters.bias_buckets(read(module), q_len, k_len)
