"""Which slip makes a sinusoidal table differ from its declaration, read from the tables a
run already holds.

Every hint is an explanation that the gate's own judgement confirms: a *variant* of the
declared convention, one or two slips away from it, that the target's tables match element
by element within the bounds of :mod:`posenc_spec.tolerance`. The variants tried:

- the declared convention with one of its fields changed the way a common slip changes it:
  sin and cos swapped, the other layout, the other denominator (``half_dim`` against
  ``half_dim - 1``), ``i/d`` for ``2i/d`` (the square root of the base), ``log10`` or
  ``log2`` for the natural logarithm, the scale applied twice or dropped, the angle's sign,
  positions off by one;
- slips that depend on the table's size: ``d - 1`` for ``d``, the exponent over the number
  of positions, ``log(base) / half_dim - 1``, positions counted down from the end, positions
  from ``linspace(0, n, n)``;
- slips of the values: the columns in reverse order, a table built features by positions
  and reshaped (not transposed), every value multiplied by one factor (``sqrt(d)``, or each
  row normalised);
- the member of the family :mod:`.fit` finds (unless its fastest frequency aliases between
  rows), with every field that can go back to the declared value put back, described field
  by field (a base, an offset, a scale the code has);
- at a single width the denominator and the base trade off exactly (``h - s`` and ``base``
  give the same frequencies as ``h - s'`` and ``base ** ((h - s') / (h - s))``): there each
  variant's twin is tried too, and when both explain the tables the hint names both.

A variant must match every table (the passing ones too); the one with the fewest slips is
named, and when several share that count, all of them are, as possible causes. Slips that
move the positions of some rows only are read from the failing tables alone (code often
rounds only beyond a cached length): positions formed in float16 or bfloat16 (each moved
row right at one of its position's two neighbours in that type: rounded, truncated or
accumulated by ``arange``), positions clamped to a buffer's last row, positions wrapped
around a buffer; every row the slip leaves alone must match the declared convention, and
the hint names the first row where the slip shows. Then one function in both columns of
each pair (a line copied: ``sin`` where ``cos`` belongs), frequencies or angles made the way a
slip makes them that no member has (:mod:`.frequencies`), and arithmetic in float16 or bfloat16
at one stage (the channel index, the frequencies, the output, the angle: :mod:`.narrow`).
What none of these explains gets no hint: a false hint is a false alarm.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import Convention
from posenc_spec.families.sinusoidal.fit import Sample, best_member, max_ratio
from posenc_spec.families.sinusoidal.frequencies import frequency_slip
from posenc_spec.families.sinusoidal.narrow import narrow_stage
from posenc_spec.gate.calls import held_in as round_to
from posenc_spec.gate.identify.hint import Hint
from posenc_spec.gate.identify.toml_text import number
from posenc_spec.tolerance import ratios

FIT_LIMIT = 128 * 128  # tables fitted on are at most this large (128x64 and 50x8 on the default grid)
FIT = object()  # diagnose's default: fit the family here
EXACT_INTEGERS = {"float16": 2048, "bfloat16": 256}  # each holds every integer up to here, and no odd one above
_SAME = 1e-9  # relative: two values computed from each other by different routes


@dataclass(frozen=True, eq=False)
class Table:
    """One table of the run: its slot, the values as a :class:`Sample`, what the gate's
    expectation was computed at (``judged_at``: a length or the timesteps, for the cached
    expectation), and whether its formula check failed."""

    slot: str
    sample: Sample
    judged_at: object
    failed: bool

    @property
    def width(self) -> int:
        return self.sample.table.shape[1]

    @property
    def length(self) -> int:
        return self.sample.table.shape[0]


@dataclass(frozen=True)
class Change:
    """One slip of a variant: its id, what it does in words, and the keys that declare it."""

    slip: str
    words: str
    declare: tuple = ()


@dataclass(frozen=True, eq=False)
class Variant:
    """A candidate explanation: ``changes`` from the declaration, and what it makes of each
    table (``at``: table -> (convention, positions or None, values or None), None for the
    table's own); ``uniform`` when it is one member of the family at every size."""

    changes: tuple[Change, ...]
    at: object
    uniform: Convention | None = None
    key: tuple = field(default=())

    def sample(self, table: Table) -> tuple[Sample, Convention]:
        convention, positions, values = self.at(table)
        if positions is None and values is None:
            return table.sample, convention
        return Sample(table.sample.table if values is None else values, table.sample.dtype,
                      table.sample.positions if positions is None else positions), convention


def _pattern(convention: Convention) -> str:
    first, second = convention.first, convention.second
    return f"{first}, {second}, {first}, {second}, ..." if convention.layout == "interleaved" else \
        f"[{first} ... | {second} ...]"


def _base_change(found: Convention, declared: Convention) -> Change:
    b, base = found.base, declared.base
    keys = (("base", number(b)),)
    if declared.freq_shift == found.freq_shift == 0 and math.isclose(b, math.sqrt(base), rel_tol=_SAME):
        return Change("exponent-i-over-d", f"`i/d` written where the formula has `2i/d`: the frequencies fall only "
                                           f"to 1/{b:.6g} (base {b:.6g}, the square root of the declared {base:g})",
                      keys)
    for name, logarithm in (("log10", math.log10), ("log2", math.log2)):
        if math.isclose(math.log(b), logarithm(base), rel_tol=_SAME):
            return Change(f"{name}-for-ln", f"`{name}({base:g})` where the natural logarithm belongs: base "
                                            f"{b:.6g} (e**{logarithm(base):.6g}) where {base:g} is declared", keys)
    return Change("base", f"base {b:.6g} where {base:g} is declared", keys)


def _scale_change(found: Convention, declared: Convention, what: str) -> Change:
    s, scale = found.scale, declared.scale
    keys = (("scale", number(s)),)
    if scale != 1 and math.isclose(s, scale * scale, rel_tol=_SAME):
        return Change("scale-twice", f"the scale applied twice: {s:g} = {scale:g} x {scale:g} where {scale:g} is "
                                     "declared", keys)
    if scale != 1 and s == 1:
        return Change("scale-dropped", f"the scale {scale:g} never applied (scale 1 where {scale:g} is declared)", keys)
    if s == -scale:
        return Change("angle-sign", f"the angle's sign flipped: sin(-x) where sin(x) belongs (scale {s:g} where "
                                    f"{scale:g} is declared)", keys)
    return Change("scale", f"the {what} scaled by {s / scale:.6g} (scale {s:.6g} where {scale:g} is declared)", keys)


def changes(found: Convention, declared: Convention, what: str = "positions") -> tuple[Change, ...]:
    """How ``found`` differs from ``declared``, field by field, as slips (``what``: positions or timesteps)."""
    found_list = []
    if found.first != declared.first:
        found_list.append(Change("sin-cos-swapped", f"sin and cos swapped: each pair holds {found.first} first where "
                                                    f"{declared.first} first is declared", (("first", found.first),)))
    if found.layout != declared.layout:
        found_list.append(Change("layout", f"the columns are {found.layout} ({_pattern(found)}) where "
                                           f"{declared.layout} ({_pattern(declared)}) is declared",
                                 (("layout", found.layout),)))
    if found.freq_shift != declared.freq_shift:
        if found.freq_shift:
            found_list.append(Change("denominator-half-dim-minus-one", "the exponent divides by `half_dim - 1` where "
                                     "the declared convention divides by `half_dim` (`2i/d`)", (("freq_shift", 1),)))
        else:
            found_list.append(Change("denominator-half-dim", "the exponent divides by `half_dim` (`2i/d`) where the "
                                     "declared convention divides by `half_dim - 1`", (("freq_shift", 0),)))
    if not math.isclose(found.base, declared.base, rel_tol=_SAME):
        found_list.append(_base_change(found, declared))
    if found.offset != declared.offset:
        off_by_one = " (off by one)" if abs(found.offset - declared.offset) == 1 else ""
        found_list.append(Change("positions-offset", f"the first row is {what[:-1]} {found.offset:g} where "
                                                     f"{declared.offset:g} is declared{off_by_one}",
                                 (("offset", number(found.offset)),)))
    if not math.isclose(found.scale, declared.scale, rel_tol=_SAME):
        found_list.append(_scale_change(found, declared, what))
    return tuple(found_list)


def _uniform(convention: Convention, declared: Convention, what: str) -> Variant:
    convention = convention.replace(odd="error")
    return Variant(changes(convention, declared, what), lambda table: (convention, None, None), convention,
                   ("uniform", convention))


def _replaced(declared: Convention, **fields) -> Convention | None:
    try:
        return declared.replace(odd="error", **fields)
    except ValueError:  # not a member (a base of at most 1)
        return None


def neighbours(declared: Convention, what: str) -> list[Variant]:
    """The declared convention with one field changed as a common slip changes it."""
    other = {"first": "cos" if declared.first == "sin" else "sin",
             "layout": "concat" if declared.layout == "interleaved" else "interleaved"}
    members = [_replaced(declared, first=other["first"]), _replaced(declared, layout=other["layout"]),
               _replaced(declared, freq_shift=1 - declared.freq_shift),
               _replaced(declared, base=math.sqrt(declared.base)),
               _replaced(declared, base=math.exp(math.log10(declared.base))),
               _replaced(declared, base=math.exp(math.log2(declared.base))),
               _replaced(declared, scale=-declared.scale),
               _replaced(declared, offset=declared.offset + 1), _replaced(declared, offset=declared.offset - 1)]
    if declared.scale != 1:
        members += [_replaced(declared, scale=declared.scale ** 2), _replaced(declared, scale=1.0)]
    if declared.offset not in (0, 1, -1):
        members.append(_replaced(declared, offset=0))
    return [_uniform(member, declared, what) for member in members if member is not None]


def _sized(declared: Convention, api: str) -> list[Variant]:
    """The slips whose effect depends on the table's size (see the module docstring)."""
    plain = declared.replace(odd="error")
    found = []
    if declared.freq_shift == 0:
        def d_minus_one(table):
            d = table.width
            return _replaced(declared, base=declared.base ** (d / (d - 1))) or plain, None, None

        found.append(Variant((Change("denominator-d-minus-one", "the exponent divides by `d - 1` where the formula "
                                     "has `d` (`2i/(d-1)` for `2i/d`)"),), d_minus_one, key=("d-1",)))
    if declared.freq_shift == 1:
        def precedence(table):
            h = table.width // 2
            exponent = (h - 1) * (math.log(declared.base) / h - 1)
            return (_replaced(declared, base=math.exp(exponent)) if exponent > 0 else None) or plain, None, None

        found.append(Variant((Change("precedence-half-dim-minus-one", "parentheses missing: `log(base) / half_dim - 1` "
                                     "where `log(base) / (half_dim - 1)` belongs"),), precedence, key=("precedence",)))
    if api != "table":
        return found

    def over_length(table):
        return (_replaced(declared, base=declared.base ** (table.width / table.length)) if table.length > 1
                else None) or plain, None, None

    def reversed_rows(table):
        return plain, table.sample.positions[::-1].copy(), None

    def linspace(table):
        n = table.length
        return plain, table.sample.positions * (n / (n - 1)) if n > 1 else None, None

    found += [
        Variant((Change("exponent-over-length", "the exponent divides by the number of positions where the width "
                                                "belongs (`2i/L` for `2i/d`)"),), over_length, key=("length",)),
        Variant((Change("positions-reversed", "the rows run from position n-1 down to 0 where 0 up to n-1 is "
                                              "declared"),), reversed_rows, key=("reversed",)),
        Variant((Change("positions-linspace", "positions spaced n/(n-1) apart (`linspace(0, n, n)`) where 0, 1, 2, "
                                              "... is declared"),), linspace, key=("linspace",)),
    ]
    return found


def _amplitude(table: Table, declared: Convention) -> float:
    """The factor ``a`` that best maps the declared table onto ``table`` (least squares)."""
    try:
        exact = checks.expectation(table.judged_at, table.width, declared, table.sample.dtype).table
    except ValueError:
        return math.nan
    denominator = float(np.sum(exact * exact))
    return float(np.sum(exact * table.sample.table)) / denominator if denominator else math.nan


def _values(declared: Convention, tables: list[Table]) -> list[Variant]:
    """Slips in the values rather than the formula: the columns in reverse order, every value
    multiplied by one factor (``sqrt(d)``, or the rows normalised)."""
    plain = declared.replace(odd="error")
    found = [Variant((Change("columns-reversed", "the columns in reverse order (`flip(-1)`)"),),
                     lambda table: (plain, None, table.sample.table[:, ::-1]), key=("reversed columns",))]
    if any(table.length != table.width for table in tables):  # of a square table, reshape and .T read alike
        found.append(Variant((Change("reshape-for-transpose", "the table built features by positions and reshaped "
                                                              "to positions by features (`reshape` where `.T` "
                                                              "belongs)"),),
                             lambda table: (plain, None, table.sample.table.reshape(table.width, table.length).T),
                             key=("reshaped",)))
    factors = {table.slot: _amplitude(table, declared) for table in tables}
    if not all(math.isfinite(factor) and factor > 0 for factor in factors.values()):
        return found
    if all(math.isclose(factors[table.slot], math.sqrt(table.width), rel_tol=1e-3) for table in tables):
        words = "every value multiplied by sqrt(d) (the embedding scale applied to the position table)"
    elif all(math.isclose(factors[table.slot], math.sqrt(2 / table.width), rel_tol=1e-3) for table in tables):
        words = "each row normalised to length 1: every value divided by sqrt(d/2)"
    elif len({round(factor, 6) for factor in factors.values()}) == 1:
        words = f"every value multiplied by {next(iter(factors.values())):.6g}"
    else:
        return found
    found.append(Variant((Change("values-scaled", words),),
                         lambda table: (plain, None, table.sample.table / factors[table.slot]), key=("scaled",)))
    return found


def twin(convention: Convention, width: int) -> Convention | None:
    """The member with the other denominator that has the same frequencies at ``width``."""
    h, shift = width // 2, convention.freq_shift
    if h - shift <= 0 or h - (1 - shift) <= 0:
        return None
    return _replaced(convention, freq_shift=1 - shift, base=convention.base ** ((h - (1 - shift)) / (h - shift)))


def explains(variant: Variant, tables: list[Table]) -> bool:
    """Whether every table matches the variant within the gate's bounds (smallest first)."""
    for table in tables:
        sample, convention = variant.sample(table)
        if max_ratio([sample], convention, stop_above=1.0) > 1.0:
            return False
    return True


def _explanations(declared: Convention, api: str, tables: list[Table], fitted) -> list[Variant]:
    """Every variant that explains the tables, with the fewest slips (``fitted``: see :func:`diagnose`)."""
    what = "positions" if api == "table" else "timesteps"
    widths = {table.width for table in tables}
    tried, found = set(), []

    def consider(variant: Variant, with_twin: bool = True) -> None:
        if variant.key in tried or not variant.changes:
            return
        tried.add(variant.key)
        if explains(variant, tables):
            found.append(variant)
            if with_twin and variant.uniform is not None and len(widths) == 1:
                double = twin(variant.uniform, next(iter(widths)))
                if double is not None:
                    consider(_uniform(double, declared, what), with_twin=False)

    for variant in [*neighbours(declared, what), *_sized(declared, api), *_values(declared, tables)]:
        consider(variant)
    if not found:
        member = _fitted(tables) if fitted is FIT else fitted
        if member is not None and not _aliased(member, tables):
            doubles = [twin(member, next(iter(widths)))] if len(widths) == 1 else []
            for candidate in [member.replace(odd="error"), *doubles]:
                if candidate is not None:
                    consider(_uniform(simplified(candidate, declared, tables), declared, what), with_twin=False)
    if not found:
        return []
    fewest = min(len(variant.changes) for variant in found)
    return [variant for variant in found if len(variant.changes) == fewest]


def _fitted(tables: list[Table]) -> Convention | None:
    """The member :mod:`.fit` finds on the two largest evenly spaced tables of at most
    :data:`FIT_LIMIT` elements, when one of them fails (else it is the declared one)."""
    samples = [table for table in tables if table.sample.table.size <= FIT_LIMIT and _even(table.sample)][-2:]
    if not any(table.failed for table in samples):
        return None
    member, _, _, _ = best_member([table.sample for table in samples])
    return member


def _aliased(member: Convention, tables: list[Table]) -> bool:
    """Whether ``member``'s fastest frequency turns by half a turn or more between two rows
    of an evenly spaced table: the tables cannot tell it from its alias (a table whose rows
    all repeat one row fits a member whose angles advance by whole turns), no evidence."""
    return any(abs(member.scale) * float(table.sample.positions[1] - table.sample.positions[0]) >= math.pi
               for table in tables if _even(table.sample))


def _even(sample: Sample) -> bool:
    """Whether the rows are evenly spaced, as :mod:`.fit` reads them (at least three)."""
    steps = np.diff(sample.positions)
    return steps.size >= 2 and steps[0] > 0 and bool(np.allclose(steps, steps[0], rtol=1e-6, atol=0))


def simplified(member: Convention, declared: Convention, tables: list[Table]) -> Convention:
    """``member`` with each field that can go back to the declared value (the tables still
    matching) put back: the explanation with the fewest slips."""
    for key in ("base", "scale", "offset", "freq_shift", "layout", "first"):
        if getattr(member, key) == getattr(declared, key):
            continue
        candidate = _replaced(member, **{key: getattr(declared, key)})
        if candidate is not None and explains(Variant((), lambda table, c=candidate: (c, None, None)), tables):
            member = candidate
    return member


def _hints(variants: list[Variant]) -> list[Hint]:
    if len(variants) == 1:
        return [Hint((change.slip,), change.words, change.declare) for change in variants[0].changes]
    described = []
    for variant in variants:
        parts = [change.words + (f" ({Hint((change.slip,), '', change.declare).flags})" if change.declare else "")
                 for change in variant.changes]
        described.append(" and ".join(parts))
    slips = tuple(dict.fromkeys(change.slip for variant in variants for change in variant.changes))
    return [Hint(slips, f"the tables fit each of these, which tables of one size cannot tell apart: "
                        f"{'; or '.join(described)}")]


# -- positions the code changes in some rows only ---------------------------------------------


def _row_ratios(table: Table, rows: np.ndarray, expected: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """Each of ``rows``' largest error/tolerance ratio."""
    error = np.abs(table.sample.table[rows] - expected)
    return ratios(error, tolerance).max(axis=1)


def _declared_rows(declared: Convention, table: Table):
    """The declared expectation of the table (the one the gate judged it by, cached)."""
    return checks.expectation(table.judged_at, table.width, declared, table.sample.dtype)


def _moved(declared: Convention, table: Table, positions: np.ndarray, moved_ratios=None):
    """``(first row where it shows, the row's position, the position the code used)`` when
    the table is the declared convention at ``positions`` (every row ``positions`` leaves
    alone within the declared bound, every row it moves within the bound at the moved
    position, and one row out of the declared bound); else None. ``moved_ratios``: the
    moved rows' ratios at their moved positions, when already measured."""
    own = table.sample.positions
    moved = np.flatnonzero(positions != own)
    if moved.size == 0:
        return None
    if moved_ratios is None:
        elsewhere = checks.expectation(positions[moved], table.width, declared, table.sample.dtype, cached=False)
        moved_ratios = _row_ratios(table, moved, elsewhere.table, elsewhere.tolerance)
    if moved_ratios.max() > 1:
        return None
    exact = _declared_rows(declared, table)
    kept = np.setdiff1d(np.arange(own.size), moved)
    if kept.size and _row_ratios(table, kept, exact.table[kept], exact.tolerance[kept]).max() > 1:
        return None
    shows = moved[_row_ratios(table, moved, exact.table[moved], exact.tolerance[moved]) > 1]
    if shows.size == 0:
        return None
    row = int(shows[0])
    return row, own[row], positions[row]


@functools.lru_cache(maxsize=4)
def _first_bad_row(declared: Convention, table: Table) -> int | None:
    """The first row out of the declared bound (cached: the clamp and the wrap both ask)."""
    exact = _declared_rows(declared, table)
    rows = np.arange(table.length)
    bad = np.flatnonzero(_row_ratios(table, rows, exact.table, exact.tolerance) > 1)
    return int(bad[0]) if bad.size else None


def narrow_neighbours(values: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The values ``dtype`` holds just below and just above each of ``values`` (non-negative,
    as float32 first): where code forms positions in that type they land on one of the two
    (rounded to the nearest, truncated, or accumulated by ``arange`` in that type)."""
    nearest = round_to(np.asarray(values), dtype).astype(np.float64)
    values = np.asarray(values, dtype=np.float64)
    if dtype == "float16":
        step_down = np.nextafter(nearest.astype(np.float16), np.float16(-np.inf)).astype(np.float64)
        step_up = np.nextafter(nearest.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    else:  # bfloat16: a float32 whose low 16 bits are zero, one step is 0x10000 in the bits
        bits = nearest.astype(np.float32).view(np.uint32).astype(np.int64)
        step_down = np.maximum(bits - 0x10000, 0).astype(np.uint32).view(np.float32).astype(np.float64)
        step_up = (bits + 0x10000).astype(np.uint32).view(np.float32).astype(np.float64)
    down = np.where(nearest <= values, nearest, step_down)
    up = np.where(nearest >= values, nearest, step_up)
    return down, up


def _narrowed(dtype: str):
    def positions(declared, table):
        """Each moved row at whichever of its two neighbours in ``dtype`` its values match."""
        own = table.sample.positions
        down, up = narrow_neighbours(own, dtype)
        moved = np.flatnonzero((down != own) | (up != own))
        if moved.size == 0:
            return None
        at = {}
        for option in (down, up):
            expected = checks.expectation(option[moved], table.width, declared, table.sample.dtype, cached=False)
            at[id(option)] = _row_ratios(table, moved, expected.table, expected.tolerance)
        chosen = own.copy()
        chosen[moved] = np.where(at[id(down)] <= at[id(up)], down[moved], up[moved])
        return chosen, np.minimum(at[id(down)], at[id(up)])
    return positions


def _clamped(declared, table):
    """Every row from the first wrong one on at the position of the row before it."""
    row = _first_bad_row(declared, table)
    own = table.sample.positions
    return None if not row else (np.minimum(own, own[row - 1]), None)


def _wrapped(declared, table):
    """The positions taken modulo the first wrong row's position (a ring buffer of that many rows)."""
    row = _first_bad_row(declared, table)
    own = table.sample.positions
    return None if not row or own[row] <= 0 else (np.mod(own, own[row]), None)


def _in_rows(api: str) -> list:
    """``(slip, positions the code used, words)`` for each slip that moves some rows only."""
    what = "position" if api == "table" else "timestep"
    found = [(f"positions-{dtype}", _narrowed(dtype),
              f"{what}s formed in {dtype} before the angle ({dtype} holds every integer only up to {exact}): "
              f"{{where}} is {what} {{own}} computed as {{used}}; form the {what}s in float32 or wider")
             for dtype, exact in EXACT_INTEGERS.items()]
    if api == "table":
        found += [("positions-clamped", _clamped, "from {where} every row repeats position {used} (positions "
                                                   "clamped to a buffer's last row, or one row broadcast over all): "
                                                   "{what} {own} computed as {used}"),
                  ("positions-wrapped", _wrapped, "positions wrapped around a buffer of {used_next} rows: {where} is "
                                                   "position {own} computed as {used}")]
    return found


def in_rows(declared: Convention, api: str, tables: list[Table]) -> list[Hint]:
    """The hint for a slip that moves the positions of some rows (rounding to float16 or
    bfloat16, a clamp, a wrap), when every failing table shows it."""
    failing = [table for table in tables if table.failed]
    what = "position" if api == "table" else "timestep"
    for slip, positions_of, words in _in_rows(api):
        first = None
        for table in failing:
            found = positions_of(declared, table)
            rows = None if found is None else _moved(declared, table, *found)
            if rows is None:
                break
            first = first or (table, rows)
        else:
            if first is None:
                continue
            table, (row, own, used) = first
            return [Hint((slip,), words.format(where=f"row {row} of {table.slot}", own=f"{own:.9g}",
                                               used=f"{used:.9g}", used_next=f"{own - used:.9g}", what=what))]
    return []


def one_function(declared: Convention, tables: list[Table]) -> list[Hint]:
    """The hint when every table holds one function in both columns of each pair (``sin``
    pasted where ``cos`` belongs, or the reverse), the angles the declared ones."""
    for function, other in ((declared.first, declared.second), (declared.second, declared.first)):
        for table in tables:
            conv = declared if table.width % 2 else declared.replace(odd="error")
            theta, _ = oracle.angles(table.judged_at, table.width, conv)
            columns = conv.columns(table.width)
            made = np.where(columns.is_zero[None, :], 0.0, np.sin(theta) if function == "sin" else np.cos(theta))
            bound = checks.expectation(table.judged_at, table.width, declared, table.sample.dtype).tolerance
            if not np.all(np.abs(table.sample.table - made) <= bound):
                break
        else:
            return [Hint(("one-function",), f"{function} in both columns of every pair: {function} written where "
                                            f"{other} belongs (a line copied)")]
    return []


def diagnose(declared: Convention, api: str, tables: list[Table], fitted=FIT) -> list[Hint]:
    """The hints the tables support (empty when no formula check failed or nothing explains
    them). ``fitted`` is the member the run's ``nearest`` found on the same tables (None: it
    found none); by default :mod:`.fit` is run here."""
    if not any(table.failed for table in tables):
        return []
    tables = sorted(tables, key=lambda table: table.sample.table.size)
    variants = _explanations(declared, api, tables, fitted)
    if variants:
        return _hints(variants)
    moved = in_rows(declared, api, tables)
    if moved:
        return moved
    copied = one_function(declared, tables)
    if copied:
        return copied
    made = frequency_slip(declared, tables)
    if made:
        return [Hint((made[0],), made[1])]
    narrow = narrow_stage(declared, api, tables)
    return [Hint((narrow[0],), narrow[1])] if narrow else []
