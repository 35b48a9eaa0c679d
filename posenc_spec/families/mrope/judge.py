"""Judge a multi-axis rotary target's calls: each call's arrays read as a cache
(:class:`~.properties.Cache`), then every check of its probe (:mod:`.grid`).

What a call may return: cos and sin (two real arrays of ``L x R`` values each, any leading
axes of size 1: transformers' ``(1, L, R)``, Wan's ``(1, L, 1, R)``), or one complex array of
``L x P`` values (``freqs_cis``, diffusers' ``use_real=False``). Anything else fails ``call``.

:class:`MropeJudge` is the gate's; :func:`judge` runs a target in this process, through the same
adapters and judge, for the family's tests and corpus.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.calls import Outcome, made_here
from posenc_spec.gate.judge import Results, call_status, failed, passed
from posenc_spec.results import CheckResult, skipped
from posenc_spec.tolerance import unit_roundoff

from . import properties
from .conventions import MropeConvention
from .grid import APPLY_SIGNATURES_WITH_CACHE, MropeProbe, probes_for
from .properties import Cache
from .tolerance import apply_tolerance, crop_position_error

REAL = ("float16", "bfloat16", "float32", "float64")
COMPLEX = {"complex64": "float32", "complex128": "float64"}


def read(outcome: Outcome, probe: MropeProbe, convention: MropeConvention) -> tuple[Cache | None, str | None]:
    """The cache a call returned, or why there is none."""
    status = call_status(outcome)
    if status:
        return None, status
    length, width, pairs = probe.length, convention.rotary_dim, convention.pairs
    arrays, dtypes = outcome.arrays, outcome.dtypes
    if len(arrays) == 1 and dtypes[0] in COMPLEX:
        values = np.asarray(arrays[0])
        if values.size != length * pairs:
            return None, (f"returned one complex array of shape {values.shape} where {length} tokens x {pairs} slots "
                          f"belong")
        values = values.reshape(length, pairs)
        return Cache(values.real.astype(np.float64), values.imag.astype(np.float64), COMPLEX[dtypes[0]], True), None
    if len(arrays) != 2 or any(dtype not in REAL for dtype in dtypes):
        return None, (f"returned {len(arrays)} array(s) of {', '.join(dtypes)} where cos and sin (two real arrays) "
                      f"or one complex array belong")
    shapes = [np.asarray(array).shape for array in arrays]
    if any(np.asarray(array).size != length * width or (shape and shape[-1] != width)
           for array, shape in zip(arrays, shapes, strict=True)):
        return None, (f"returned cos and sin of shapes {shapes[0]} and {shapes[1]} where {length} tokens x {width} "
                      f"features belong (the rotated size {width} = 2 x {pairs} slots)")
    cos, sin = (np.asarray(array, dtype=np.float64).reshape(length, width) for array in arrays)
    # The bound of the coarser of the two stored dtypes (each array is judged in its own precision or finer).
    return Cache(cos, sin, max(dtypes, key=unit_roundoff)), None


class MropeJudge:
    """Checks of one multi-axis rotary target, probe by probe (``results``: the engine's)."""

    def __init__(self, convention: MropeConvention, results: Results):
        self.conv, self.results = convention, results
        self.bases: dict[str, tuple] = {}  # relative:A:base -> (probe, cache)
        self.caches: list[tuple] = []  # (probe, cache) of every table call read, for the hints

    def kept_table(self):
        return None

    def judge(self, probe: MropeProbe, outcome: Outcome) -> bool:
        """Judge one call; whether it returned a cache (the determinism repeat compares it)."""
        cache, problem = read(outcome, probe, self.conv)
        if probe.role == "base":
            if cache is not None:
                self.bases[probe.check_id] = (probe, cache)
            return cache is not None
        if probe.role == "relative":
            self.results.merge(self._relative(probe, cache, problem, outcome))
            return cache is not None
        ids = probe.check_ids()
        if problem:
            return _nothing_to_check(self.results, ids, probe, outcome, problem)
        self.caches.append((probe, cache))
        self.results.add(passed(ids[0], f"{probe.slot}: returned {outcome.message or cache.dtype}"))
        for check_id, result in zip(ids[1:], self._checks(probe, cache), strict=True):
            self.results.add(CheckResult(check_id, result.status, f"{probe.slot}: {result.message}", result.worst))
        return True

    def _checks(self, probe: MropeProbe, cache: Cache) -> list[CheckResult]:
        finite = properties.check_finite(cache)
        names = [check_id.partition("[")[0] for check_id in probe.check_ids()[2:]]
        if not finite.passed:
            return [finite, *(skipped(name, "not judged: NaN or Inf values") for name in names)]
        error = crop_position_error(probe.crop, self.conv.axes) if probe.crop else None
        made = {"formula": lambda: properties.check_formula(cache, probe.positions, self.conv, position_error=error),
                "norm": lambda: properties.check_norm(cache, probe.positions, self.conv, position_error=error),
                "identity": lambda: properties.check_identity(cache, probe.positions, self.conv)}
        return [finite, *(made[name]() for name in names)]

    def _relative(self, probe: MropeProbe, cache, problem, outcome) -> CheckResult:
        name = probe.check_id
        if problem:
            return _call_verdict(name, probe, outcome, problem)
        if name not in self.bases:
            return skipped(name, f"not run: the call before {probe.slot} returned nothing to check")
        base, first = self.bases[name]
        return properties.check_relative(first, cache, base.positions, probe.positions, probe.axis, self.conv, name)


def _call_verdict(check_id: str, probe, outcome: Outcome, problem: str) -> CheckResult:
    """A call that gave nothing to check: skipped where the gate made no call, else failed."""
    if outcome.status == "not-run":
        return skipped(check_id, f"{probe.slot}: {outcome.message}")
    return failed(check_id, f"{probe.slot}: {problem}")


def _nothing_to_check(results: Results, ids: list, probe, outcome: Outcome, problem: str) -> bool:
    """The call's verdict on its first id, the rest not run; False (no values to keep)."""
    results.add(_call_verdict(ids[0], probe, outcome, problem))
    results.not_run(ids[1:], ids[0], f"the call for {probe.slot} returned nothing to check")
    return False


# -- in this process: the family's tests and corpus ------------------------------------------


def judge(target, how: dict, convention: MropeConvention, head_dim: int, max_positions=None) -> list[CheckResult]:
    """Every verdict of the grid's calls of ``target`` (called as ``how`` declares: ``signature``,
    ``init``, ``method``, ``kwargs``, ``sizes``), made in this process."""
    from posenc_spec.gate.child.adapters import Maker

    from .adapters import adapt

    how = {"api": "mrope-cache", **how}
    function = adapt(target, how, Maker(target, how))
    results = Results()
    judged = MropeJudge(convention, results)
    for probe in probes_for(convention, how.get("signature") or "positions", head_dim, max_positions):
        if probe.role != "repeat":
            judged.judge(probe, made_here(function, probe.request()))
    return list(results.by_id.values())


class PositionsJudge:
    """Checks of one position-ids target (``mrope-positions``): each call's ids exactly the
    reference's (:func:`.oracle.sequence_positions`)."""

    def __init__(self, spatial_merge_size: int, temporal_interval: float, results: Results):
        self.merge, self.interval, self.results = spatial_merge_size, temporal_interval, results

    def kept_table(self):
        return None

    def judge(self, probe, outcome: Outcome) -> bool:
        from . import oracle

        call_id, formula_id = probe.check_ids()
        status = call_status(outcome)
        length = probe.token_types.size
        if status is None and (len(outcome.arrays) != 1 or outcome.dtype not in ("int32", "int64")
                               or np.asarray(outcome.table).size != 3 * length):
            status = (f"returned {len(outcome.arrays)} array(s) of {', '.join(outcome.dtypes)} where one integer "
                      f"array of 3 x {length} position ids belongs")
        if status:
            return _nothing_to_check(self.results, [call_id, formula_id], probe, outcome, status)
        self.results.add(passed(call_id, f"{probe.slot}: returned {outcome.message or outcome.dtype}"))
        got = np.asarray(outcome.table, dtype=np.int64).reshape(3, length)
        want = oracle.sequence_positions(probe.token_types, probe.grids, self.merge, self.interval)
        off = np.flatnonzero((got != want).any(axis=0))
        if off.size:
            token = int(off[0])
            kinds = ("text", "image", "video")
            self.results.add(failed(formula_id, f"{probe.slot}: {off.size} of {length} tokens off; the first, token "
                                                f"{token} ({kinds[probe.token_types[token]]}), has (t, h, w) = "
                                                f"{tuple(int(v) for v in got[:, token])} where "
                                                f"{tuple(int(v) for v in want[:, token])} belongs"))
        else:
            self.results.add(passed(formula_id, f"{probe.slot}: all {length} tokens' (t, h, w) as the reference "
                                                f"lays them"))
        return True


def handed_bound(probe, convention: MropeConvention, signature: str):
    """The ``(L, P)`` bound of the cos and sin an apply call is handed (the exact values rounded
    to x's dtype), or None where the signature hands none (the code makes its own)."""
    if signature not in APPLY_SIGNATURES_WITH_CACHE:
        return None
    return np.full((probe.positions.shape[1], convention.pairs),
                   unit_roundoff(probe.x_dtype) + 2 * unit_roundoff("float64"))


def read_applied(probe, outcome: Outcome, convention: MropeConvention, signature: str) -> properties.Applied:
    """An apply call's rotated x (of the right size and a real dtype) with its bounds."""
    x = probe.x[0].astype(np.float64)
    got = np.asarray(outcome.table, dtype=np.float64).reshape(x.shape)
    dtype = max((outcome.dtype, probe.x_dtype), key=unit_roundoff)
    bound = apply_tolerance(x, probe.positions, convention, probe.x_dtype, dtype,
                            handed_bound(probe, convention, signature))
    return properties.Applied(got, x, probe.positions, bound, dtype)


class ApplyJudge:
    """Checks of one apply target (``mrope-apply``): each call's rotated x against the exact rotation."""

    def __init__(self, convention: MropeConvention, signature: str, results: Results):
        self.conv, self.signature, self.results = convention, signature, results

    def kept_table(self):
        return None

    def judge(self, probe, outcome: Outcome) -> bool:
        ids = probe.check_ids()
        status = call_status(outcome)
        if status is None and (len(outcome.arrays) != 1 or outcome.dtype not in REAL
                               or np.asarray(outcome.table).size != probe.x.size):
            shapes = ", ".join(str(np.asarray(array).shape) for array in outcome.arrays)
            status = f"returned {len(outcome.arrays)} array(s) ({shapes}) where x rotated, {probe.x.shape}, belongs"
        if status:
            return _nothing_to_check(self.results, ids, probe, outcome, status)
        self.results.add(passed(ids[0], f"{probe.slot}: returned {outcome.message or outcome.dtype}"))
        applied = read_applied(probe, outcome, self.conv, self.signature)
        got = applied.got
        finite = np.isfinite(got).all()
        made = {"finite": passed("finite", f"all {got.size} values finite") if finite else
                failed("finite", f"{int((~np.isfinite(got)).sum())} NaN or Inf values"),
                "formula": properties.check_apply_formula, "norm": properties.check_apply_norm,
                "identity": properties.check_apply_identity, "passthrough": properties.check_apply_passthrough}
        for check_id in ids[1:]:
            name = check_id.partition("[")[0]
            check = made[name]
            result = check if isinstance(check, CheckResult) else (
                check(applied, self.conv) if finite else skipped(name, "not judged: NaN or Inf values"))
            self.results.add(CheckResult(check_id, result.status, f"{probe.slot}: {result.message}", result.worst))
        return True
