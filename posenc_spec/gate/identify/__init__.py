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
import dataclasses
import math

from posenc_spec.gate.loader import module_key
from posenc_spec.gate.options import RunOptions
from posenc_spec.gate.runner import Slot
from posenc_spec.gate.sandbox import Limits, root_template


def call_keys_of(declaration) -> dict:
    """The keys of how ``declaration``'s target is called, as ``identify`` and ``init`` take
    them: the core's (signature, ``init``, ``method``, ``kwargs`` and the x layout) and its
    family's ``identify_keys``, each where it differs from the API's own call, and the run's
    lengths (``max_positions``, ``t_max``) where declared. ``check``'s advice to run
    ``identify`` says them, so that the command it gives calls the target as ``check`` did."""
    from posenc_spec import registry
    from posenc_spec.gate.declaration import declare

    plain = declare({"target": declaration.target, "api": declaration.api})
    said, default = declaration.as_dict(), plain.as_dict()
    names = registry.names_of_api(declaration.api)
    keys = {key: said[key] for key in names.identify_keys if key in said and said[key] != default.get(key)}
    x_layout = getattr(declaration.spec, "x_layout", None)
    if x_layout is not None and x_layout != getattr(plain.spec, "x_layout", None):
        keys["x_layout"] = x_layout
    run = {key: said[key] for key in ("max_positions", "t_max") if said[key] is not None and said[key] != default[key]}
    return {**declaration.calling.declared_keys(), **keys, **run}


# What init needs to write an answer that is a known slip of a nearby member.
ACCEPT_SLIP = "--accept-slip"


def with_slip(result: dict, slip) -> dict:
    """``result`` with the known slip its answer is (``slip``: a
    :class:`~.hint.Hint` whose message names the nearby member; None: the answer is no known
    slip): said in the message, and under ``"slip"`` in the JSON. ``init`` writes such an
    answer only with :data:`ACCEPT_SLIP`: ``check`` on the same code would name the slip."""
    if slip is None:
        return result
    return {**result, "slip": slip.as_dict(),
            "message": f"{result['message']}; a known slip: {slip.text()}; init writes this answer only with "
                       f"{ACCEPT_SLIP}"}


class IdentifyError(Exception):
    """The target could not be imported (exit status 2)."""


def answer_each(targets, requests, timeout: float, options: RunOptions | None, answer_of,
                declaration_of=None, how: dict | None = None, strict: bool = False) -> list[dict]:
    """``answer_of(target, outcomes)`` for each target, its ``requests`` made in its own sealed
    child (a module shared by several targets imported once for them all; ``how``: how the
    child calls it, :meth:`~posenc_spec.gate.declaration.Declaration.how`), then checked:
    ``declaration_of(target, answer)`` gives the declaration of an answer that names a
    convention, and ``check``'s whole grid runs under it in the same slot
    (:func:`checked`; ``strict``: a note fails it, as under the user's ``strict``).
    :class:`IdentifyError` when a target cannot be imported."""
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
                    declared = declaration_of(target, result)
                    result = checked(result, dataclasses.replace(declared, strict=declared.strict or strict), slot)
                results.append(result)
        finally:
            slot.close()
    return results


def check_each(candidates, timeout: float, options: RunOptions | None) -> list[dict]:
    """``check``'s verdict on one target under each candidate ``(result, declaration)`` in
    turn (:func:`checked`), in one sealed child, up to the first it accepts: for a target
    whose values the gate's own inputs decide (a rotation handed to an apply function), the
    candidates are what the target itself decides. :class:`IdentifyError` when it cannot be
    imported."""
    options = options or RunOptions()
    answers = []
    with root_template(options.preload) as root:
        slot = Slot(root, Limits.of_run(options, timeout))
        try:
            for result, declaration in candidates:
                answers.append(checked(result, declaration, slot))
                if answers[-1]["convention"] is not None:
                    break
        finally:
            slot.close()
    return answers


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
    if not run.imported:
        raise IdentifyError(run.import_message)
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




