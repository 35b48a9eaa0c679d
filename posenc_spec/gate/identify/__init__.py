"""``identify``: which member of its family does a target compute? Found from its values.

Each family fits its own parameters (its ``identify`` module, through
:meth:`~posenc_spec.gate.family.Family.identify_request`); what they share is here:
:func:`answer_each` makes a family's fit calls for each target in a sealed child (a module
shared by several targets imported once for them all), and :func:`checked` judges the
answer under ``check``'s whole grid in the same child, so that what ``identify`` names,
``check`` accepts. The keys an answer is declared with are written by :mod:`.toml_text`;
the hints a failing run gives are :class:`.hint.Hint`.
"""

from __future__ import annotations

import collections
import math

from posenc_spec.gate.loader import module_key
from posenc_spec.gate.options import RunOptions
from posenc_spec.gate.runner import Slot
from posenc_spec.gate.sandbox import Limits, root_template


class IdentifyError(Exception):
    """The target could not be imported (exit status 2)."""


def answer_each(targets, requests, timeout: float, options: RunOptions | None, answer_of,
                declaration_of=None, how: dict | None = None) -> list[dict]:
    """``answer_of(target, outcomes)`` for each target, its ``requests`` made in its own sealed
    child (a module shared by several targets imported once for them all; ``how``: how the
    child calls it, :meth:`~posenc_spec.gate.declaration.Declaration.how`), then checked:
    ``declaration_of(target, answer)`` gives the declaration of an answer that names a
    convention, and ``check``'s whole grid runs under it in the same slot
    (:func:`checked`). :class:`IdentifyError` when a target cannot be imported."""
    options = options or RunOptions()
    results = []
    with root_template(options.preload) as root:
        slot = Slot(root, Limits.of_run(options, timeout))
        targets = list(targets)
        shared = collections.Counter(module_key(target) for target in targets)
        try:
            for target in targets:
                if shared[module_key(target)] > 1:  # import a module once for all its targets
                    slot.share_module(target)
                run = slot.run(target, requests, how=how)
                if not run.imported:
                    raise IdentifyError(run.import_message)
                result = answer_of(target, run.outcomes)
                if declaration_of is not None and result["convention"] is not None:
                    result = checked(result, declaration_of(target, result), slot)
                results.append(result)
        finally:
            slot.close()
    return results


# Checks that say nothing about the convention: a target that fails only these computes it.
NOT_THE_CONVENTION = ("global-state", "determinism")


def checked(result: dict, declaration, slot: Slot) -> dict:
    """``result`` after ``check`` judged the target under it on the whole grid (``slot``
    makes the calls): unchanged with ``"check": "conforms"`` when no check fails, the notes
    ``check`` gives (inputs no use produces) said after it and listed in ``"notes"``;
    "none", with the answer as the nearest and the first failing check (its worst element
    and the hints), when a check of the values fails; with a note when only a check that
    says nothing about the convention (:data:`NOT_THE_CONVENTION`) fails. ``check`` runs
    under the declaration exactly as a user's ``check`` of the answer would, so that the
    two agree: a note is never a "none", a failure never "check accepts it"."""
    from posenc_spec.gate.engine import Calls, judge_run  # the engine imports this package's users: only when checking

    calls = Calls.of(declaration)
    run = slot.run(declaration.target, calls.requests(), declaration.search_path, how=declaration.how())
    report = judge_run(declaration, calls, run)
    failed = report.failures()
    hints = [hint.text() for hint in report.hints]
    notes = [check for check in report.checks if check.status == "noted"]
    result = {**result, "check": "conforms" if not failed else "does-not-conform",
              "hints": [hint.as_dict() for hint in report.hints],
              "notes": [{"id": check.name, "message": check.message} for check in notes]}
    if not failed:
        said = "".join(f"; note {check.name}: {check.message}" for check in notes)
        return {**result, "message": f"{result['message']}; check accepts it on its whole grid{said}"}
    values = [check for check in failed if check.name not in NOT_THE_CONVENTION]
    first = (values or failed)[0]
    said = "; ".join([f"{first.name}: {first.message}", *(f"hint: {hint}" for hint in hints)])
    if not values:
        return {**result, "message": f"{result['message']}; check also fails {', '.join(c.name for c in failed)} "
                                     f"({said})"}
    worst = first.worst.ratio if first.worst is not None else math.inf
    nearest = {"name": result["name"], "convention": result["convention"], "max_error_ratio": worst}
    return {**result, "name": "none", "convention": None, "max_error_ratio": worst, "nearest": nearest,
            "message": f"none: {result['name']} fits the tables identify fitted, but check rejects it on its whole "
                       f"grid ({len(failed)} failed check{'s' * (len(failed) != 1)}, first {said})"}




