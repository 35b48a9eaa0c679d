"""What a failing report should say to do: one cause said once, and the slip its values show.

:func:`common_cause` finds a failure every call shares (a ``TypeError`` from every call, a
class where a function was expected, transposed tables) and names the likely fix the
family knows; :func:`hints` asks the family which slip the run's values show, when a check
of the values failed. Which member of the family the values are is the family's
:meth:`~posenc_spec.gate.family.Family.nearest`.
"""

from __future__ import annotations

import re

import numpy as np

from .keys import APIS

_SIZE_PREFIX = re.compile(r"^[^:]*?: ")


def reason_of(check) -> str:
    """A check's reason without the size it was called at (``50x8: ...``)."""
    return _SIZE_PREFIX.sub("", check.message, count=1)


def common_reason(report) -> str | None:
    """The reason every call of the target failed with, when they all share one."""
    calls = [check for check in report.checks if check.name.startswith("call[")]
    if len(calls) < 2 or any(check.status != "failed" for check in calls):
        return None
    reasons = {reason_of(check) for check in calls}
    return reasons.pop() if len(reasons) == 1 else None


def common_cause(report) -> list[str]:
    """One line when every call of the target failed for the same reason (with the likely fix)."""
    reason = common_reason(report)
    if reason is None:
        return []
    form = report.declaration.calling.form
    if form is not None:  # the arguments are the user's own: the family's advice names signatures
        fix = (f"check call = {form.text!r} against the target's parameters (their order, number and names)"
               if "argument" in reason else "")
    else:
        fix = report.declaration.family.likely_fix(reason, report.declaration.api)
    return [f"every call failed the same way: {reason}" + (f"; likely fix: {fix}" if fix else "")]


def _values_failed(report) -> bool:
    """Whether a check of the values failed (the family's
    :attr:`~posenc_spec.gate.family.Family.value_checks`)."""
    prefixes = tuple(f"{name}[" for name in report.declaration.family.value_checks)
    return any(check.status == "failed" and check.name.startswith(prefixes) for check in report.checks)


def _excused_slots(report) -> set[str]:
    """The slots of the calls a known deviation (an xfails entry) covers: a check of theirs is ``xfailed``."""
    return {check.name[check.name.index("[") + 1:-1] for check in report.checks
            if check.status == "xfailed" and check.name.endswith("]") and "[" in check.name}


def _plain_cause(calls) -> list:
    """A hint where every value the grid's calls returned is 0, or one constant: no member of
    any family is that, and no key declares it."""
    from .identify.hint import Hint

    values = [np.asarray(array) for probe, outcome in calls if getattr(probe, "role", None) == "table" and outcome.ok
              for array in outcome.arrays]
    if not values or any(value.dtype.kind not in "biufc" or value.size == 0 for value in values):
        return []
    first = values[0].flat[0]
    if not all(np.all(value == first) for value in values):
        return []
    if first == 0:
        return [Hint(("values-all-zero",), f"every value the {len(values)} arrays of the grid's calls hold is 0: the "
                                           "table is never filled (zeros allocated and returned, or built from a "
                                           "config before its values are set)")]
    return [Hint(("values-constant",), f"every value the {len(values)} arrays of the grid's calls hold is "
                                       f"{first.item()!r}: the positions and the widths change nothing")]


# What a narrow float's range makes of a NaN: an angle or a product past its largest value is inf.
_NARROW = {"float16": "float16, whose largest value is 65504: past it an angle is inf"}


def _nan_cause(calls) -> list:
    """A hint where some of the grid's calls returned NaN and nothing else explains the values:
    which calls, and where the first NaN sits (no member of any family has one, and no key
    declares it)."""
    from .identify.hint import Hint

    for probe, outcome in calls:
        if getattr(probe, "role", None) != "table" or not outcome.ok:
            continue
        for array in outcome.arrays:
            values = np.asarray(array)
            if values.dtype.kind in "fc" and values.size and np.isnan(values).any():
                first = [int(index) for index in np.argwhere(np.isnan(values))[0]]
                narrow = _NARROW.get(str(getattr(outcome, "dtype", "")))
                said = (f"the call at {getattr(probe, 'slot', '?')} returned {int(np.isnan(values).sum())} NaN of "
                        f"{values.size} values, the first at {first}: a 0/0, a log or a square root of zero or less, "
                        "inf - inf, or the sine of an infinite angle in the code"
                        + (f" (its values are {narrow})" if narrow else "") + "; no member of the family has one")
                return [Hint(("values-nan",), said)]
    return []


def _finite_failed(report) -> bool:
    return any(check.status == "failed" and check.name.startswith("finite[") for check in report.checks)


def _calls_failed(report) -> bool:
    return any(check.status == "failed" and check.name.startswith("call[") for check in report.checks)


def _shape_cause(declaration, kept, report) -> list:
    """The family's hint for arrays of another size than asked (no check of the values ran),
    when a call failed (:meth:`~posenc_spec.gate.family.Family.shape_hints`)."""
    if not _calls_failed(report):
        return []
    try:
        return declaration.family.shape_hints(declaration, [probe for probe, _ in kept],
                                              [outcome for _, outcome in kept], report)
    except Exception:  # a hint is advice: whatever a target returned, the verdict stands without it
        return []


_ROLE = r"(?<![\w.])({0})(?!\s*=[^=])(?!\w)"


def swapped_call(declaration, first: str, second: str) -> str | None:
    """The declaration's call with the roles ``first`` and ``second`` exchanged, as a ``call``
    key's text (``fn(dim, num_positions)`` for ``fn(num_positions, dim)``): from its call
    description, or from the call its signature stands for (named after the target's
    attribute); None where neither says the call (``init = "config"``, a family's own adapter)."""
    from posenc_spec import registry

    from .described import parse_call

    calling = declaration.calling
    form = calling.form if calling.form is not None else calling.preset_form(declaration.api)
    if form is None:
        return None
    text = form.text
    if calling.form is None:
        head = declaration.target.rpartition(":")[2].rpartition(".")[2]
        text = head + text[len(form.head):] if head.isidentifier() and text.startswith(form.head) else text
    pattern = re.compile(_ROLE.format(f"{re.escape(first)}|{re.escape(second)}"))
    swapped = pattern.sub(lambda match: second if match.group(1) == first else first, text)
    if swapped == text:
        return None
    try:
        parse_call(swapped, registry.names_of_api(declaration.api).roles[declaration.api], "call", declaration.api)
    except Exception:  # the swapped text is no call the API takes
        return None
    return swapped


def hints(declaration, probes, outcomes, report) -> list:
    """What the run's own values say the slip is (the family's
    :meth:`~posenc_spec.gate.family.Family.hints`): empty unless a check of the values
    failed, and when nothing explains them; NaN among the values where nothing else does (a
    ``finite`` check that fails runs no check of the values); arrays of another size than asked
    where no check of the values ran (:func:`_shape_cause`). The calls a known deviation
    covers are not asked to fit the slip: the deviation already explains them, and the hint
    explains the rest."""
    values_failed = _values_failed(report)
    excused = _excused_slots(report)
    kept = [(probe, outcome) for probe, outcome in zip(probes, outcomes, strict=True)
            if getattr(probe, "slot", None) not in excused]
    if not values_failed and not _finite_failed(report):
        return _shape_cause(declaration, kept, report)
    if not values_failed:
        return _nan_cause(kept)
    plain = _plain_cause(kept)
    if plain:
        return plain
    try:
        found = declaration.family.hints(declaration, [probe for probe, _ in kept], [outcome for _, outcome in kept],
                                         report)
        handed = declaration.family.handed_keys(declaration)
    except Exception:  # a hint is advice: whatever a target returned, the verdict stands without it
        return []
    if not found:  # a square call judged beside calls of another size: what the sizes say, else NaN
        return _shape_cause(declaration, kept, report) or _nan_cause(kept)
    return [hint.without_advice() if handed & {key for key, _ in hint.declare} else hint for hint in found]


def identify_command(declaration) -> str:
    """The ``identify`` command that says which member a target computes, with the flags of
    how ``check`` called it (:func:`~posenc_spec.gate.identify.call_keys_of`)."""
    from .identify import call_keys_of, toml_text

    extra = f" --api {declaration.api}" if declaration.api != APIS[0] else ""
    keys = call_keys_of(declaration)
    return f"posenc-spec identify {declaration.name}{extra}" + (f" {toml_text.flags(keys)}" if keys else "")
