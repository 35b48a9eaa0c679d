"""Which slip a failing ALiBi target's own values show, and which member of the family they are.

Every call whose ``formula`` failed under the declaration is judged again under each
*variant* below, in order; the first variant under which every call of the run passes
(the failing ones first, then the others: a hint is a variant the whole run matches) is
the slip (with the keys that declare it, when a declaration can state what the code
computes). A key-only variant matches a call that returned a row per query only when
every row is the same row of keys at the keys its query attends: the gate reads one row
of a key-only form, and a table whose rows differ there does not compute it.
A variant is another convention (the geometric rule, another ``alibi_bias_max``, a
bfloat16 or float16 bias, the queries first, the padding kept in the positions, a constant
per row, another form) or the same convention with the values rearranged (the slopes
rounded to float16, the heads reversed, the sign flipped, the unbiased heads first). Two
slips no variant states are read off the values directly: decoding steps that return zeros
while the prefill carries a bias, and, last, slopes of another rule (each head's slope
measured from its steps between keys, when the bias is linear with it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.identify.hint import Hint
from posenc_spec.gate.identify.toml_text import spelled
from posenc_spec.results import CheckResult
from posenc_spec.tolerance import compare

from . import oracle, properties
from .conventions import BIAS_FORMS, KEY_FORMS, AlibiConvention
from .judge import AlibiJudge, positions_of, read
from .keys import FIELD_KEYS

BIAS_MAX_CANDIDATES = (1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 32.0)
SLOPE_STEPS = 64  # a slope is measured on the first steps: far keys' values are large, their rounding too


@dataclass(frozen=True)
class Reading:
    """One call's returned array (``raw``) and its dtype."""

    probe: object
    raw: np.ndarray
    dtype: str

    def values(self, conv: AlibiConvention) -> np.ndarray:
        """The array read as ``conv`` lays a call out (a key form keeps one row)."""
        return read(self.raw, self.probe.signature, self.probe.call, conv)


@dataclass(frozen=True)
class Variant:
    """A slip as a change of convention (``changes``) or of the values (``transform``)."""

    slips: tuple[str, ...]
    words: str
    changes: tuple = ()  # (field, value) pairs of the convention that computes it
    transform: object = None  # values, convention -> values
    declare: bool = True
    own_dtype: bool = False  # the bias formed in each call's own dtype, where it is float16 or bfloat16

    def convention(self, conv: AlibiConvention) -> AlibiConvention | None:
        try:
            return conv.replace(**dict(self.changes)) if self.changes else conv
        except ValueError:
            return None


def _formula(conv: AlibiConvention, reading: Reading, transform=None, declared=None) -> CheckResult:
    probe, call = reading.probe, reading.probe.call
    values = reading.values(conv)
    if transform is not None:
        values = transform(values, declared or conv)
    if probe.signature == "heads":
        return properties.check_slopes(values, call.num_heads, conv, reading.dtype)
    exp = properties.expectation(call.num_heads, positions_of(call, conv), conv, reading.dtype)
    return properties.check_formula(values, exp)


def _one_row_for_every_query(reading: Reading) -> bool:
    """Whether every row the call returned equals its last row at the keys the row's query
    attends (the last ``q_len`` queries; a single row returned is one row for all)."""
    call = reading.probe.call
    if reading.probe.signature in ("heads", "mask-heads-dtype"):  # slopes, or one row by the signature
        return True
    rows = read(reading.raw, reading.probe.signature, call, AlibiConvention())
    attends = np.arange(call.k_len)[None, :] <= np.arange(call.k_len - call.q_len, call.k_len)[:, None]
    return bool(np.array_equal(np.where(attends[None], rows, 0.0), np.where(attends[None], rows[:, -1:, :], 0.0)))


def fits(conv: AlibiConvention, reading: Reading, transform=None, declared=None) -> bool:
    """Whether ``reading`` passes ``formula`` under ``conv`` (after ``transform`` of its
    values, which reads the ``declared`` convention); under a key-only ``conv`` that the
    ``declared`` one is not, only when the call returned one row of keys for every query."""
    try:
        if not _formula(conv, reading, transform, declared).passed:
            return False
    except ValueError:  # the convention cannot read or position this call (a mask for a form with rows)
        return False
    return not (conv.key_only and declared is not None and not declared.key_only) or _one_row_for_every_query(reading)


def _reversed(values: np.ndarray, conv: AlibiConvention) -> np.ndarray:
    count = conv.biased_heads(values.shape[0])
    return np.concatenate([values[:count][::-1], values[count:]])


def _unbiased_last(values: np.ndarray, conv: AlibiConvention) -> np.ndarray:
    count = conv.biased_heads(values.shape[0])
    return np.concatenate([values[values.shape[0] - count:], values[:values.shape[0] - count]])


def _slopes_of_every_head(values: np.ndarray, conv: AlibiConvention) -> np.ndarray:
    """The ALiBi heads rescaled from the slopes of every head to the declared ones: values
    that fit the declaration after it carry the slopes of ``n`` heads on the first ``k``."""
    heads = values.shape[0]
    count = conv.biased_heads(heads)
    scale = np.ones(heads)
    scale[:count] = oracle.slopes(heads, conv)[:count] / oracle.slopes(heads, conv.replace(alibi_heads=None))[:count]
    return values * scale.reshape((heads,) + (1,) * (values.ndim - 1))


def _float16_slopes(values: np.ndarray, conv: AlibiConvention) -> np.ndarray:
    """Each head rescaled from its slope rounded to float16 to the exact one: values that fit the
    declaration after it were formed from float16 slopes (a float16 buffer)."""
    heads = values.shape[0]
    exact = oracle.slopes(heads, conv)
    rounded = exact.astype(np.float16).astype(np.float64)
    scale = np.divide(exact, rounded, out=np.ones(heads), where=rounded != 0)
    return values * scale.reshape((heads,) + (1,) * (values.ndim - 1))


def variants(conv: AlibiConvention, slopes_only: bool) -> list[Variant]:
    """The slips a declaration of ``conv`` may hide, most specific first."""
    made = [Variant(("alibi-float16-slopes",), "the slopes are rounded to float16 (kept in a float16 buffer): each is "
                    "off by up to 2**-11 of itself, and so is every bias it makes, far past a float32 bias's bound at "
                    "long distances; keep the slopes in float32", transform=_float16_slopes, declare=False)]
    if conv.alibi_heads is not None:
        made += [Variant(("alibi-partial-heads",), "the ALiBi heads take the slopes of every head, where those of "
                         "alibi_heads heads belong", transform=_slopes_of_every_head, declare=False),
                 Variant(("alibi-partial-heads",), "the unbiased heads come first and the ALiBi heads last, where "
                         "the first alibi_heads heads carry the bias", transform=_unbiased_last, declare=False)]
    if conv.slope_rule == "paper":
        made.append(Variant(("alibi-geometric-slopes",), "the slopes are one geometric sequence, 2 ** (-8 h / n), for "
                            "every head count: the paper's interleave for head counts that are not powers of two "
                            "is missing", (("slope_rule", "geometric"),)))
    else:
        made.append(Variant(("alibi-slope-rule",), "the slopes follow the paper's interleave, not one geometric "
                            "sequence", (("slope_rule", "paper"),)))
    made.append(Variant(("alibi-slopes-reversed",), "the slopes are the declared ones in reverse head order",
                        transform=_reversed, declare=False))
    made += [Variant(("alibi-bias-max",), f"the slopes are those of alibi_bias_max {bias_max:g}, not "
                     f"{conv.alibi_bias_max:g}", (("alibi_bias_max", bias_max),))
             for bias_max in BIAS_MAX_CANDIDATES if bias_max != conv.alibi_bias_max]
    if slopes_only:
        return made
    made += [Variant(("alibi-low-precision-positions",), "the bias is formed in each call's own dtype: in float16 "
                     "and bfloat16 the positions and slopes are rounded to it before the product",
                     own_dtype=True, declare=False),
             Variant(("alibi-bfloat16",), "the bias is formed in bfloat16 whatever dtype is asked for",
                     (("bias_dtype", "bfloat16"),)),
             Variant(("alibi-queries-first", "alibi-cache-corner"), "each call's queries sit at the first "
                     "positions (a decoding step gets row 0's bias, as a cache sliced from its top-left corner "
                     "gives)", (("query_positions", "first"),)),
             Variant(("alibi-form",), "the bias is the declared one with its sign flipped",
                     transform=lambda values, _: -values, declare=False)]
    # Before a row constant: left padding shifts a row by one constant, which a run stopped at its
    # first failure (a left-padded mask, before the mask with a hole) cannot tell from padding.
    if conv.key_positions == "mask-cumsum":
        made.append(Variant(("alibi-padding",), "the key positions count the padded keys: the attention mask's "
                            "padding is not taken out of them", (("key_positions", "index"),)))
    if conv.bias_form != "symmetric" and not conv.up_to_row_constant:
        made.append(Variant(("alibi-form",), "the bias is the declared one plus a constant per query row (the same "
                            "attention after softmax, not the declared bias)", (("up_to_row_constant", True),)))
    for form in BIAS_FORMS:
        if form != conv.bias_form:
            changes = [("bias_form", form)]
            if form not in KEY_FORMS and conv.key_positions != "index":
                changes.append(("key_positions", "index"))
            if form == "symmetric":
                changes += [("bias_region", "full"), ("up_to_row_constant", False)]
            elif conv.bias_region == "full":
                changes.append(("bias_region", "causal"))
            made.append(Variant(("alibi-form",), f"the bias has the {form} form", tuple(changes)))
    return made


def readings_of(declaration, probes, outcomes) -> list[Reading]:
    """The values of every call that returned some, read as the judge reads them."""
    from posenc_spec.gate.judge import Results

    judged = AlibiJudge(declaration.spec.convention, Results())
    made = []
    for probe, outcome in zip(probes, outcomes, strict=True):
        if probe.role != "table":
            continue
        _, dtype, problem = judged.values(probe, outcome)
        if not problem:
            made.append(Reading(probe, outcome.table, dtype))
    return made


def _under(variant: Variant, changed: AlibiConvention, reading: Reading) -> AlibiConvention:
    if variant.own_dtype and reading.dtype in ("float16", "bfloat16"):
        return changed.replace(bias_dtype=reading.dtype)
    return changed


def _found(conv: AlibiConvention, failing: list[Reading], passing: list[Reading], slopes_only: bool) -> Variant | None:
    """The first variant every reading fits: the ``failing`` ones first (most variants stop
    there), then the ``passing`` ones."""
    for variant in variants(conv, slopes_only):
        changed = variant.convention(conv)
        if changed is not None and all(fits(_under(variant, changed, reading), reading, variant.transform, conv)
                                       for reading in [*failing, *passing]):
            return variant
    return None


def _others(readings: list[Reading], failing: list[Reading]) -> list[Reading]:
    """The readings not in ``failing`` (by identity: a reading holds arrays)."""
    failed = {id(reading) for reading in failing}
    return [reading for reading in readings if id(reading) not in failed]


def _no_decode_bias(conv: AlibiConvention, failing: list[Reading]) -> bool:
    """Every failing call is a decoding step that returned zeros where the bias is not zero."""
    return bool(failing) and all(reading.probe.call.step == "decode" and not reading.values(conv).any()
                                 and oracle.slopes(reading.probe.call.num_heads, conv).any() for reading in failing)


def measured_slopes(reading: Reading, conv: AlibiConvention) -> np.ndarray | None:
    """Each head's slope, from its steps between neighbouring keys of the last row (None for
    fewer than two keys)."""
    values = reading.values(conv)
    if reading.probe.signature == "heads":
        return values
    row = values[:, -1, :]
    if row.shape[1] < 2:
        return None
    mask = reading.probe.call.mask
    kept = np.ones(row.shape[1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    steps = np.diff(row, axis=1)[:, kept[1:] & kept[:-1]]  # between neighbouring keys the mask keeps
    return np.median(steps[:, :SLOPE_STEPS], axis=1) if steps.size else None


def _other_slopes(conv: AlibiConvention, failing: list[Reading]) -> str | None:
    """Which heads' slopes differ, when the failing calls are linear in the distance with
    slopes of their own (what another slope rule gives)."""
    for reading in failing:
        measured = measured_slopes(reading, conv)
        if measured is None:
            continue
        heads = reading.probe.call.num_heads
        expected = oracle.slopes(heads, conv)
        if reading.probe.signature != "heads":
            positions = positions_of(reading.probe.call, conv)
            distances = oracle.distances(conv, positions)
            rebuilt = np.abs(measured)[:, None, None] * np.sign(expected)[:, None, None] * distances[None]
            judged = oracle.judged(conv, positions)
            scale = np.abs(rebuilt).max(initial=0.0) * 2**-10 + 1e-30
            if not compare(reading.values(conv)[:, judged], rebuilt[:, judged], scale).ok:
                return None
        off = np.flatnonzero(np.abs(measured - expected) > 2**-10 * np.abs(expected))
        if off.size:
            head = int(off[0])
            return (f"at {heads} heads the slopes of {off.size} head(s) follow another rule: head {head} has "
                    f"{measured[head]:.9g} where {expected[head]:.9g} belongs")
    return None


def _sliced_from_corner(conv: AlibiConvention, readings: list[Reading], failing: list[Reading]) -> bool:
    """Every failing call is one made after a call at least as large (in queries and keys) and
    holds the queries-first bias, the top-left corner of that larger one's: a cached bias sliced
    ``[..., :i, :j]`` (the calls that build the cache are right)."""
    if not failing or conv.query_positions == "first":
        return False
    corner = conv.replace(query_positions="first")
    order = {id(reading): index for index, reading in enumerate(readings)}

    def after_larger(reading) -> bool:
        call = reading.probe.call
        return any(order[id(earlier)] < order[id(reading)] and earlier.probe.call.q_len >= call.q_len
                   and earlier.probe.call.k_len >= call.k_len for earlier in readings)

    try:
        return all(after_larger(reading) and fits(corner, reading) for reading in failing)
    except (AttributeError, ValueError):  # calls without a query and key length, or no such convention
        return False


def diagnose(conv: AlibiConvention, readings: list[Reading], slopes_only: bool) -> list[Hint]:
    """The hint the readings show under ``conv`` (empty when nothing explains them)."""
    failing = [reading for reading in readings if not fits(conv, reading)]
    if not failing:
        return []
    if _no_decode_bias(conv, failing):
        return [Hint(("alibi-no-decode-bias",), "the decoding steps (one query after a prefill) return no bias at "
                                                "all, where the prefill has one")]
    variant = _found(conv, failing, _others(readings, failing), slopes_only)
    if variant is not None:
        declare = tuple((FIELD_KEYS[field], value) for field, value in variant.changes
                        if getattr(conv, field) != value) if variant.declare else ()
        return [Hint(variant.slips, variant.words, declare)]
    if not slopes_only and _sliced_from_corner(conv, readings, failing):
        return [Hint(("alibi-cache-corner",), "the calls made after a larger one get the top-left corner of its "
                                              "bias (the queries at the first positions): a cached bias sliced "
                                              "[..., :i, :j] where its last rows [..., -i:, -j:] belong; the calls "
                                              "that build the cache are right")]
    other = _other_slopes(conv, failing)
    return [Hint(("alibi-slope-rule",), other)] if other else []


def hints(declaration, probes, outcomes, report) -> list[Hint]:
    """The family's :meth:`~posenc_spec.gate.family.Family.hints`."""
    spec = declaration.spec
    return diagnose(spec.convention, readings_of(declaration, probes, outcomes), spec.slopes_only)


def nearest(declaration, judged: AlibiJudge) -> dict | None:
    """The member of the family the run's values are, when a variant of the declaration explains them."""
    spec = declaration.spec
    readings = [Reading(probe, raw, dtype) for probe, raw, dtype in judged.tables.values() if probe.role == "table"]
    failing = [reading for reading in readings if not fits(spec.convention, reading)]
    variant = _found(spec.convention, failing, _others(readings, failing), spec.slopes_only) if failing else None
    if variant is None or not variant.changes:
        return None
    found = variant.convention(spec.convention)
    keys = spelled({FIELD_KEYS[field]: value for field, value in variant.changes}, declaration.spelling)
    return {"name": found.name(), "convention": found.as_dict(),
            "message": f"the values are {found.name()} ({keys}): {variant.words}"}
