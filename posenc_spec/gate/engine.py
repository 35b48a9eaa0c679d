"""The gate's engine: declarations in, reports out.

``declaration -> grid -> sealed child -> judge -> report``: :func:`check_many` checks
that each declaration can be told from its neighbours on the grid
(:mod:`posenc_spec.gate.vacuity`), starts the root template in the background, then gives
each target a turn in a :class:`~posenc_spec.gate.runner.Slot` (``jobs`` slots take turns
in parallel, targets of one module one after another so that a slot imports the module
once) and judges each outcome as it arrives (:mod:`posenc_spec.gate.judge`). Reports come
back in the declarations' order, the same for any number of jobs.

Example::

    from posenc_spec.gate import check_target, declare

    report = check_target(declare({"target": "mypkg.pe:table", "convention": "vaswani"}))
    report.conforms, [check.name for check in report.failures()]
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time

import numpy as np

from posenc_spec import checks

from . import against, grid, judge, vacuity
from .declaration import Declaration, RunOptions
from .loader import module_key
from .report import GateReport, KeptTable, finish
from .runner import Slot
from .sandbox import Limits, root_template


def plan(declaration: Declaration) -> list[str]:
    """Every check id the declaration's report holds, in order."""
    ids = grid.plan_ids(probes(declaration)) if declaration.formula else ["import"]
    return ids + [against.CHECK_ID] if declaration.against is not None else ids


def probes(declaration: Declaration) -> list[grid.Probe]:
    """The calls of the convention's checks (none when only a snapshot judges the target)."""
    if not declaration.formula:
        return []
    return grid.probes_for(declaration.api, declaration.t_max, declaration.max_positions, declaration.skip_odd)


def requests(declaration: Declaration) -> list:
    """Every call a run of ``declaration`` makes: the grid's, then a snapshot's."""
    replayed = against.replay_requests(declaration.against) if declaration.against is not None else []
    return [probe.request() for probe in probes(declaration)] + replayed


def judge_run(declaration: Declaration, run, keep_table: bool = False) -> GateReport:
    """The report on one target from its turn (:class:`~posenc_spec.gate.runner.TargetRun`).
    NaN and infinite values are verdicts, never warnings of the gate's own."""
    with np.errstate(all="ignore"):
        return _judge_run(declaration, run, keep_table)


def _judge_run(declaration: Declaration, run, keep_table: bool) -> GateReport:
    calls = probes(declaration)
    ids = plan(declaration)
    results = judge.Results()
    warnings = [f"importing the target changed {change}" for change in run.import_changes]
    if not run.imported:
        results.add(judge.failed("import", run.import_message))
        results.not_run(ids[1:], "import", "the target could not be imported")
        return finish(declaration, ids, results.by_id, results.causes, importable=False, warnings=warnings)
    results.add(judge.passed("import", run.import_message))
    if declaration.against is not None:
        replayed = run.outcomes[len(calls):]
        check, diffs = against.judge_regression(declaration.against, replayed,
                                                against.replay_requests(declaration.against), declaration.max_ulp)
        results.add(dataclasses.replace(check, details=tuple(diff.as_dict() for diff in diffs if diff is not None)))
    if not declaration.formula:
        return finish(declaration, ids, results.by_id, results.causes, importable=True, warnings=warnings)
    convention = declaration.convention
    firsts, changes, written, kept, worst_ratio = {}, [], [], None, 0.0
    reseeded: list[str] = []
    for probe, outcome in zip(calls, run.outcomes[:len(calls)], strict=True):
        changes += [(probe.slot, change) for change in outcome.state]
        written += [(probe.slot, name) for name in outcome.written]
        if probe.role == "table":
            judge.judge_table(probe, outcome, convention, results)
            if outcome.ok:
                firsts[probe.slot] = outcome
            formula = results.by_id.get(f"formula[{probe.slot}]")
            if keep_table and formula is not None and formula.status == "failed" and formula.worst is not None:
                if kept is None or formula.worst.ratio > worst_ratio:  # the most telling size
                    kept, worst_ratio = KeptTable(probe.slot, probe.positions, outcome.table, outcome.dtype), \
                        formula.worst.ratio
        elif probe.role == "odd":
            results.add(judge.judge_odd(probe, outcome, convention))
        elif probe.role == "degenerate":
            results.add(judge.judge_degenerate(probe, outcome, convention))
        else:
            first = firsts.get(probe.repeats)
            results.add(judge.judge_determinism(probe, outcome, first))
            if first is None:
                results.causes[probe.check_id] = f"call[{probe.repeats}]"
            elif outcome.ran:
                reseeded = judge.reseeded_generators(first, outcome)
    ran = [outcome for outcome in run.outcomes[:len(calls)] if outcome.ran]
    results.add(judge.judge_state(changes, written, reseeded, bool(ran)))
    drawn = [name for name in judge.drawn_generators(ran) if name not in reseeded]
    warnings += [f"draws from {name} global random number generator (it advances the caller's random stream)"
                 for name in drawn]
    if keep_table and kept is None:
        kept = _fallback_table(calls, firsts)
    return finish(declaration, ids, results.by_id, results.causes, importable=True, warnings=warnings, kept=kept)


def _fallback_table(calls, firsts) -> KeptTable | None:
    """The largest size that gets every property check (300x512 on the default grid)."""
    full = [probe for probe in calls if probe.role == "table" and probe.full and probe.slot in firsts]
    if not full:
        return None
    probe = max(full, key=lambda item: item.length * item.width)
    outcome = firsts[probe.slot]
    return KeptTable(probe.slot, probe.positions, outcome.table, outcome.dtype)


def _prepare_expectations(declaration: Declaration, dtype: str = "float32") -> None:
    """Compute the expected tables of ``declaration``'s grid for the most common output
    dtype while the template boots (they are cached; another dtype gets its own)."""
    for probe in probes(declaration):
        if probe.role == "odd" and declaration.convention.odd == "error":
            continue
        degenerate = probe.width == 2 and declaration.convention.freq_shift == 1
        try:
            checks.expectation(probe.positions, probe.width, declaration.convention, dtype, degenerate)
        except ValueError:  # a width this convention does not define
            pass


def _turns(declarations: list[Declaration]):
    """The order of turns: targets of one module together, so that a slot imports it once,
    and within a module by API and convention, so that expected tables are reused;
    ``shared`` marks the modules that more than one target comes from."""
    keys = [module_key(declaration.target) for declaration in declarations]
    counts = collections.Counter(keys)
    first_seen = {key: index for index, key in reversed(list(enumerate(keys)))}

    def order_key(index):
        declaration = declarations[index]
        return first_seen[keys[index]], declaration.api, repr(declaration.convention), index

    order = sorted(range(len(declarations)), key=order_key)
    return [(index, counts[keys[index]] > 1) for index in order]


def shard(declarations: list, index: int, count: int) -> list:
    """The declarations of shard ``index`` of ``count`` (1-based): every ``count``-th one."""
    return [declaration for position, declaration in enumerate(declarations) if position % count == index - 1]


def check_many(declarations, options: RunOptions | None = None, keep_table: bool = False) -> list[GateReport]:
    """One report per declaration, in the given order (see the module docstring)."""
    declarations = list(declarations)
    for declaration in declarations:
        if not isinstance(declaration, Declaration):
            raise TypeError(f"check_many takes Declaration objects, got {type(declaration).__name__}")
    options = options or RunOptions()
    if not declarations:
        return []
    for declaration in declarations:  # before anything starts: a usage error costs nothing
        if declaration.formula:
            vacuity.assert_distinguishable(declaration)
    with root_template() as root:
        if declarations[0].formula:  # while the template imports torch
            _prepare_expectations(declarations[0])
        reports: list[GateReport | None] = [None] * len(declarations)
        turns = collections.deque(_turns(declarations))
        lock = threading.Lock()
        errors: list[BaseException] = []

        def lane():
            slot = Slot(root, None)
            try:
                while True:
                    with lock:
                        if not turns or errors:
                            return
                        index, shared = turns.popleft()
                    declaration = declarations[index]
                    started = time.perf_counter()
                    limits = Limits(options.max_memory, options.max_processes, declaration.timeout)
                    slot.limits = limits
                    calls = requests(declaration)
                    if shared:
                        slot.share_module(declaration.target, len(calls), declaration.search_path)
                    else:
                        slot.end_module()
                    run = slot.run(declaration.target, calls, declaration.search_path)
                    report = judge_run(declaration, run, keep_table)
                    report.seconds = time.perf_counter() - started
                    report.where = run.where
                    reports[index] = report
            except BaseException as error:  # surfaced by the caller, after every lane stopped
                with lock:
                    errors.append(error)
            finally:
                slot.close()

        lanes = min(options.jobs, len(declarations))
        if lanes == 1:
            lane()
        else:
            threads = [threading.Thread(target=lane, name=f"posenc-spec-lane-{n}", daemon=True) for n in range(lanes)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        if errors:
            raise errors[0]
    return reports


def check_target(declaration: Declaration, options: RunOptions | None = None) -> GateReport:
    """The report on one target."""
    return check_many([declaration], options or RunOptions(jobs=1))[0]
