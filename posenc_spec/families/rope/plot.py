"""``posenc-spec plot`` of a rotary target: the calls of the RoPE grid that the ``formula``
checks judge (:mod:`posenc_spec.families.rope.grid`), read as the gate reads them
(:mod:`posenc_spec.families.rope.read`) against the expected values and bounds the gate takes;
the call whose worst element is furthest out of its bound (of equals, the first) is drawn:
``difference_inv_freq.png`` (rope-freqs, one value per pair), ``difference_cos.png`` and
``difference_sin.png`` (or ``difference_angles.png``; rope-cache, positions x cache
columns) or ``difference_x.png`` (rope-apply, positions x features of head 0)."""

from __future__ import annotations

from posenc_spec.families.rope import grid as rope_grid
from posenc_spec.families.rope.judge import RopeJudge
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Drawing, NothingToDraw
from posenc_spec.gate.runner import run_target
from posenc_spec.tolerance import compare


def _parts(judge, probe, values):
    """``(dtype text, {name: (actual, expected, bound)} as drawn, the same over the whole
    call, the rows' positions, the columns' label)`` of one readable call: what the gate's
    formula check compares (:meth:`~posenc_spec.families.rope.judge.RopeJudge.expected_pieces`)."""
    from .figures import COLUMN_LABELS

    dtype, pieces = judge.expected_pieces(probe, values)
    whole = {label.rstrip("'"): arrays for label, *arrays in pieces}
    if probe.kind == "freqs":
        return dtype, whole, whole, None, COLUMN_LABELS["inv_freq"]
    if probe.kind == "cache":
        return dtype, whole, whole, probe.positions, f"{COLUMN_LABELS['cache']} ({judge.cache_layout} layout)"
    whole = {"x": tuple(array[0] for array in whole["x"])}  # the first sequence: (heads, positions, features)
    drawn = {"x": tuple(array[0] for array in whole["x"])}  # and its first head
    return dtype, drawn, whole, probe.positions, COLUMN_LABELS["x"]


def plot(declaration, sizes: dict, options) -> Drawing:
    """The grid's call furthest out of its bound (see the module docstring)."""
    from posenc_spec.figures.style import quiet_floats

    spec, api = declaration.spec, declaration.api
    probes = [probe for probe in rope_grid.probes_for(spec, api, declaration.max_positions) if probe.role == "table"]
    turn = run_target(declaration, [probe.request() for probe in probes], options)
    if not turn.imported:
        raise UsageError(f"cannot import TARGET {declaration.name}: {turn.import_message}")
    judge = RopeJudge(spec, api, None)  # only its reading and expectations: it records no results here
    calls, problems = [], []
    for probe, outcome in zip(probes, turn.outcomes, strict=True):
        values, problem = judge.values(probe, outcome)
        if problem:
            problems.append(f"{probe.slot}: {problem}")
            continue
        dtype, drawn, whole, positions, columns = _parts(judge, probe, values)
        with quiet_floats():  # a value near the largest float overflows its error ratio to Inf, as judged
            comparisons = {name: compare(*arrays) for name, arrays in whole.items()}
        worst = max(comparisons, key=lambda name: comparisons[name].max_ratio)
        calls.append((comparisons[worst].max_ratio, probe, dtype, drawn, positions, columns, worst,
                      comparisons[worst]))
    if not calls:
        raise NothingToDraw(declaration.name, f"every call of the grid failed; first {problems[0]}")
    ratio, probe, dtype, drawn, positions, columns, name, summary = max(calls, key=lambda call: call[0])

    from .figures import DIFFERENCE_FILE, rope_difference_figures  # matplotlib: only now

    title = f"{declaration.name} at {probe.slot} under {spec.describe()}, {dtype}"
    figures = rope_difference_figures(drawn, title=title, columns=columns, positions=positions)
    if summary.ok:
        verdict = f"every element within tolerance (max error/tolerance {ratio:.3g})"
    else:
        verdict = f"{name}: {summary.describe()}"
        if positions is not None:
            verdict += f"; row {summary.worst_index[-2]} is position {positions[summary.worst_index[-2]]}"
    notes = [f"drawn: the call furthest out of bound of {len(calls)}"
             + (" (head 0 of the rotated x)" if probe.kind == "apply" else "")]
    if problems:
        notes.append(f"{len(problems)} call(s) gave nothing to draw; first {problems[0]}")
    return Drawing(title, verdict, {name: (DIFFERENCE_FILE.format(name), figure) for name, figure in figures.items()},
                   tuple(notes))
