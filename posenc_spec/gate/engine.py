"""The gate's engine: declarations in, reports out.

``declaration -> grid -> sealed child -> judge -> report``: :func:`check_many` asks each
declaration's family (:mod:`posenc_spec.registry`) whether its options leave anything to
check, starts the root template in the background, then gives
each target a turn in a :class:`~posenc_spec.gate.runner.Slot` (``jobs`` slots take turns
in parallel, targets of one module one after another so that a slot imports the module
once) and judges its outcomes: the family judges the values, :mod:`posenc_spec.gate.judge`
what every family shares (import, determinism, aliasing, global state); under ``fail_fast``
(:func:`first_failure`) a target's calls stop at its first failed check. A target whose
source files changed between the start of the run and its end fails ``import``
(:mod:`posenc_spec.gate.sources`). Reports come back in the declarations' order, the same
for any number of jobs.

Example::

    from posenc_spec.gate import check_target, declare

    report = check_target(declare({"target": "mypkg.pe:table", "convention": "vaswani"}))
    report.conforms, [check.name for check in report.failures()]
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import threading
import time

import numpy as np

from . import advice, against, judge
from .declaration import Declaration
from .learned import LearnedModules
from .loader import module_key
from .options import RunOptions
from .report import GateReport, finish
from .runner import Slot
from .sandbox import Limits, a_run, root_template
from .sources import SourceWatch


def probes(declaration: Declaration) -> list:
    """The calls of the convention's checks (none when only a snapshot judges the target)."""
    return declaration.family.probes(declaration) if declaration.formula else []


def sequence_probes(declaration: Declaration) -> list:
    """The call sequences real code plays, each starting clean (:class:`Calls` says when)."""
    return declaration.family.sequence_probes(declaration) if declaration.formula else []


def plan(declaration: Declaration, calls: list | None = None) -> list[str]:
    """Every check id the declaration's report holds, in order (``calls``: its
    :func:`probes` and :func:`sequence_probes`, when already built)."""
    calls = probes(declaration) + sequence_probes(declaration) if calls is None else calls
    ids = declaration.family.plan_ids(calls) if calls else ["import"]
    return ids + [against.CHECK_ID] if declaration.against is not None else ids


@dataclasses.dataclass(frozen=True)
class Calls:
    """What one run of a declaration asks: the grid's probes, a snapshot's replayed calls and
    the sequences, in one process. The sequences come after the grid, at sizes it never asks,
    or, where their head size is one the grid calls (a declared ``head_dim``), before it
    (``sequences_first``): either way they start clean."""

    grid: list
    replayed: list
    sequences: list = ()
    sequences_first: bool = False

    @classmethod
    def of(cls, declaration: Declaration) -> Calls:
        replayed = against.replay_requests(declaration.against) if declaration.against is not None else []
        first = declaration.formula and declaration.family.sequences_first(declaration)
        return cls(probes(declaration), replayed, sequence_probes(declaration), first)

    @property
    def probes(self) -> list:
        """The probes the judge reads, in order: the grid's, then the sequences'."""
        return [*self.grid, *self.sequences]

    @functools.cached_property
    def _order(self) -> list:
        """What each request is, in the order they are made: ``("grid" | "replayed" | "sequence", index)``."""
        grid = [("grid", index) for index in range(len(self.grid))]
        replayed = [("replayed", index) for index in range(len(self.replayed))]
        played = [("sequence", index) for index in range(len(self.sequences))]
        return played + grid + replayed if self.sequences_first else grid + replayed + played

    def requests(self) -> list:
        """The requests, in the order they are made (built once: the report reads their labels)."""
        return list(self._requests)

    @functools.cached_property
    def _requests(self) -> tuple:
        made = {"grid": self.grid, "sequence": self.sequences}
        return tuple(self.replayed[index] if kind == "replayed" else made[kind][index].request()
                     for kind, index in self._order)

    def split(self, outcomes: list) -> tuple[list, list]:
        """The outcomes of :attr:`probes`, in their order, and those of the replayed calls
        (none where the target did not import)."""
        by_kind = {"grid": [], "replayed": [], "sequence": []}
        for (kind, _), outcome in zip(self._order, outcomes, strict=False):  # none without an import
            by_kind[kind].append(outcome)
        return by_kind["grid"] + by_kind["sequence"], by_kind["replayed"]

    def in_grid(self, index: int) -> bool:
        """Whether request ``index`` is a call of the grid (not a sequence's, not a replayed one)."""
        return self._order[index][0] == "grid"

    def probe_at(self, index: int):
        """The probe of request ``index`` (None for a replayed call)."""
        kind, position = self._order[index]
        return None if kind == "replayed" else {"grid": self.grid, "sequence": self.sequences}[kind][position]

    def overwritten(self, outcomes: list) -> list[tuple[str, str, str]]:
        """``(earlier slot, later slot, what)`` for each result the next call changed."""
        labels = [request.label for request in self.requests()]
        return [(labels[index - 1], labels[index], what) for index in range(1, len(outcomes))
                for what in outcomes[index].overwrote]


def judge_run(declaration: Declaration, calls: Calls, run, keep_table: bool = False,
              early: Verdicts | None = None) -> GateReport:
    """The report on one target from its turn (:class:`~posenc_spec.gate.runner.TargetRun`)
    through ``calls``. NaN and infinite values are verdicts, never warnings of the gate's own.
    ``early``: the probes' verdicts judged as the replies arrived (:class:`Verdicts`), used
    where they judged the very outcomes the turn ended with, else judged again from them."""
    with np.errstate(all="ignore"):
        return _judge_run(declaration, calls, run, keep_table, early)


class Verdicts:
    """The verdicts on a target's probes, one outcome at a time, in the order of
    :attr:`Calls.probes`: the family's checks, determinism, and what the calls changed.

    :meth:`arrived` takes each outcome as the turn receives it (request order: the sequences
    may come before the grid), so that the gate judges one reply while the child computes
    the next; an outcome is judged once every probe before it has been, so the verdicts are
    those of judging the turn's outcomes in order after it. :meth:`judged` says whether they
    are: an outcome the turn replaced afterwards (a forged channel, a helper's failure) is
    judged again from the turn's final outcomes."""

    def __init__(self, declaration: Declaration, calls: Calls, keep_table: bool = False):
        self.declaration, self.calls, self.keep_table = declaration, calls, keep_table
        self.results = judge.Results()
        self.family = None  # made with the first probe's outcome: only a target with probes has one
        self.outcomes: list = []  # judged, in the order of calls.probes
        self.waiting: dict[int, object] = {}  # probe index -> an outcome that arrived before an earlier one
        self.firsts, self.changes, self.written, self.reseeded = {}, [], [], []
        grid = len(calls.grid)
        self._probe_of = [None if kind == "replayed" else position + (grid if kind == "sequence" else 0)
                          for kind, position in calls._order]

    def arrived(self, index: int, outcome) -> None:
        """Take the outcome of request ``index``; judge every outcome now next in order."""
        probe_index = self._probe_of[index] if index < len(self._probe_of) else None
        if probe_index is None:
            return
        self.waiting[probe_index] = outcome
        with np.errstate(all="ignore"):
            while len(self.outcomes) in self.waiting:
                self._judge(self.waiting.pop(len(self.outcomes)))

    def _judge(self, outcome) -> None:
        probe = self.calls.probes[len(self.outcomes)]
        self.outcomes.append(outcome)
        if self.family is None:
            self.family = self.declaration.family.judge(self.declaration, self.results, self.keep_table)
        self.changes += [(probe.slot, change) for change in outcome.state]
        self.written += [(probe.slot, name) for name in outcome.written]
        if probe.role != "repeat":
            if self.family.judge(probe, outcome) and probe.role == "table":
                self.firsts.setdefault(probe.slot, outcome)
            return
        first = self.firsts.get(probe.repeats)
        self.results.add(judge.judge_determinism(probe.slot, probe.check_id, outcome, first))
        if first is None:
            self.results.causes[probe.check_id] = f"call[{probe.repeats}]"
        elif outcome.ran:
            self.reseeded = judge.reseeded_generators(first, outcome)

    def judged(self, outcomes: list) -> bool:
        """Whether these verdicts are of exactly ``outcomes`` (the same objects, in order)."""
        return len(outcomes) == len(self.outcomes) and all(
            mine is theirs for mine, theirs in zip(self.outcomes, outcomes, strict=True))

    @classmethod
    def of(cls, declaration: Declaration, calls: Calls, outcomes: list, keep_table: bool) -> Verdicts:
        """The verdicts on ``outcomes`` (those of :attr:`Calls.probes`, in order), judged now."""
        verdicts = cls(declaration, calls, keep_table)
        with np.errstate(all="ignore"):
            for outcome in outcomes:
                verdicts._judge(outcome)
        return verdicts


def _judge_run(declaration: Declaration, made: Calls, run, keep_table: bool, early: Verdicts | None) -> GateReport:
    calls = made.probes
    ids = plan(declaration, calls)
    outcomes, replayed = made.split(run.outcomes)
    warnings = judge.import_warnings(run.import_state)
    if not run.imported:
        results = judge.Results()
        results.add(judge.failed("import", run.import_message))
        results.not_run(ids[1:], "import", "the target could not be imported")
        return finish(declaration, ids, results.by_id, results.causes, importable=False, warnings=warnings)
    verdicts = early if early is not None and calls and early.judged(outcomes) else None
    if verdicts is None:
        verdicts = Verdicts.of(declaration, made, outcomes if calls else [], keep_table)
    results = verdicts.results
    results.add(judge.passed("import", run.import_message))
    if declaration.against is not None:
        check, diffs, notes = against.judge_regression(declaration, declaration.against, replayed, made.replayed,
                                                       made.grid)
        results.add(dataclasses.replace(check, details=tuple(diff.as_dict() for diff in diffs if diff is not None)))
        warnings += notes
    if not calls:
        return finish(declaration, ids, results.by_id, results.causes, importable=True, warnings=warnings)
    family, reseeded = verdicts.family, verdicts.reseeded
    ran = [outcome for outcome in outcomes if outcome.ran]
    results.add(judge.judge_aliasing(made.overwritten(run.outcomes), bool(ran)))
    results.add(judge.judge_state(verdicts.changes, verdicts.written, reseeded, bool(ran),
                                  judge.unreadable_generators(ran), run.import_state.failures))
    warnings += judge.call_warnings([(probe.slot, outcome) for probe, outcome in zip(calls, outcomes, strict=True)])
    drawn = [name for name in judge.drawn_generators(ran) if name not in reseeded]
    warnings += [f"draws from {name} global random number generator (it advances the caller's random stream)"
                 for name in drawn]
    kept = family.kept_table() if keep_table else None
    report = finish(declaration, ids, results.by_id, results.causes, importable=True, warnings=warnings, kept=kept)
    report.advice = advice.common_cause(report)
    if any(check.status == "failed" and check.name.startswith("formula[") for check in report.checks):
        found = declaration.family.nearest(declaration, family)
        report.nearest = found or {"name": "unknown", "message": f"run {advice.identify_command(declaration)}"}
    report.hints = advice.hints(declaration, calls, outcomes, report)
    return report


STOPPED = "--fail-fast stopped this target at its first failed check"


class FailFast:
    """For ``--fail-fast``: the ``stop_after`` of :meth:`~posenc_spec.gate.runner.Slot.run`.

    It judges each probe's outcome as it arrives and, once a check has failed (one the xfails
    do not name; ``global-state`` fails with the first call that breaks it), gives the reason
    to make no more calls but those it :meth:`keeps`: the grid's own calls, which the hint
    reads, so that a run under ``--fail-fast`` names the same slip as a full run (a hint read
    from fewer calls can name a slip the rest rule out). The determinism repeats, the
    sequences and a snapshot's replayed calls after it are not made. Sequences played before
    the grid stop nothing: the grid's calls say the first failure, as they do when the
    sequences come after it (a formula slip fails both, and is the grid's to name). The report
    is still judged afresh from the outcomes: this only decides which calls are made."""

    def __init__(self, declaration: Declaration, calls: Calls):
        self.declaration, self.calls = declaration, calls
        self.results = judge.Results()
        self.family = declaration.family.judge(declaration, self.results, keep_table=False)
        self.ahead = {probe.check_id for probe in calls.sequences} if calls.sequences_first else set()

    def keeps(self, index: int) -> bool:
        """Whether request ``index`` is made after the stop: a call of the grid, not a repeat."""
        return self.calls.in_grid(index) and self.calls.probe_at(index).role != "repeat"

    def __call__(self, index: int, outcome) -> str | None:
        declaration, probe = self.declaration, self.calls.probe_at(index)
        if probe is None:
            return None
        if outcome.ran and judge.breaks_global_state(outcome) and declaration.xfails.match("global-state") is None:
            return f"{STOPPED}, global-state"
        if outcome.overwrote and declaration.xfails.match("aliasing") is None:
            return f"{STOPPED}, aliasing"
        if probe.role == "repeat":
            return None
        with np.errstate(all="ignore"):
            self.family.judge(probe, outcome)
        failed = next((name for name, result in self.results.by_id.items()
                       if result.status == "failed" and name not in self.ahead
                       and declaration.xfails.match(name) is None), None)
        return None if failed is None else f"{STOPPED}, {failed}"


def first_failure(declaration: Declaration, calls: Calls) -> FailFast:
    """The ``stop_after`` of a ``--fail-fast`` turn (:class:`FailFast`)."""
    return FailFast(declaration, calls)


class _Judging:
    """The ``stop_after`` of a turn (:meth:`~posenc_spec.gate.runner.Slot.run`): each outcome
    judged as it arrives (:class:`Verdicts`), and under ``--fail-fast`` the stop (:class:`FailFast`)."""

    def __init__(self, verdicts: Verdicts, fail_fast: FailFast | None):
        self.verdicts, self.fail_fast = verdicts, fail_fast

    def arrived(self, index: int, outcome) -> None:
        self.verdicts.arrived(index, outcome)

    def __call__(self, index: int, outcome) -> str | None:
        return None if self.fail_fast is None else self.fail_fast(index, outcome)

    def keeps(self, index: int) -> bool:
        return self.fail_fast is not None and self.fail_fast.keeps(index)


def _turns(declarations: list[Declaration]):
    """The order of turns: targets of one module together, so that a slot imports it once,
    and within a module by API and convention, so that expected tables are reused;
    ``shared`` marks the modules that more than one target comes from."""
    keys = [module_key(declaration.target) for declaration in declarations]
    counts = collections.Counter(keys)
    first_seen = {key: index for index, key in reversed(list(enumerate(keys)))}

    def order_key(index):
        declaration = declarations[index]
        return first_seen[keys[index]], declaration.api, repr(declaration.spec), index

    order = sorted(range(len(declarations)), key=order_key)
    return [(index, counts[keys[index]] > 1) for index in order]


def shard(declarations: list, index: int, count: int) -> list:
    """The declarations of shard ``index`` of ``count`` (1-based): every ``count``-th one."""
    return [declaration for position, declaration in enumerate(declarations) if position % count == index - 1]


def _turn(slot: Slot, declaration: Declaration, shared: bool, options: RunOptions, keep_table: bool) -> GateReport:
    """One target's turn in a lane: its calls in a sealed child, then its report."""
    started = time.perf_counter()
    slot.limits = Limits.of_run(options, declaration.timeout)
    calls = Calls.of(declaration)
    if shared:
        slot.share_module(declaration.target, declaration.search_path, declaration.framework_request())
    else:
        slot.end_module()
    verdicts = Verdicts(declaration, calls, keep_table)
    judging = _Judging(verdicts, first_failure(declaration, calls) if options.fail_fast else None)
    run = slot.run(declaration.target, calls.requests(), declaration.search_path, judging, declaration.how())
    report = judge_run(declaration, calls, run, keep_table, verdicts)
    report.seconds, report.where = time.perf_counter() - started, run.where
    return report


class _Lanes:
    """``jobs`` lanes taking turns from one queue; each lane a thread with a slot of its own."""

    def __init__(self, root, declarations, options: RunOptions, keep_table: bool):
        self.root, self.declarations, self.options, self.keep_table = root, declarations, options, keep_table
        self.turns = collections.deque(_turns(declarations))
        self.learned = LearnedModules(declarations) if len(declarations) > 1 else None
        self.reports: list[GateReport | None] = [None] * len(declarations)
        self.lock = threading.Lock()
        self.errors: list[BaseException] = []

    def _next(self):
        with self.lock:
            return None if not self.turns or self.errors else self.turns.popleft()

    def lane(self) -> None:
        slot = Slot(self.root, None, own_root=min(self.options.jobs, len(self.declarations)) == 1,
                    learned=self.learned)
        try:
            while (turn := self._next()) is not None:
                index, shared = turn
                self.reports[index] = _turn(slot, self.declarations[index], shared, self.options, self.keep_table)
        except BaseException as error:  # surfaced by the caller, after every lane stopped
            with self.lock:
                self.errors.append(error)
        finally:
            slot.close()

    def run(self) -> list[GateReport]:
        count = min(self.options.jobs, len(self.declarations))
        if count == 1:
            self.lane()
        else:
            threads = [threading.Thread(target=self.lane, name=f"posenc-spec-lane-{n}", daemon=True)
                       for n in range(count)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        if self.errors:
            raise self.errors[0]
        return self.reports


def check_many(declarations, options: RunOptions | None = None, keep_table: bool = False,
               root=None) -> list[GateReport]:
    """One report per declaration, in the given order (see the module docstring). ``root``:
    the root template to fork from instead of the process's own (a caller's fork, for
    targets that are Python objects: :mod:`posenc_spec.gate.callables`)."""
    declarations = list(declarations)
    for declaration in declarations:
        if not isinstance(declaration, Declaration):
            raise TypeError(f"check_many takes Declaration objects, got {type(declaration).__name__}")
    if not declarations:
        return []
    for declaration in declarations:  # before anything starts: a usage error costs nothing
        declaration.family.assert_checkable(declaration)
    options = options or RunOptions()
    sources = SourceWatch(declarations)  # read before any target runs: a target may rewrite another's
    with a_run(), root_template(options.preload) if root is None else contextlib.nullcontext(root) as root:
        if declarations[0].formula:
            declarations[0].family.prepare(declarations[0])  # while the template imports torch
        reports = _Lanes(root, declarations, options, keep_table).run()
    return sources.judge(reports)


def check_target(declaration: Declaration, options: RunOptions | None = None) -> GateReport:
    """The report on one target."""
    return check_many([declaration], options or RunOptions(jobs=1))[0]
