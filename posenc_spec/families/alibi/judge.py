"""Judge an ALiBi target's calls: each call's values, read into the oracle's layout
(:func:`read`), under every property of :mod:`.properties` its probe lists.

A check id names a slot (``formula[64x64]``) that every head count's call of that slot
shares: its verdict is the worst of them (a failure stands, then a note; of passing calls
the one closest to its bound), and its message names the head count (``h=112:64x64``). A
decoding step is judged against the prefill of the same head count and dtype, made on the
same module just before. A long call whose length the gate chose and that ran out of memory
(:func:`~.grid.chosen_size`) is noted, its checks skipped: the length is no promise of
the declaration.

:class:`AlibiJudge` is the gate's (the engine hands it each probe and its outcome);
:func:`judge` runs a target in this process, through the same adapters and the same
judge, for the family's own tests and its corpus.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.caching import BoundedCache
from posenc_spec.gate.calls import Outcome, made_here
from posenc_spec.gate.judge import Results, call_status, failed, passed
from posenc_spec.results import CheckResult, noted, skipped

from . import oracle, properties
from .conventions import AlibiConvention, get_convention
from .grid import AlibiCall, AlibiProbe, chosen_size, probes
from .tolerance import longest_distance

# What a call returned, as the oracle's layout: every bias is read as (heads, rows, keys) float64,
# one row for the key-only forms (the last query's, where a target returns one per query); a
# single row returned for a form with a row per query is broadcast over the queries, as
# attention adds it.


class Unreadable(ValueError):
    """What a call returned does not hold the values its signature promises (the message says why)."""


def _shape(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def read(values, signature: str, call: AlibiCall, convention: AlibiConvention) -> np.ndarray:
    """What a call returned as slopes ``(heads,)`` or a bias ``(heads, rows, keys)``, float64;
    :class:`Unreadable` naming the shape that does not fit."""
    values = np.asarray(values, dtype=np.float64)
    if signature == "heads":
        if values.size != call.num_heads:
            raise Unreadable(f"returned {values.size} slopes (shape {_shape(values.shape)}) for {call.num_heads} "
                             "heads")
        return values.reshape(-1)
    heads, q_len, k_len = call.num_heads, call.q_len, call.k_len
    if signature == "heads-mask":
        if values.shape != (q_len, k_len, heads):
            raise Unreadable(f"returned shape {_shape(values.shape)}, expected {_shape((q_len, k_len, heads))} "
                             "(queries, keys, heads)")
        values = values.transpose(2, 0, 1)
    else:
        full, single = (heads, q_len, k_len), (heads, 1, k_len)
        if values.size not in (int(np.prod(full)), int(np.prod(single))) or values.ndim < 1 \
                or values.shape[-1] != k_len:
            raise Unreadable(f"returned shape {_shape(values.shape)}, expected {_shape(full)} or {_shape(single)} "
                             "(with any size-1 axes)")
        values = values.reshape(full if values.size == int(np.prod(full)) else single)
    if convention.key_only:  # the form's one row is the last query's
        return values[:, -1:, :]
    return np.broadcast_to(values, (heads, q_len, k_len))  # one row: what attention adds to every query

FLOATING = ("float16", "bfloat16", "float32", "float64")
_RANK = {"passed": 1, "skipped": 0, "noted": 2, "failed": 3}
_BIAS_CHECKS = {"finite": properties.check_finite, "formula": properties.check_formula,
                "linear": properties.check_linear, "toeplitz": properties.check_toeplitz,
                "diagonal": properties.check_diagonal, "equivalent": properties.check_equivalent,
                "unbiased-heads": properties.check_unbiased_heads}


def merge(results: Results, result: CheckResult) -> None:
    """Add one call's verdict on a check id several calls share: a failure stands (the
    first), then a note; a pass outranks a skip (one head has no ratio, 112 heads have);
    of passes the one closest to its bound."""
    earlier = results.by_id.get(result.name)
    if earlier is None or _RANK[result.status] > _RANK[earlier.status]:
        results.add(result)
    elif result.status == earlier.status == "passed" and result.worst is not None and (
            earlier.worst is None or result.worst.ratio > earlier.worst.ratio):
        results.add(result)


def positions_of(call: AlibiCall, convention: AlibiConvention) -> oracle.Positions:
    """The query and key positions of one call under ``convention``."""
    if call.mask is not None:
        return oracle.mask_positions(call.mask, convention)
    return oracle.call_positions(call.q_len, call.k_len, convention)


# The expectations kept between the calls and the targets of a run, the least recently used
# dropped first past a keep's bytes: every target of a run under one convention asks for the
# same ones, in turn. The long calls' (past LONG_ELEMENTS: 38 MB at 12 heads over 258 x 258
# with what the checks derive, a convention's up to 111 MB) have a keep of their own: in one
# shared keep they would push every small one (the sweep's, 200 KB at most) out before the
# next target asked for it again.
KEPT_EXPECTATION_BYTES = 2**27
KEPT_LONG_EXPECTATION_BYTES = 2**28
LONG_ELEMENTS = 2**16
_kept = BoundedCache(KEPT_EXPECTATION_BYTES)
_kept_long = BoundedCache(KEPT_LONG_EXPECTATION_BYTES)


def call_expectation(call: AlibiCall, convention: AlibiConvention, dtype: str) -> properties.BiasExpectation:
    """:func:`~.properties.expectation` of one call, with what its checks derive from it, made
    once per head count, call geometry, convention and dtype in a process and kept
    (read-only) for the next call that asks."""
    def make():
        exp = properties.expectation(call.num_heads, positions_of(call, convention), convention, dtype)
        for array in exp.derived():
            array.setflags(write=False)
        return exp, _nbytes(exp)

    keep = _kept_long if call.num_heads * call.q_len * call.k_len > LONG_ELEMENTS else _kept
    return keep.get((call.num_heads, call.q_len, call.k_len, call.mask, convention, dtype), make)


def _nbytes(exp: properties.BiasExpectation) -> int:
    """The bytes an expectation holds, what its checks derive included: each buffer once (a
    view counts its base's)."""
    owners = {}
    for array in exp.derived():
        while isinstance(array.base, np.ndarray):
            array = array.base
        owners[id(array)] = array.nbytes
    return sum(owners.values())


def out_of_memory(outcome: Outcome) -> bool:
    """Whether a call failed for want of memory: a ``MemoryError`` (NumPy's subclass too),
    an allocator's "can't allocate memory", or the gate's ``--max-memory`` limit."""
    if outcome.status not in ("raised", "limit"):
        return False
    return (outcome.exception or "").endswith("MemoryError") or any(
        words in outcome.message for words in ("allocate memory", "Unable to allocate", "--max-memory"))


class AlibiJudge:
    """Checks of one ALiBi target, probe by probe (``results`` is the engine's;
    ``max_positions`` the declared one: the lengths a target promises)."""

    def __init__(self, convention: AlibiConvention, results: Results, max_positions: int | None = None):
        self.conv, self.results, self.max_positions = convention, results, max_positions
        self.prefills: dict[str, tuple] = {}  # a prefill's slot -> (table, expectation)
        self.tables: dict[str, tuple] = {}  # a probe's slot -> (probe, returned array, dtype): what nearest reads

    def kept_table(self):
        """None: ALiBi biases are drawn by ``posenc-spec plot``, not from a report."""
        return None

    def values(self, probe: AlibiProbe, outcome: Outcome):
        """``(values, dtype, problem)``: the call's slopes ``(heads,)`` or bias ``(heads, rows,
        keys)`` as float64, the dtype it returned, or why there are none."""
        status = call_status(outcome)
        if status:
            return None, None, status
        if len(outcome.arrays) != 1:
            return None, None, f"returned {len(outcome.arrays)} arrays where one belongs"
        dtype = outcome.dtype
        if dtype not in FLOATING:
            return None, None, f"returned {dtype} values, not real floating-point numbers"
        try:
            return read(outcome.table, probe.signature, probe.call, self.conv), dtype, None
        except Unreadable as problem:
            return None, None, str(problem)

    def judge(self, probe: AlibiProbe, outcome: Outcome) -> bool:
        """Judge one call; whether it returned values (the determinism repeat compares them)."""
        ids = probe.check_ids()
        values, dtype, problem = self.values(probe, outcome)
        if problem:
            if outcome.status == "not-run":
                merge(self.results, skipped(ids[0], f"{probe.slot}: {outcome.message}"))
            elif out_of_memory(outcome) and chosen_size(probe.call, self.max_positions):
                merge(self.results, noted(ids[0], f"{probe.slot}: {problem}; {probe.call.k_len} keys is a length "
                                                  "the gate chose (no max_positions declared), judged at the shorter "
                                                  "calls: declare max_positions to require a length"))
            else:
                merge(self.results, failed(ids[0], f"{probe.slot}: {problem}"))
            for name in ids[1:]:
                merge(self.results, skipped(name, f"not run: the call for {probe.slot} returned nothing to check"))
            return False
        self.tables[probe.slot] = (probe, outcome.table, dtype)
        merge(self.results, passed(ids[0], f"{probe.slot}: returned {outcome.message or dtype}"))
        checks = self._slopes(probe, values, dtype) if probe.signature == "heads" else self._bias(probe, values, dtype)
        for name, result in zip(ids[1:], checks, strict=True):
            merge(self.results, _renamed(result, name))
        return True

    def _slopes(self, probe: AlibiProbe, values, dtype: str) -> list[CheckResult]:
        heads = probe.call.num_heads
        bad = ~np.isfinite(values)
        finite = (failed("finite", f"h={heads}: {int(bad.sum())} of {heads} slopes NaN or Inf, first at head "
                                   f"{int(np.argmax(bad))}") if bad.any()
                  else passed("finite", f"h={heads}: all {heads} slopes finite"))
        if bad.any():
            return [finite, skipped("formula", f"h={heads}: NaN or Inf slopes"),
                    skipped("head-ratio", f"h={heads}: NaN or Inf slopes")]
        distance = longest_distance(self.max_positions)
        return [finite, _named(properties.check_slopes(values, heads, self.conv, dtype, distance=distance), heads),
                _named(properties.check_head_ratio(values, heads, self.conv, distance=distance), heads)]

    def _bias(self, probe: AlibiProbe, values, dtype: str) -> list[CheckResult]:
        call = probe.call
        exp = call_expectation(call, self.conv, dtype)
        if call.step == "prefill":
            self.prefills[probe.slot] = (values, exp)
        made, equivalent = [], None  # equivalent: made with formula, where they are one comparison
        for check in probe.checks[1:]:
            if check == "equivalent" and equivalent is not None:
                made.append(equivalent)
            elif check == "decode" and probe.prefill not in self.prefills:
                made.append(skipped("decode", f"not run: the prefill {probe.prefill} returned nothing to check"))
            elif check == "decode":
                table, prefill = self.prefills[probe.prefill]
                made.append(properties.check_decode(values, table, exp, prefill))
            elif check == "formula" and "equivalent" in probe.checks:
                formula, equivalent = properties.check_formula_and_equivalent(values, exp)
                made.append(formula)
            else:
                made.append(_BIAS_CHECKS[check](values, exp))
            if check == "finite" and made[-1].status == "failed":
                reason = f"{exp.size}: NaN or Inf among the judged values"
                made += [skipped(name, reason) for name in probe.checks[len(made) + 1:]]
                break
        return made


def _renamed(result: CheckResult, name: str) -> CheckResult:
    return CheckResult(name, result.status, result.message, result.worst, result.details)


def _named(result: CheckResult, heads: int) -> CheckResult:
    """A slope check's message with its head count first."""
    return CheckResult(result.name, result.status, f"h={heads}: {result.message}", result.worst)


# -- in this process: the family's tests and corpus ------------------------------------------


def judge(target, signature: str, convention: str | AlibiConvention, num_heads: int, init: dict | None = None,
          fail_fast: bool = False) -> list[CheckResult]:
    """Every verdict of the calls of one head count (the grid's, with the long calls), made in
    this process: ``target`` is the function, or the class a module signature builds with
    ``init``. ``fail_fast`` stops after the first call with a failure."""
    from posenc_spec.gate.child.adapters import Maker

    from .adapters import adapt

    conv = get_convention(convention)
    api = "alibi-slopes" if signature == "heads" else "alibi-bias"
    how = {"api": api, "signature": signature, "init": init or None, "sizes": {"alibi_bias_max": conv.alibi_bias_max}}
    function = adapt(target, how, Maker(target, how))
    results = Results()
    judged = AlibiJudge(conv, results)
    for probe in probes(signature, conv, num_heads):
        if probe.role != "table":
            continue
        judged.judge(probe, made_here(function, probe.request()))
        if fail_fast and failures(list(results.by_id.values())):
            break
    return list(results.by_id.values())


def failures(results: list[CheckResult]) -> list[CheckResult]:
    return [result for result in results if result.status == "failed"]
