"""``posenc-spec plot`` of a 2-D sincos target: the non-square calls of the gate's grid
(:mod:`.grid`, widths up to 64) made as ``check`` makes them; the call furthest out of its
bound (of equals, the first) is drawn: ``difference.png`` (the tokens x features table
against the expected one, element by element over its tolerance) and ``halves.png`` (the
first sine column of each half over the grid, the target's and the expected)."""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Drawing, NothingToDraw
from posenc_spec.gate.runner import run_target
from posenc_spec.tolerance import compare

from . import grid
from .judge import expectation, table_problem

DRAWN_WIDTH = 64


def _drawable(declaration) -> list:
    made = grid.calls(declaration.spec.convention, declaration.calling.signature, declaration.max_positions)
    table_calls = [call for call in made if call.role == "table" and call.dim <= DRAWN_WIDTH]
    non_square = [call for call in table_calls if call.height != call.width and min(call.height, call.width) > 1]
    return non_square or table_calls


def plot(declaration, sizes: dict, options) -> Drawing:
    """The call furthest out of its bound (see the module docstring)."""
    from posenc_spec.figures.style import quiet_floats

    conv = declaration.spec.convention
    probes = _drawable(declaration)
    turn = run_target(declaration, [probe.request() for probe in probes], options)
    if not turn.imported:
        raise UsageError(f"cannot import TARGET {declaration.name}: {turn.import_message}")
    drawn, problems = [], []
    for probe, outcome in zip(probes, turn.outcomes, strict=True):
        problem = table_problem(outcome)
        exp = None if problem else expectation(probe.height, probe.width, probe.dim, conv, outcome.dtype)
        if exp is not None:
            try:
                grid, _ = conv.ungrid(np.asarray(outcome.table, dtype=np.float64), probe.height, probe.width)
            except ValueError as error:
                problem = str(error)
        if problem:
            problems.append(f"{probe.size}: {problem}")
            continue
        with quiet_floats():
            summary = compare(grid, exp.grid, exp.tolerance)
        drawn.append((summary.max_ratio, probe, outcome.dtype, grid, exp, summary))
    if not drawn:
        raise NothingToDraw(declaration.name, f"no call gave a table of the declared shape; first {problems[0]}")
    ratio, probe, dtype, grid, exp, summary = max(drawn, key=lambda item: item[0])

    from posenc_spec.figures.difference import difference_figure  # matplotlib: only now

    from .figures import DIFFERENCE_FILE, HALVES_FILE, halves_figure

    title = f"{declaration.name} at {probe.size} under {declaration.spec.describe()}, {dtype}"
    tokens = (probe.height * probe.width, probe.dim)
    halves = tuple(int(exp.columns.of_axis(axis)[0]) for axis in (conv.first, 1 - conv.first))
    names = tuple(f"declared {name}" for name in (conv.first_axis, "row" if conv.first_axis == "col" else "col"))
    pictures = {
        "difference": (DIFFERENCE_FILE, difference_figure(grid.reshape(tokens), exp.grid.reshape(tokens),
                                                          exp.tolerance.reshape(tokens), title=title,
                                                          row_kind="position")),
        "halves": (HALVES_FILE, halves_figure(grid, exp.grid, halves, names, title=title)),
    }
    verdict = (f"every element within tolerance (max error/tolerance {ratio:.3g})" if summary.ok
               else summary.describe())
    notes = [f"drawn: the call furthest out of bound of {len(drawn)} (rows of difference.png: tokens row by row)"]
    if problems:
        notes.append(f"{len(problems)} call(s) gave nothing to draw; first {problems[0]}")
    return Drawing(title, verdict, pictures, tuple(notes))
