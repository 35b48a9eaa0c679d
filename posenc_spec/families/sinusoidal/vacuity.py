"""No vacuous passes: a declaration must be checkable on its grid.

Before any target runs, the gate checks that its grid can tell the declared convention
from its neighbours (the slips ``identify`` tells apart: sin and cos swapped, the other
layout, the other frequency shift, the offset one off either way, the base 1 % off). If a
neighbour's exact table lies within the declared tolerance (float32, the common case) of
the declared one at every size of the grid, every formula check would pass for a wrong
table too: the options leave nothing to check (a huge ``--scale`` or ``--offset`` takes the
angles beyond what float32 resolves; ``--max-positions 1`` or a tiny ``--t-max`` leave
every angle near 0), and the gate refuses them with a usage error naming the options.

Each neighbour is usually told apart at the first, smallest size, so the check costs
little; its result is cached per declared convention and grid.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.families.sinusoidal import grid, oracle
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import Convention
from posenc_spec.gate.errors import UsageError
from posenc_spec.tolerance import compare

BASE_STEP = 1.01  # the base 1 % off: a slip the tolerance must never excuse
CHECKED_DTYPE = "float32"


def neighbours(convention: Convention) -> list[tuple[str, Convention]]:
    """The conventions one slip away from ``convention``, each with what differs."""
    candidates = [
        ("sin and cos swapped", {"first": convention.second}),
        ("the other layout", {"layout": "concat" if convention.layout == "interleaved" else "interleaved"}),
        ("the other frequency shift", {"freq_shift": 1 - convention.freq_shift}),
        ("the offset one more", {"offset": convention.offset + 1}),
        ("the offset one less", {"offset": convention.offset - 1}),
        (f"the base times {BASE_STEP}", {"base": convention.base * BASE_STEP}),
    ]
    found = []
    for what, change in candidates:
        try:
            found.append((what, convention.replace(**change)))
        except ValueError:  # not a member (ceil under shift 1)
            continue
    return found


def _formula_probes(declaration) -> list[grid.Probe]:
    return [probe for probe in grid.probes_for(declaration.api, declaration.t_max, declaration.max_positions,
                                              declaration.spec.skip_odd) if probe.role == "table"]


def _told_apart(probe, declared: Convention, neighbour: Convention) -> bool:
    try:
        expected = checks.expectation(probe.positions, probe.width, declared, CHECKED_DTYPE)
        other = oracle.table(probe.positions, probe.width, neighbour)
    except ValueError:  # a width one of them does not define: told apart by that alone
        return True
    return not compare(other, expected.table, expected.tolerance).ok


def _indistinguishable(declared: Convention, probes) -> str | None:
    """What neighbour passes every formula probe of the grid, or None."""
    for what, neighbour in neighbours(declared):
        if not any(_told_apart(probe, declared, neighbour) for probe in probes):
            return what
    return None


_verdicts: dict = {}  # (convention, grid options) -> what passes as well, or None


def _options(declaration) -> str:
    convention, defaults = declaration.spec.convention, Convention()
    named = [f"--{key} {getattr(convention, key):g}" for key in ("scale", "offset", "base")
             if getattr(convention, key) != getattr(defaults, key)]
    if declaration.max_positions is not None:
        named.append(f"--max-positions {declaration.max_positions}")
    if declaration.api == "timesteps":
        named.append(f"--t-max {declaration.t_max:g}")
    return ", ".join(named) or "these options"


def assert_distinguishable(declaration) -> None:
    """:class:`UsageError` when the grid cannot tell the declared convention from a neighbour."""
    if not declaration.formula:
        return
    key = (declaration.spec.convention, declaration.api, declaration.t_max, declaration.max_positions)
    if key not in _verdicts:
        _verdicts[key] = _indistinguishable(declaration.spec.convention, _formula_probes(declaration))
    what = _verdicts[key]
    if what is None:
        return
    probes = _formula_probes(declaration)
    convention = declaration.spec.convention
    largest = max(float(np.max(np.abs(convention.scale * (convention.positions(probe.positions) + convention.offset)),
                               initial=0.0)) for probe in probes)
    if largest * 2.0**-24 > 0.5:
        why = f"angles reach {largest:.3g} rad, beyond what float32 can resolve"
    else:
        why = f"the largest angle is {largest:.3g} rad, too small to show the frequencies"
    raise UsageError(f"{declaration.name}: {_options(declaration)}: {why}; a table with {what} would pass every "
                     f"formula check too, so {declaration.convention_name()} cannot be checked at these options")
