"""Assertion helpers: each failure names the implementation, the size and the worst element."""

from __future__ import annotations

import numpy as np

from posenc_spec import results
from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.properties import Expectation
from posenc_spec.families.sinusoidal.tolerance import element_tolerance
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options
from posenc_spec.results import CheckResult
from posenc_spec.tolerance import ratios


def assert_check(result: CheckResult, impl: str) -> None:
    assert result.passed, f"{impl}: {result.name} failed: {result.message}"


def assert_matches_formula(table, impl: str, exp: Expectation) -> None:
    """``table`` equals the formula element by element, within the per-element tolerance."""
    table = np.asarray(table)
    assert table.shape == exp.table.shape, f"{impl}: shape {table.shape}, expected {exp.table.shape}"
    assert_check(results.check_finite(table), impl)
    assert_check(checks.check_formula(table, exp), impl)


def assert_within(actual, expected, bound, what: str) -> None:
    """Element-wise ``|actual - expected| <= bound``; the message shows the worst element."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    bound = np.broadcast_to(bound, expected.shape)
    with np.errstate(invalid="ignore"):  # Inf - Inf is NaN, which ratios counts as infinitely wrong
        error = np.abs(actual - expected)
    ratio = ratios(np.array(error, dtype=np.float64), bound)  # the comparison's one rule
    if ratio.size and ratio.max() > 1:
        worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        raise AssertionError(
            f"{what}: {int((ratio > 1).sum())} of {ratio.size} out of bound; "
            f"worst at {list(map(int, worst))}: got {float(actual[worst])!r}, "
            f"expected {float(expected[worst])!r}, error {error[worst]:.3g} > bound {bound[worst]:.3g}"
        )


def float64_rounded_tolerance(positions, width: int, convention, dtype, rows=slice(None), columns=slice(None)):
    """The bound of a table computed in float64 and rounded once to ``dtype`` (the family, and
    the torch seed in float64): the per-element bound with float64 angle arithmetic and
    ``dtype``'s output rounding, ``u_64 ((2|x| + 5)|theta| + 4) + u_dtype``, at ``rows`` x ``columns``."""
    theta, log_omega = oracle.angles(positions, width, convention)
    return element_tolerance(theta[rows][:, columns], log_omega[columns], dtype, "float64")



def check_named(declarations: dict, jobs=1, preload=(), fail_fast=False) -> dict:
    """The gate's reports of ``declarations`` (name -> declaration) in one ``check_many`` run,
    under the same names. One lane by default: a module's targets share one module template,
    and pytest-xdist already keeps the cores busy; ``jobs=None`` takes the gate's default (the
    usable cores). ``preload`` and ``fail_fast`` as ``--preload`` and ``--fail-fast``."""
    reports = check_many(declarations.values(), run_options(jobs=jobs, preload=preload, fail_fast=fail_fast))
    return dict(zip(declarations, reports, strict=True))


def assert_fail_fast_agrees(fast: dict, declarations: dict) -> None:
    """The reports of a ``--fail-fast`` run (name -> report) against a full run of
    ``declarations`` (name -> declaration): the same verdict for each, and every check the
    fail-fast run failed fails in the full run too."""
    for name, full in check_named(declarations).items():
        assert full.conforms == fast[name].conforms, (
            f"{name}: conforms={full.conforms} in full, {fast[name].conforms} under --fail-fast")
        only_fast = {check.name for check in fast[name].failures()} - {check.name for check in full.failures()}
        assert not only_fast, f"{name}: failed under --fail-fast only: {sorted(only_fast)}"


def hint_texts(report) -> list[str]:
    """What a report's hints say, in order."""
    return [hint.text() for hint in report.hints]


def assert_same_hints(reports: dict, declarations: dict, fail_fast: bool) -> None:
    """The hints of ``reports`` (name -> report) against a run of ``declarations`` (name ->
    declaration) with or without ``--fail-fast``: the same hints, word for word, for each."""
    other = check_named(declarations, fail_fast=fail_fast)
    mode = "--fail-fast" if fail_fast else "a full run"
    differ = [f"{name}: {hint_texts(reports[name]) or 'no hint'}, under {mode} {hint_texts(other[name]) or 'no hint'}"
              for name in declarations if hint_texts(reports[name]) != hint_texts(other[name])]
    assert not differ, "hints that depend on the run mode:\n" + "\n".join(differ)


def advised(table: dict, hints) -> dict:
    """A ``[[targets]]`` table with the keys of a report's hints applied, as a user pastes them
    (the hints of one report are one explanation; a ``rope_parameters`` table's keys join
    those declared, as ``--rope-param`` does; a key the table gives by its former name is
    replaced, as a user edits the line)."""
    from posenc_spec.gate.keys import ALIASES

    table = dict(table)
    for key, value in (pair for hint in hints for pair in hint.declare):
        for old in [old for old in table if ALIASES.get(old) == key]:
            table[key] = table.pop(old)
        merged = isinstance(value, dict) and isinstance(table.get(key), dict)
        table[key] = {**table[key], **value} if merged else value
    return table


def _table_slots(declaration) -> set[str]:
    """The slots of the grid's table calls: the calls a hint reads."""
    return {probe.slot for probe in declaration.family.probes(declaration) if probe.role == "table"}


def assert_advice_conforms(reports: dict, entries) -> int:
    """Each corpus entry (its ``id`` and ``config_table()``) whose report (id -> report) has
    hints naming keys: its ``[[targets]]`` table with them applied passes every check of the
    calls the hint reads (the grid's tables), and fails nothing that passed before (a second,
    unrelated slip, such as a width with no value answered, may still fail as it did).
    Returns how many were replayed."""
    from posenc_spec.gate.declaration import declare

    reports = {entry.id: reports[entry.id] for entry in entries}
    replays = {entry.id: declare(advised(entry.config_table(), reports[entry.id].hints)) for entry in entries
               if any(hint.declare for hint in reports[entry.id].hints)}
    judged = check_named(replays) if replays else {}
    untrue = []
    for name, declaration in replays.items():
        before = {check.name for check in reports[name].failures()}
        slots = _table_slots(declaration)
        left = [check for check in judged[name].failures()
                if check.name not in before or check.name.partition("[")[2].rstrip("]") in slots]
        if left:
            untrue.append(f"{reports[name].target}: {'; '.join(hint_texts(reports[name]))} -> "
                          + "; ".join(f"{check.name}: {check.message}" for check in left[:3]))
    assert not untrue, "hints whose advice, applied, does not conform:\n" + "\n".join(untrue)
    return len(replays)


def failure_summary(report, limit: int = 3) -> str:
    """The first ``limit`` failed checks of a gate report, ``name: message`` each, and how
    many more there are: what an assertion on a verdict shows when it fails."""
    failures = report.failures()
    shown = "; ".join(f"{check.name}: {check.message}" for check in failures[:limit])
    return shown + (f" (+{len(failures) - limit} more)" if len(failures) > limit else "")


def assert_hint(report, expected: str, planted: str) -> None:
    """The report's hints name the ``expected`` slip (an id of the SLIPS of
    :mod:`posenc_spec.gate.identify.hint`), or, when ``expected`` is a reason why the tables
    cannot show the slip, name none (a false hint is a false alarm); ``planted`` is the bug."""
    from posenc_spec.gate.identify.hint import SLIPS

    named = [slip for hint in report.hints for slip in hint.slips]
    said = "; ".join(hint.text() for hint in report.hints) or "no hint"
    unsaid = [slip for hint in report.hints for slip in hint.slips if slip not in hint.text()]
    assert not unsaid, f"{report.target}: the text of a hint does not name {unsaid}: {said}"
    if expected in SLIPS:
        assert expected in named, f"{report.target} ({planted}): expected a hint naming {expected}, got: {said}"
    else:
        assert not named, f"{report.target} ({planted}): expected no hint ({expected}), got: {said}"
