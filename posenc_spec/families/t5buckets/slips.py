"""Which member of the family a target's buckets are, and which slip of real code makes them so.

What the run holds: the buckets each call returned for the relative positions it was handed
(:class:`Observed`, in the declared sign). Two questions:

- :func:`nearest_member`: the convention (``bidirectional``, ``num_buckets``,
  ``max_distance``, sign) whose buckets these are, each within the float32 band of
  :func:`~.tolerance.bucket_band`; conventions one key away from the declared one first, then
  two, then the counts and distances real code ships. Wrong on purpose or by a slip, a member
  can be declared.
- :func:`diagnose`: the hints. A member other than the declared one names the keys that differ
  (the sign flipped, bidirectional and causal mixed, other settings) with the keys that declare
  it; otherwise each slip of :data:`VARIANTS` is T5's arithmetic with one change, computed
  here as real code computes it (float32 logarithms, or float16, or bfloat16, rounded after
  every operation as torch rounds them), and a slip is named when its buckets are the
  target's on every call (ties, none).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.calls import held_in
from posenc_spec.gate.identify.hint import Hint

from . import tolerance
from .conventions import MAX_NUM_BUCKETS, BucketConvention

# The counts and distances real code ships (T5, LayoutLM 2-D, WavLM, CPM-Ant, others).
COMMON_NUM_BUCKETS = (32, 64, 128, 256, 320, 512)
COMMON_MAX_DISTANCES = (128, 256, 512, 800, 1000, 1024, 2048)
FIT_DTYPE = "float32"
SCREEN_SIZE = 2048  # elements each candidate member is first tried on (then on every call)


@dataclass(frozen=True, eq=False)
class Observed:
    """The buckets one call returned (int64) for the relative positions ``given`` (as the call
    handed them, in the declared sign; int64, the same shape); ``shape`` and ``query_offset``:
    a table call's, else None."""

    given: np.ndarray
    values: np.ndarray
    shape: tuple | None = None
    query_offset: str = "start"


def observed(probe, values, declared: BucketConvention) -> Observed:
    """What one probe's call returned, beside the relative positions it stands for."""
    return Observed(probe.relative_positions(declared), np.asarray(values, dtype=np.int64),
                    probe.shape if probe.kind == "table" else None, probe.query_offset)


# -- members -----------------------------------------------------------------------------------


def is_member(observations, convention: BucketConvention) -> bool:
    """Every call's buckets within ``convention``'s float32 band (the positions read in its sign)."""
    for seen in observations:
        try:
            low, high = tolerance.bucket_band(seen.given, convention, FIT_DTYPE)
        except ValueError:  # float32 cannot place this member's buckets: no target is judged under it
            return False
        if seen.values.shape != low.shape or ((seen.values < low) | (seen.values > high)).any():
            return False
    return True


def _candidates(declared: BucketConvention, observations) -> list[BucketConvention]:
    """Conventions to try, those nearest the declared one first (then by their settings)."""
    top = max((int(seen.values.max()) for seen in observations if seen.values.size), default=0)
    counts = {declared.num_buckets, 2 * declared.num_buckets, declared.num_buckets // 2, top + 1, top + 2,
              *COMMON_NUM_BUCKETS}
    distances = {declared.max_distance, 2 * declared.max_distance, declared.max_distance // 2, *COMMON_MAX_DISTANCES}
    made = []
    for bidirectional, count, distance, sign in itertools.product(
            (declared.bidirectional, not declared.bidirectional), sorted(counts), sorted(distances),
            (declared.relative_position, _other_sign(declared.relative_position))):
        if not 2 <= count <= MAX_NUM_BUCKETS:
            continue
        try:
            made.append(BucketConvention(bidirectional, count, distance, sign))
        except ValueError:  # max_distance at or below max_exact
            continue
    return sorted(made, key=lambda member: (len(changed_keys(declared, member)), member != declared))


def _other_sign(sign: str) -> str:
    return "query-minus-memory" if sign == "memory-minus-query" else "memory-minus-query"


def changed_keys(declared: BucketConvention, member: BucketConvention) -> dict:
    """The keys ``member`` declares where it differs from ``declared``."""
    return {key: value for key, value in member.as_dict().items() if declared.as_dict()[key] != value}


def _sample(seen: Observed, limit: int = SCREEN_SIZE) -> Observed:
    """At most ``limit`` of ``seen``'s elements, evenly spread: what each candidate is screened on."""
    if seen.values.size <= limit:
        return seen
    picked = np.unique(np.linspace(0, seen.values.size - 1, limit).astype(np.int64))
    return Observed(seen.given.reshape(-1)[picked], seen.values.reshape(-1)[picked])


def nearest_member(observations, declared: BucketConvention) -> BucketConvention | None:
    """The member whose buckets every call returned (the declared one if it is; None: no member)."""
    observations = [seen for seen in observations if seen.values.size]
    if not observations:
        return None
    first = [_sample(max(observations, key=lambda seen: seen.values.size))]
    for member in _candidates(declared, observations):
        if is_member(first, member) and is_member(observations, member):
            return member
    return None


# -- slips -------------------------------------------------------------------------------------


def _rounded(values, dtype: str) -> np.ndarray:
    """``values`` rounded to ``dtype`` (float64 back), as torch rounds each operation's result."""
    values = np.asarray(values, dtype=np.float64)
    if dtype == "float64":
        return values
    if dtype == "bfloat16":
        return held_in(values, "bfloat16").astype(np.float64)
    return values.astype(dtype).astype(np.float64)


def _log_argument(far: np.ndarray, e: int, max_distance: int, ratio: str, log_dtype: str):
    """``(what the logarithm is taken of, what it is divided by the logarithm of)`` (see
    :func:`t5_buckets`'s ``ratio``)."""
    if ratio == "floor":
        return _rounded(np.floor_divide(far, e).astype(np.float64), log_dtype), max_distance / e
    if ratio == "distance":
        return _rounded(far.astype(np.float64), log_dtype), max_distance
    return _rounded(_rounded(far.astype(np.float64), log_dtype) / e, log_dtype), max_distance / e


# How the logarithmic position becomes a bucket offset: T5 truncates (``.to(torch.long)``).
ROUNDINGS = {"trunc": np.trunc, "round": np.round, "ceil": np.ceil}


def t5_buckets(relative: np.ndarray, convention: BucketConvention, *, halve=None, max_exact=None, clamp=None,
               log_dtype: str = FIT_DTYPE, wrap32: bool = False, steps=None, ratio: str = "to-max-exact",
               rounding: str = "trunc", query_upper: bool = False, causal_abs: bool = False) -> np.ndarray:
    """T5's ``_relative_position_bucket`` of ``relative`` (in ``convention``'s sign), as
    transformers computes it, with the changes a slip makes: ``halve`` (whether
    ``num_buckets //= 2``), ``max_exact``, ``clamp`` (the last bucket, False: none),
    ``log_dtype`` (below float32 the distance saturated at ``max_distance`` first, as such ports
    do: float16 holds no distance above 65504), ``wrap32`` (the positions cast to int32, and
    worked on in int32), ``steps`` (the count the logarithmic scale is multiplied by, T5's
    ``num_buckets - max_exact``), ``ratio`` (what the logarithm is taken of: ``to-max-exact``
    T5's ``n / max_exact``, ``distance`` ``log(n) / log(max_distance)``, ``floor`` the integer
    quotient ``n // max_exact``), ``rounding`` of the logarithmic position (:data:`ROUNDINGS`),
    ``query_upper`` (bidirectional: the query itself in the upper half, ``>= 0``),
    ``causal_abs`` (causal: later keys bucketed by their distance, ``abs``, not put in bucket 0)."""
    r = np.asarray(relative, dtype=np.int64)
    if convention.relative_position == "query-minus-memory":
        r = -r
    if wrap32:
        r = r.astype(np.int32)
    bidirectional = convention.bidirectional
    half = convention.num_buckets // 2 if (bidirectional if halve is None else halve) else convention.num_buckets
    with np.errstate(over="ignore"):
        if bidirectional:
            first = np.where(r >= 0 if query_upper else r > 0, half, 0)
            n = np.abs(r)
        else:
            first = np.zeros_like(r)
            n = np.abs(r) if causal_abs else -np.minimum(r, 0)
    n = n.astype(np.int64)
    e = half // 2 if max_exact is None else max_exact(half)
    last = half - 1 if clamp is None else clamp(half)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        far = np.minimum(n, convention.max_distance) if log_dtype in ("float16", "bfloat16") else n
        quotient, scale = _log_argument(far, e, convention.max_distance, ratio, log_dtype)
        v = _rounded(np.log(quotient), log_dtype)
        v = _rounded(v / math.log(scale), log_dtype)
        v = _rounded(v * (half - e if steps is None else steps(half, e)), log_dtype)
        offset = ROUNDINGS[rounding](np.nan_to_num(v))
        large = e + np.where(np.isfinite(v), offset, 0).astype(np.int64)
    if last is not False:
        large = np.minimum(large, last)
    return first + np.where(n < e, n, large)


@dataclass(frozen=True)
class Variant:
    """One slip: ``slip`` an id of :data:`~.keys.SLIPS`, ``says`` what the buckets are,
    ``applies`` to which conventions, ``options`` of :func:`t5_buckets`."""

    slip: str
    says: str
    applies: object
    options: dict = dataclasses.field(default_factory=dict)

    def buckets(self, seen: Observed, convention: BucketConvention) -> np.ndarray:
        return t5_buckets(seen.given, convention, **self.options)


def _bidirectional(convention):
    return convention.bidirectional


VARIANTS = (
    Variant("t5-halving-forgotten", "keys after the query start at bucket num_buckets, not num_buckets / 2: "
            "`num_buckets //= 2` is missing from the bidirectional branch", _bidirectional, {"halve": False}),
    Variant("t5-halved-causal", "half the buckets in use for causal attention: `num_buckets //= 2` runs outside "
            "the bidirectional branch", lambda c: not c.bidirectional, {"halve": True}),
    Variant("t5-max-exact-before-halving", "every distance below num_buckets / 2 has a bucket of its own and none "
            "is logarithmic: max_exact was taken from the count before the halving", _bidirectional,
            {"max_exact": lambda half: half}),
    Variant("t5-missing-clamp", "far distances run past the direction's last bucket: the clamp to "
            "num_buckets - 1 is missing", lambda c: True, {"clamp": lambda half: False}),
    Variant("t5-clamp-full-count", "far keys before the query spill into the upper half: the clamp is to the "
            "whole count's last bucket", _bidirectional, {"clamp": lambda half: 2 * half - 1}),
    Variant("t5-int32-overflow", "the buckets of the positions wrapped to int32: they are cast to int32 before "
            "the bucketing", lambda c: True, {"wrap32": True}),
    Variant("t5-log-float16", "the logarithmic buckets of a float16 logarithm", lambda c: True,
            {"log_dtype": "float16"}),
    Variant("t5-log-bfloat16", "the logarithmic buckets of a bfloat16 logarithm", lambda c: True,
            {"log_dtype": "bfloat16"}),
    Variant("t5-rounding", "each logarithmic bucket starts half a step early: the logarithmic position is "
            "rounded (`.round()`) where T5 truncates it", lambda c: True, {"rounding": "round"}),
    Variant("t5-rounding", "every distance inside a logarithmic bucket is moved to the next: the logarithmic "
            "position is rounded up (`ceil`, DeBERTa's) where T5 truncates it", lambda c: True, {"rounding": "ceil"}),
    Variant("t5-log-steps", "the logarithmic scale is multiplied by max_exact - 1 where num_buckets - max_exact "
            "belongs (the last bucket reached only by the clamp)", lambda c: True,
            {"steps": lambda half, e: e - 1}),
    Variant("t5-log-of-distance", "the logarithmic buckets are log(n) / log(max_distance) where T5 takes "
            "log(n / max_exact) / log(max_distance / max_exact)", lambda c: True, {"ratio": "distance"}),
    Variant("t5-integer-division", "the logarithmic buckets step at multiples of max_exact: n // max_exact "
            "(integer division) is taken before the logarithm", lambda c: True, {"ratio": "floor"}),
    Variant("t5-exact-region", "the exact region ends at num_buckets / 4: max_exact = num_buckets // 4 of the whole "
            "count (the bidirectional half's max_exact, written once for both directions)",
            lambda c: not c.bidirectional, {"max_exact": lambda half: half // 4}),
    Variant("t5-query-in-upper-half", "the query itself (relative position 0) is in the upper half: `>= 0` where "
            "`> 0` belongs", _bidirectional, {"query_upper": True}),
    Variant("t5-causal-future-by-distance", "keys after the query are bucketed by their distance (abs) where "
            "causal attention puts them in bucket 0 with the query", lambda c: not c.bidirectional,
            {"causal_abs": True}),
)


def _explains(variant: Variant, observations, declared: BucketConvention) -> bool:
    return all(np.array_equal(variant.buckets(seen, declared), seen.values) for seen in observations)


def _moved(seen: Observed, shift: int, declared: BucketConvention) -> Observed:
    """``seen`` as the buckets of memory − query positions ``shift`` further."""
    signed = -shift if declared.relative_position == "query-minus-memory" else shift
    return dataclasses.replace(seen, given=seen.given + signed)


def _table_slips(observations, declared: BucketConvention) -> list[Hint]:
    """A table whose queries sit at the other end of the keys, or whose offsets are one off."""
    tables = [seen for seen in observations if seen.shape is not None]
    if not tables or len(tables) != len(observations):
        return []
    swapped = []
    for seen in tables:
        q_len, k_len = seen.shape
        shift = (k_len - q_len) * (1 if seen.query_offset == "start" else -1)
        swapped.append(_moved(seen, -shift, declared))
    if any(seen.shape[0] != seen.shape[1] for seen in tables) and is_member(swapped, declared):
        other = "end" if tables[0].query_offset == "start" else "start"
        return [Hint(("t5-query-offset",), f"the table's queries sit at the {other} of the keys, where "
                                           f"{tables[0].query_offset} is declared",
                     (("query_positions", "first" if other == "start" else "last"),))]
    for shift in (1, -1):
        if is_member([_moved(seen, shift, declared) for seen in tables], declared):
            return [Hint(("positions-offset",), f"every offset of the table is {shift:+d} from its declared one: "
                                                "key or query positions start from 1 on one side only")]
    return []


def _member_hint(member: BucketConvention, declared: BucketConvention) -> Hint:
    changed = changed_keys(declared, member)
    slips = []
    if "relative_position" in changed:
        slips.append("t5-sign-flipped")
    if "bidirectional" in changed:
        slips.append("t5-direction")
    if {"num_buckets", "max_distance"} & set(changed):
        slips.append("t5-settings")
    if set(changed) == {"num_buckets"}:  # the same buckets as a halving forgotten, or made where none belongs
        if declared.bidirectional and member.num_buckets == 2 * declared.num_buckets:
            slips.append("t5-halving-forgotten")
        if not declared.bidirectional and member.num_buckets == declared.num_buckets // 2:
            slips.append("t5-halved-causal")
    return Hint(tuple(slips), f"the buckets are those of {member.name()}, where {declared.name()} is declared",
                tuple(changed.items()))


def observations_of(calls, declared: BucketConvention) -> list[Observed]:
    """The :class:`Observed` of each ``(probe, outcome)`` that returned integer buckets of its
    shape, but ``-2**(b-1)`` (no member's code gets it right: it tells nothing apart)."""
    found = []
    for probe, outcome in calls:
        if probe.role not in ("table", "extremes") or not outcome.ok:
            continue
        values = outcome.table
        if values.dtype.kind in "iu" and values.shape == probe.result_shape():
            found.append(observed(probe, values, declared))
    return found


def diagnose(observations, declared: BucketConvention) -> list[Hint]:
    """The hints the run's calls support (see the module docstring); empty when none explains them."""
    observations = [seen for seen in observations if seen.values.size]
    if not observations or is_member(observations, declared):
        return []
    member = nearest_member(observations, declared)
    if member is not None:
        return [_member_hint(member, declared)]
    tables = _table_slips(observations, declared)
    if tables:
        return tables
    found = [variant for variant in VARIANTS
             if variant.applies(declared) and _explains(variant, observations, declared)]
    if len(found) != 1:
        return []
    return [Hint((found[0].slip,), f"{found[0].says} (under {declared.name()})")]
