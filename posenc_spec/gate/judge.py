"""Judge what a target returned: one :class:`~posenc_spec.results.CheckResult` per check id.

The parent computes every verdict here from the raw numbers the child sent; the child's
own words only ever make a check fail (a reason, a description of what came back).
"""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.calls import Outcome
from posenc_spec.results import CheckResult, Worst, skipped


def passed(name, message, worst=None) -> CheckResult:
    return CheckResult(name, "passed", message, worst)


def failed(name, message, worst=None) -> CheckResult:
    return CheckResult(name, "failed", message, worst)






_RANK = {"passed": 0, "skipped": 1, "noted": 2, "failed": 3}


class Results:
    """Check results by id, and for each check that could not run, the id that stopped it."""

    def __init__(self):
        self.by_id: dict[str, CheckResult] = {}
        self.causes: dict[str, str] = {}

    def add(self, result: CheckResult) -> None:
        self.by_id[result.name] = result

    def merge(self, result: CheckResult) -> None:
        """Add the verdict of one of several calls that share a check id (a sequence's): the
        first of the worst verdicts stands, and of passing calls the one closest to its bound."""
        earlier = self.by_id.get(result.name)
        closer = (earlier is not None and result.status == earlier.status == "passed" and result.worst is not None
                  and (earlier.worst is None or result.worst.ratio > earlier.worst.ratio))
        if earlier is None or _RANK[result.status] > _RANK[earlier.status] or closer:
            self.add(result)

    def not_run(self, names, cause: str, reason: str) -> None:
        for name in names:
            self.add(skipped(name, f"not run: {reason}"))
            self.causes[name] = cause














def call_status(outcome: Outcome) -> str | None:
    """None when the call returned numbers, else what it did instead, in words."""
    return None if outcome.ok else outcome.message


def judge_determinism(slot: str, check_id: str, outcome: Outcome, first: Outcome | None) -> CheckResult:
    """The repeat of call ``slot``, started from other generator states, against its first
    call: every array bit for bit."""
    if first is None:
        return skipped(check_id, f"not run: the first call for {slot} did not return a result")
    if outcome.status == "not-run":
        return skipped(check_id, outcome.message)
    if not outcome.ok:
        return failed(check_id, f"the second call for {slot} {outcome.message}")
    if first.dtypes != outcome.dtypes or [a.shape for a in first.arrays] != [a.shape for a in outcome.arrays]:
        return failed(check_id, f"two calls for {slot} returned {first.dtypes} {[a.shape for a in first.arrays]} "
                                f"and then {outcome.dtypes} {[a.shape for a in outcome.arrays]}")
    for position, (a, b) in enumerate(zip(first.arrays, outcome.arrays, strict=True)):
        if np.array_equal(a, b, equal_nan=True):
            continue
        a64, b64 = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64), b.astype(
            np.complex128 if np.iscomplexobj(b) else np.float64)
        difference = np.abs(a64 - b64)
        difference = np.where(np.isnan(a64) != np.isnan(b64), np.inf, np.nan_to_num(difference, nan=0.0))
        worst = np.unravel_index(int(np.argmax(difference)), difference.shape)
        element = Worst(tuple(int(i) for i in worst), a.shape, float(np.real(b64[worst])), float(np.real(a64[worst])),
                        float(difference[worst]), 0.0)
        which = f" (array {position})" if len(first.arrays) > 1 else ""
        return failed(check_id, f"two calls for {slot} differ{which} in {int((difference > 0).sum())} elements "
                                f"(the second started from another random state); worst at {list(element.index)}: "
                                f"{a64[worst]:.9g} then {b64[worst]:.9g}", element)
    return passed(check_id, f"two calls for {slot} from different random states returned the same "
                            f"{', '.join(outcome.dtypes)} result, bit for bit")


def _grouped(pairs):
    """``(what, "the call for S and N more")`` per distinct ``what`` of ``(slot, what)`` pairs."""
    slots: dict[str, list[str]] = {}
    for slot, what in pairs:
        slots.setdefault(what, []).append(slot)
    return [(what, f"the call for {found[0]}" + (f" and {len(found) - 1} more" if len(found) > 1 else ""))
            for what, found in slots.items()]


def drawn_generators(outcomes) -> list[str]:
    """The global generators some call left in another readable state than it found them
    (an unreadable one is :func:`unreadable_generators`)."""
    return sorted({name for outcome in outcomes for name, before in outcome.rng_before.items()
                   if (after := outcome.rng_after.get(name, before)) != before and _is_hex_digest(after)})


def unreadable_generators(outcomes) -> list[tuple[str, str]]:
    """``(name, why)`` of the global generators whose state no longer reads after some call:
    the child sends its reason in place of a hex digest (a target replaced the getter)."""
    return sorted({(name, after) for outcome in outcomes for name, after in outcome.rng_after.items()
                   if not _is_hex_digest(after)})


def breaks_global_state(outcome: Outcome) -> bool:
    """Whether this call alone fails ``global-state``: it changed global state, wrote into an
    argument or left a generator's state unreadable (a reseeding shows only in a pair of calls)."""
    return bool(outcome.state or outcome.written or unreadable_generators([outcome]))


def _is_hex_digest(text: str) -> bool:
    return len(text) == 32 and all(character in "0123456789abcdef" for character in text)


def reseeded_generators(first: Outcome, second: Outcome) -> list[str]:
    """The generators a call reseeded: two calls of one size, started from different
    states, left them in the same state."""
    return sorted(name for name, after in first.rng_after.items()
                  if first.rng_before.get(name) != second.rng_before.get(name) and second.rng_after.get(name) == after)


MAX_STATE_PROBLEMS = 6  # said in the line; the JSON's details hold every one


def judge_state(changes: list[tuple[str, str]], written: list[tuple[str, str]], reseeded: list[str],
                ran: bool, unreadable: list[tuple[str, str]] = (), import_failures=()) -> CheckResult:
    """``changes``: ``(slot, what changed)`` for every call that changed global state (the
    child restored it); ``written``: ``(slot, argument)`` for every call that wrote into an
    argument; ``reseeded``: the generators a call reseeded; ``unreadable``: ``(name, why)``
    of the generators whose state no longer reads; ``import_failures``: what the target's
    own module changed when imported that alters what every importing program computes."""
    problems = [f"importing the target changed {change} and left it so (its module's own code: every program "
                "that imports it computes so)" for change in import_failures]
    problems += [f"reseeded {name} global random number generator (the caller's random stream is reset)"
                 for name in reseeded]
    problems += [f"left {name} global random number generator's state {why}" for name, why in unreadable]
    problems += [f"{calls} changed {change} (restored)" for change, calls in _grouped(changes)]
    problems += [f"{calls} wrote into its {name} argument in place" for name, calls in _grouped(written)]
    if problems:
        shown = problems[:MAX_STATE_PROBLEMS]
        more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        return CheckResult("global-state", "failed", "; ".join(shown) + more, details=tuple(problems))
    if not ran:
        return skipped("global-state", "not run: no call returned")
    return passed("global-state", "no call changed global state, wrote into its arguments, or reseeded a global "
                                  "random number generator")


def judge_aliasing(overwritten: list[tuple[str, str, str]], ran: bool) -> CheckResult:
    """``aliasing``: what a call returned is the caller's. ``overwritten`` holds ``(earlier
    slot, later slot, what)`` for every result the next call changed (the child reads each
    result again after the next call: :mod:`posenc_spec.gate.child.serve`)."""
    if overwritten:
        problems = [f"the call for {later} changed {what} of the call for {earlier}"
                    for earlier, later, what in overwritten]
        shown = problems[:MAX_STATE_PROBLEMS]
        more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        return CheckResult("aliasing", "failed", "; ".join(shown) + more + " (a result the caller holds changed "
                           "under it: return a copy, not a view of a cache or a buffer the next call rewrites)",
                           details=tuple(problems))
    if not ran:
        return skipped("aliasing", "not run: no call returned")
    return passed("aliasing", "no result changed during the next call")


def import_warnings(import_state) -> list[str]:
    """The report's warnings about what importing the target did that does not fail
    ``global-state``: what weakened its isolation, what its module's code changed, and, in
    one line, the side effects of the libraries it imported."""
    lines = list(import_state.notes)
    lines += [f"importing the target changed {change}" for change in import_state.changes]
    if import_state.effects:
        lines.append("import side effects, kept as in your program, while the target was imported: "
                     + "; ".join(dict.fromkeys(import_state.effects)))
    return list(dict.fromkeys(lines))


def call_warnings(slots_and_outcomes) -> list[str]:
    """The side effects of the libraries a call imported: one line per call that had any."""
    lines = [f"import side effects, kept as in your program, in the call for {slot} (which imported "
             f"{outcome.imports}): " + "; ".join(dict.fromkeys(outcome.effects))
             for slot, outcome in slots_and_outcomes if outcome.effects]
    return list(dict.fromkeys(lines))
