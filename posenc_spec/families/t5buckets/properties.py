"""The properties a correct bucket function has, each a check returning a
:class:`~posenc_spec.results.CheckResult` with the element it judged worst.

Each check takes the buckets an implementation returned (any integer array), the relative
positions it was handed (same shape, in the declared sign) and the convention; none needs
the others. ``formula`` is the whole specification (every bucket within the band of
:mod:`.tolerance`); the others each state one structural part of it, so that a failure names
what broke:

- ``integer``: the buckets are integers (an embedding looks them up);
- ``range``: every bucket lies in ``0 .. num_buckets - 1``;
- ``exact-small``: a distance below ``max_exact`` is its own bucket (plus the direction's first);
- ``halves``: bidirectional, a key ``n`` after the query is ``H`` buckets above the key ``n``
  before it, whatever the bucket; causal, every key after the query is in bucket 0;
- ``monotone``: within a direction, a larger distance never has a smaller bucket;
- ``saturation``: a distance of ``max_distance`` or more is in its direction's last bucket;
- ``relative-only`` (for a ``(q_len, k_len)`` table): the bucket depends on ``k - q`` alone.

A :class:`~posenc_spec.results.Worst` here is in bucket space: ``error`` the buckets between
the element and the nearest it may hold, ``tolerance`` the band's reach there (0, or 1
where :mod:`.tolerance` admits a neighbour), so that a ratio above 1 fails, as everywhere.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.results import CheckResult, Worst, skipped

from . import oracle
from .conventions import BucketConvention
from .tolerance import DEFAULT_LOG_DTYPE, bucket_band

NAMES = ("integer", "range", "formula", "exact-small", "halves", "monotone", "saturation", "relative-only")


def _result(name: str, passed: bool, message: str, worst: Worst | None = None) -> CheckResult:
    return CheckResult(name, "passed" if passed else "failed", message, worst)


def _worst(flat: int, shape: tuple, actual, expected, tolerance: float = 0.0) -> Worst:
    index = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
    return Worst(index, tuple(shape), float(actual), float(expected), abs(float(actual) - float(expected)),
                 float(tolerance))


def _as_buckets(buckets) -> np.ndarray:
    """The buckets as int64 (an integer array of any width; uint64 beyond int64 clipped, since
    any such bucket is out of range anyway)."""
    values = np.asarray(buckets)
    if values.dtype.kind == "u":
        return np.minimum(values, np.iinfo(np.int64).max).astype(np.int64)
    return values.astype(np.int64)


def _sides(relative_positions, convention: BucketConvention):
    """``(r, n, first, after)``: the positions as int64, each distance (uint64), its
    direction's first bucket, and whether the key comes after the query."""
    r = np.asarray(relative_positions).astype(np.int64)
    n, first = oracle.distances(r, convention)
    after = (r < 0) if convention.relative_position == "query-minus-memory" else (r > 0)
    return r, n, first, after


def _describe(r: np.ndarray, flat: int) -> str:
    return f"relative position {int(r.flat[flat])}"


def check_integer(buckets, name: str = "integer") -> CheckResult:
    """An integer dtype (not bool, not float: an embedding indexes with them)."""
    dtype = np.asarray(buckets).dtype
    ok = dtype.kind in "iu"
    return _result(name, ok, f"buckets of dtype {dtype}" + ("" if ok else ": an embedding needs integer indices"))


def check_range(buckets, convention: BucketConvention, relative_positions, name: str = "range") -> CheckResult:
    """Every bucket in ``0 .. num_buckets - 1``."""
    values = _as_buckets(buckets)
    if values.size == 0:
        return skipped(name, "no buckets")
    clipped = np.clip(values, 0, convention.num_buckets - 1)
    distance = np.abs(values - clipped)
    flat = int(np.argmax(distance))
    ok = distance.flat[flat] == 0
    r = np.asarray(relative_positions)
    message = (f"buckets from {int(values.min())} to {int(values.max())} of {convention.num_buckets}"
               + ("" if ok else f"; {_describe(r, flat)} got {int(values.flat[flat])}"))
    return _result(name, ok, message, _worst(flat, values.shape, values.flat[flat], clipped.flat[flat]))


def check_formula(buckets, convention: BucketConvention, relative_positions, log_dtype=DEFAULT_LOG_DTYPE,
                  name: str = "formula") -> CheckResult:
    """Every bucket the exact one, or a neighbour the band of :mod:`.tolerance` admits; the
    worst element is the failing one of the smallest ``|r|`` (the smallest input that shows it)."""
    values = _as_buckets(buckets)
    r = np.asarray(relative_positions)
    if values.shape != r.shape:
        return _result(name, False, f"shape {values.shape} differs from the relative positions' {r.shape}")
    if values.size == 0:
        return skipped(name, "no buckets")
    exact = oracle.buckets(r, convention)
    low, high = bucket_band(r, convention, log_dtype)
    outside = (values < low) | (values > high)
    neighbours = int(np.count_nonzero(values != exact)) - int(np.count_nonzero(outside))
    within = int(np.count_nonzero(high > low))
    if outside.any():
        flats = np.flatnonzero(outside)
        flat = int(flats[np.argmin(np.abs(r.flat[flats].astype(np.float64)))])
        alternatives = sorted({int(low.flat[flat]), int(high.flat[flat])} - {int(exact.flat[flat])})
        message = (f"{flats.size} of {values.size} buckets wrong under {convention.name()}; the smallest: "
                   f"{_describe(r, flat)} got {int(values.flat[flat])}, expected {int(exact.flat[flat])}"
                   + (f" (or {alternatives[0]}, within rounding)" if alternatives else ""))
    else:
        flat = int(np.argmax(values != exact))
        message = (f"{values.size} buckets under {convention.name()} with a {log_dtype} logarithm: "
                   + (f"{neighbours} a neighbour within rounding of a boundary, the rest exact" if neighbours
                      else "all exact") + (f" ({within} within rounding of a boundary)" if within else ""))
    reach = high.flat[flat] - exact.flat[flat] if values.flat[flat] > exact.flat[flat] \
        else exact.flat[flat] - low.flat[flat]
    return _result(name, not outside.any(), message,
                   _worst(flat, values.shape, values.flat[flat], exact.flat[flat], reach))


def check_exact_small(buckets, convention: BucketConvention, relative_positions,
                      name: str = "exact-small") -> CheckResult:
    """A distance ``n < max_exact`` is bucket ``first + n``, exactly."""
    values = _as_buckets(buckets)
    r, n, first, _ = _sides(relative_positions, convention)
    small = n < convention.max_exact
    if not small.any():
        return skipped(name, "no distance below max_exact")
    expected = first + n.astype(np.int64)
    wrong = small & (values != expected)
    return _first_wrong(name, values, expected, wrong, r,
                        f"{int(np.count_nonzero(small))} distances below max_exact = {convention.max_exact}")


def check_halves(buckets, convention: BucketConvention, relative_positions, name: str = "halves") -> CheckResult:
    """Bidirectional: the bucket of a key ``n`` after the query is ``H`` above that of the key
    ``n`` before it (compared wherever both distances were asked); causal: every key after the
    query is in bucket 0."""
    values = _as_buckets(buckets)
    r, n, _, after = _sides(relative_positions, convention)
    if not convention.bidirectional:
        if not after.any():
            return skipped(name, "no key after the query")
        expected = np.where(after, 0, values)
        return _first_wrong(name, values, expected, after & (values != 0), r,
                            f"{int(np.count_nonzero(after))} keys after the query in bucket 0")
    before = np.flatnonzero(~after & (n > 0))
    distances, first_seen = np.unique(n.flat[before], return_index=True)  # each distance's first bucket before
    mirrors = values.flat[before[first_seen]]
    after_flats = np.flatnonzero(after)
    at = np.minimum(np.searchsorted(distances, n.flat[after_flats]), max(distances.size - 1, 0))
    found = distances.size > 0
    paired_flats = after_flats[distances[at] == n.flat[after_flats]] if found else after_flats[:0]
    if not paired_flats.size:
        return skipped(name, "no distance asked on both sides of the query")
    expected = values.copy()
    expected.flat[paired_flats] = mirrors[at[distances[at] == n.flat[after_flats]]] + convention.half
    paired = np.zeros(values.shape, dtype=bool)
    paired.flat[paired_flats] = True
    return _first_wrong(name, values, expected, paired & (values != expected), r,
                        f"{paired_flats.size} keys after the query {convention.half} buckets above "
                        f"their mirror before it")


def check_monotone(buckets, convention: BucketConvention, relative_positions, name: str = "monotone") -> CheckResult:
    """Within each direction, the bucket never decreases as the distance grows."""
    values = _as_buckets(buckets)
    r, n, _, after = _sides(relative_positions, convention)
    worst = None
    for side in (after, ~after):
        flats = np.flatnonzero(side)
        if flats.size < 2:
            continue
        order = flats[np.argsort(n.flat[flats], kind="stable")]
        ordered = values.flat[order]
        running = np.maximum.accumulate(ordered)
        drops = np.flatnonzero(ordered < running)
        if drops.size:
            at = int(order[drops[0]])
            candidate = (int(n.flat[at]), at, int(running[drops[0]]))
            worst = candidate if worst is None or candidate < worst else worst
    if worst is None:
        return _result(name, True, f"{values.size} buckets non-decreasing in the distance within each direction")
    _, flat, previous = worst
    return _result(name, False, f"{_describe(r, flat)} got {int(values.flat[flat])}, below the bucket {previous} "
                                f"of a smaller distance in its direction",
                   _worst(flat, values.shape, values.flat[flat], previous))


def check_saturation(buckets, convention: BucketConvention, relative_positions,
                     name: str = "saturation") -> CheckResult:
    """A distance of ``max_distance`` or more is in its direction's last bucket."""
    values = _as_buckets(buckets)
    r, n, first, after = _sides(relative_positions, convention)
    far = n >= convention.max_distance
    if not convention.bidirectional:
        far &= ~after
    if not far.any():
        return skipped(name, f"no distance of max_distance = {convention.max_distance} or more")
    expected = first + convention.half - 1
    return _first_wrong(name, values, np.broadcast_to(expected, values.shape), far & (values != expected), r,
                        f"{int(np.count_nonzero(far))} distances from max_distance = {convention.max_distance} on "
                        f"in the last bucket")


def check_relative_only(table, name: str = "relative-only") -> CheckResult:
    """A ``(q_len, k_len)`` table holds one bucket per diagonal ``k - q``."""
    values = _as_buckets(table)
    if values.ndim != 2 or values.size == 0:
        return skipped(name, f"not a non-empty (q_len, k_len) table: shape {values.shape}")
    rows, columns = np.indices(values.shape)
    diagonal = columns - rows
    # Each diagonal's reference is its first element in C order: row max(0, -d), column max(0, d).
    expected = values[np.maximum(0, -diagonal), np.maximum(0, diagonal)]
    wrong = values != expected
    if not wrong.any():
        return _result(name, True, f"{values.shape[0]}x{values.shape[1]} table constant along its "
                                   f"{sum(values.shape) - 1} diagonals")
    flat = int(np.flatnonzero(wrong)[0])
    q, k = np.unravel_index(flat, values.shape)
    return _result(name, False, f"[{q}, {k}] (k - q = {k - q}) got {int(values.flat[flat])} where the diagonal "
                                f"holds {int(expected.flat[flat])}",
                   _worst(flat, values.shape, values.flat[flat], expected.flat[flat]))


def _first_wrong(name, values, expected, wrong, r, what: str) -> CheckResult:
    """Passed when nothing is ``wrong``, else failed naming the smallest relative position that is."""
    if not wrong.any():
        return _result(name, True, what)
    flats = np.flatnonzero(wrong)
    flat = int(flats[np.argmin(np.abs(r.flat[flats].astype(np.float64)))])
    return _result(name, False, f"{what}: {int(wrong.sum())} not; {_describe(r, flat)} got "
                                f"{int(values.flat[flat])}, expected {int(expected.flat[flat])}",
                   _worst(flat, values.shape, values.flat[flat], expected.flat[flat]))
