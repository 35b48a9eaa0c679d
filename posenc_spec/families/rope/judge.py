"""Judge a RoPE target's calls: each check from the raw numbers, against the exact values
of :mod:`posenc_spec.families.rope.oracle` and the bounds of :mod:`posenc_spec.tolerance`."""

from __future__ import annotations

import numpy as np

from posenc_spec.families.rope import grid, oracle, tolerance
from posenc_spec.families.rope.read import WIDER, Unreadable, effective_layout, read_apply, read_cache, read_freqs
from posenc_spec.gate.judge import call_status, failed, passed
from posenc_spec.results import CheckResult, Worst, check_finite, comparison_worst, skipped
from posenc_spec.tolerance import compare


def _compare(name, what, pieces) -> CheckResult:
    """One check over several ``(label, actual, expected, bound)`` pieces: the worst element rules."""
    worst_piece, worst = None, None
    for label, actual, expected, bound in pieces:
        result = compare(actual, expected, bound)
        if worst is None or result.max_ratio > worst.max_ratio:
            worst_piece, worst = label, result
    if worst is None or worst.size == 0:
        return skipped(name, f"{what}: nothing to compare")
    summary = f"max error/tolerance {worst.max_ratio:.3g}" if worst.ok else f"{worst_piece}: {worst.describe()}"
    return CheckResult(name, "passed" if worst.ok else "failed", f"{what}: {summary}", comparison_worst(worst))


def _by_row(probe, compute) -> tuple:
    """``compute(row, positions, length)``'s arrays for the probe's positions: called once for
    ``(seq,)`` positions (row None), else once per row of ``(batch, seq)`` positions, every
    row at the call's length (its largest position + 1), and stacked."""
    if probe.positions.ndim == 1:
        return compute(None, probe.positions, None)
    length = int(probe.positions.max()) + 1
    per_row = [compute(row, positions, length) for row, positions in enumerate(probe.positions)]
    return tuple(np.stack(arrays) for arrays in zip(*per_row, strict=True))


class RopeJudge:
    """Checks of one RoPE target, probe by probe (``results`` is the engine's)."""

    def __init__(self, spec, api: str, results):
        self.spec, self.api, self.results = spec, api, results
        self.conv = spec.convention
        self.prefix: list = []

    def judge(self, probe, outcome) -> bool:
        """Judge one call; whether it returned something readable (for determinism). A call
        that was not made leaves the checks that read it skipped, with the reason."""
        if probe.role == "relative":
            self.results.add(skipped(probe.check_id, outcome.message) if outcome.status == "not-run"
                             else self._relative(probe, outcome))
            return False
        if probe.role == "prefix":
            self.prefix.append((probe, outcome))
            if len(self.prefix) == len(grid.PREFIX_LENGTHS):
                self.results.add(self._prefix(probe.check_id))
                self.prefix = []
            return False
        if probe.role in ("history", "sequence"):
            values, problem = self.values(probe, outcome)
            what = f"{probe.slot} ({probe.note})" if probe.note else probe.slot
            if outcome.status == "not-run":
                result = skipped(probe.check_id, f"{what}: {outcome.message}")
            elif problem:
                result = failed(probe.check_id, f"{what}: {problem}")
            else:
                result = self.formula(probe, values, probe.check_id, probe.note or "the same call after a longer one")
            self.results.merge(result)
            return False
        return self._table(probe, outcome)

    # -- reading -----------------------------------------------------------------------

    def kept_table(self):
        """None: rotary embeddings are drawn by ``posenc-spec plot``, not from a report."""
        return None

    def values(self, probe, outcome):
        """``(read values, problem)``: the call's arrays as the declaration shapes them."""
        status = call_status(outcome)
        if status:
            return None, status
        pairs = self.conv.num_pairs(probe.head_dim)
        try:
            if probe.kind == "freqs":
                return read_freqs(outcome, pairs), None
            if probe.kind == "cache":
                batch, rows = probe.rows.shape
                parts, dtype = read_cache(outcome, self.spec.cache_form, self.spec.cache_layout, rows, pairs,
                                          batch if probe.positions.ndim == 2 else 1)
                if probe.x_dtype and dtype not in WIDER[probe.x_dtype]:
                    raise Unreadable(f"returned {dtype} for a {probe.x_dtype} x: narrower than x")
                return (parts, dtype), None
            return read_apply(outcome, grid.to_layout(probe.x, probe.x_layout).shape, probe.x_dtype,
                              lambda y: grid.from_layout(y, probe.x_layout)), None
        except Unreadable as problem:
            return None, str(problem)

    # -- the checks --------------------------------------------------------------------

    def _table(self, probe, outcome) -> bool:
        ids = probe.check_ids()
        values, problem = self.values(probe, outcome)
        if problem:
            if outcome.status == "not-run":
                self.results.add(skipped(ids[0], outcome.message))
            else:
                self.results.add(failed(ids[0], f"{probe.slot}: {problem}"))
            self.results.not_run(ids[1:], ids[0], f"the call for {probe.slot} returned nothing to check")
            return False
        arrays = list(values[0]) if probe.kind == "cache" else [values[0]]
        self.results.add(passed(ids[0], f"returned {outcome.message}"))
        finite = check_finite(np.concatenate([np.ravel(a) for a in arrays]), ids[1])
        self.results.add(finite)
        if not finite.passed:
            self.results.not_run(ids[2:], ids[1], f"the {probe.slot} result holds NaN or Inf")
            return True
        expected = self.expected_pieces(probe, values)  # once: every check of the call compares with it
        self.results.add(self.formula(probe, values, ids[2], expected=expected))
        if probe.kind == "freqs":
            self.results.add(self.attention_factor(probe, values, ids[3]))
        elif probe.kind == "cache":
            self.results.add(self._cache_identity(probe, expected[1], ids[3]))
        else:
            for check in self._apply_properties(probe, values, expected[1], ids[3:]):
                self.results.add(check)
        return True

    def formula(self, probe, values, name, note="", expected=None) -> CheckResult:
        """The ``formula`` check of one call's read ``values``: every piece within its bound
        (``expected``: :meth:`expected_pieces` of them, when already in hand)."""
        if values is None:
            return skipped(name, f"not run: the call for {probe.slot} returned nothing to check")
        what = f"{probe.slot} under {self.spec.describe()}" + (f" ({note})" if note else "")
        dtype, pieces = expected or self.expected_pieces(probe, values)
        return _compare(name, f"{what}, {dtype}", pieces)

    @property
    def cache_layout(self) -> str:
        """How each of cos and sin is laid out (:func:`~.read.effective_layout`)."""
        return effective_layout(self.spec.cache_form, self.spec.cache_layout)

    def expected_pieces(self, probe, values) -> tuple[str, list[tuple]]:
        """``(the dtypes in words, [(label, actual, expected, bound), ...])`` of one call's read
        ``values``: what the formula check compares (and ``plot`` draws)."""
        conv, head_dim = self.conv, probe.head_dim
        if probe.kind == "freqs":
            inv_freq, dtype, _ = values
            expected, _ = conv.frequencies(head_dim)
            bound = tolerance.rope_frequency_tolerance(conv, head_dim, out_dtype=dtype)
            return dtype, [("inv_freq", inv_freq, expected, bound)]
        if probe.kind == "apply":
            result, dtype = values
            layout = self.spec.rope_layout

            def rotated(x, positions, length):
                return (oracle.apply(x, positions, conv, head_dim, layout, length),
                        tolerance.rope_apply_tolerance(x, positions, conv, head_dim, layout, probe.x_dtype, dtype,
                                                       seq_len=length))

            expected, bound = _by_row(probe, lambda row, positions, length: rotated(
                probe.x if row is None else probe.x[row], positions, length))
            return f"{probe.x_dtype} x, {dtype} result", [("x'", result, expected, bound)]
        parts, dtype = values
        layout = self.cache_layout

        def shaped(compact):
            return compact if layout == "compact" else oracle.expand(compact, layout)

        if self.spec.cache_form == "angles":
            theta, bound = _by_row(probe, lambda _, positions, length: (
                oracle.angles(positions, conv, head_dim, length)[0],
                tolerance.rope_angle_tolerance(positions, conv, head_dim, dtype, seq_len=length)))
            return dtype, [("angles", parts[0], shaped(theta), shaped(bound))]
        cos, sin, bound = _by_row(probe, lambda _, positions, length: (
            *oracle.cache(positions, conv, head_dim, length),
            tolerance.rope_cache_tolerance(positions, conv, head_dim, dtype, seq_len=length)))
        return dtype, [("cos", parts[0], shaped(cos), shaped(bound)), ("sin", parts[1], shaped(sin), shaped(bound))]

    def attention_factor(self, probe, values, name) -> CheckResult:
        _, _, factor = values
        expected = self.conv.attention_factor()
        if factor is None:
            if expected == 1:
                return passed(name, "returned inv_freq alone, which declares A = 1, as the convention has")
            return failed(name, f"returned inv_freq alone, which declares A = 1; the convention's A is {expected:.9g} "
                                "(return (inv_freq, attention_factor))")
        bound = tolerance.rope_attention_factor_tolerance(self.conv)
        error = abs(factor - expected)
        worst = Worst((), (), factor, expected, error, bound)
        verdict = passed if error <= bound else failed
        return verdict(name, f"attention factor {factor:.9g}, expected {expected:.9g} (error {error:.3g} vs "
                             f"tolerance {bound:.3g})", worst)

    def _cache_identity(self, probe, pieces, name) -> CheckResult:
        rows = np.flatnonzero(probe.positions == 0)
        if rows.size == 0 or self.spec.cache_form == "angles":
            return skipped(name, "no row stands for position 0" if rows.size == 0
                           else "an angles cache has no cos or sin to check at position 0")
        pieces = [(label, part[rows], want[rows], limit[rows]) for label, part, want, limit in pieces]
        return _compare(name, "at position 0, cos = A and sin = 0", pieces)

    def _apply_properties(self, probe, values, pieces, names) -> list[CheckResult]:
        result, _ = values
        columns = oracle.columns_for(self.conv, probe.head_dim, self.spec.rope_layout)
        [(_, _, expected, bound)] = pieces
        x = probe.x
        through = columns.passthrough
        changed = np.flatnonzero(np.any(result[..., through] != x[..., through], axis=tuple(range(x.ndim - 1))))
        if through.size == 0:
            passthrough = skipped(names[0], "every feature is rotated")
        elif changed.size:
            passthrough = failed(names[0], f"{changed.size} of {through.size} features beyond the rotated ones "
                                           f"changed, first feature {int(through[changed[0]])}: they must come back "
                                           "bit for bit")
        else:
            passthrough = passed(names[0], f"the {through.size} features beyond the rotated ones came back bit for bit")
        factor = abs(self.conv.cache_factor(self.conv.attention_factor()))  # A follows no call length
        measured = np.hypot(result[..., columns.a], result[..., columns.b])
        exact = factor * np.hypot(x[..., columns.a], x[..., columns.b])
        norm = _compare(names[1], "each pair's length is A times x's", [
            ("pair length", measured, exact, bound[..., columns.a] + bound[..., columns.b])])
        rows = np.flatnonzero(probe.positions == 0)
        identity = _compare(names[2], "at position 0 the result is A x", [
            ("x'", result[..., rows, :], expected[..., rows, :], bound[..., rows, :])]) if rows.size else \
            skipped(names[2], "no row stands for position 0")
        return [passthrough, norm, identity]

    def _relative(self, probe, outcome) -> CheckResult:
        """``q(m) . k(n)`` against ``q(m + S) . k(n + S)`` (head 0 as q, head 1 as k)."""
        values, problem = self.values(probe, outcome)
        if problem:
            return failed(probe.check_id, f"{probe.slot}: {problem}")
        result, _ = values
        [(_, _, _, bound)] = self.expected_pieces(probe, values)[1]
        half = probe.positions.size // 2
        shift = int(probe.positions[half] - probe.positions[0])
        blocks = [slice(0, half), slice(half, 2 * half)]
        scores, limits = [], []
        for block in blocks:
            q, k = result[0, 0, block], result[0, 1, block]
            tq, tk = bound[0, 0, block], bound[0, 1, block]
            scores.append(q @ k.T)
            limits.append(np.abs(q) @ tk.T + tq @ np.abs(k).T + tq @ tk.T)
        return _compare(probe.check_id, f"q(m).k(n) against q(m+{shift}).k(n+{shift})",
                        [("score", scores[1], scores[0], limits[0] + limits[1])])

    def _prefix(self, name) -> CheckResult:
        (short_probe, short), (long_probe, long) = self.prefix
        not_made = next((outcome for outcome in (short, long) if outcome.status == "not-run"), None)
        if not_made is not None:
            return skipped(name, not_made.message)
        values = [self.values(short_probe, short), self.values(long_probe, long)]
        problems = [problem for _, problem in values if problem]
        if problems:
            return failed(name, problems[0])
        short_pieces = self.expected_pieces(short_probe, values[0][0])[1]
        long_pieces = self.expected_pieces(long_probe, values[1][0])[1]
        rows = short_probe.positions.size
        pieces = [(f"{label} rows 0..{rows - 1}", a, b[:rows], ta + tb[:rows])
                  for (label, a, _, ta), (_, b, _, tb) in zip(short_pieces, long_pieces, strict=True)]
        return _compare(name, f"the cache of 0..{rows - 1} against the first rows of the cache of "
                              f"0..{long_probe.positions.size - 1}", pieces)
