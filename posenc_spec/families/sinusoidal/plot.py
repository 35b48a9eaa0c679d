"""``posenc-spec plot`` of a table or timesteps target: one call, its heatmap, row profiles,
similarity and its difference from the declared convention's table."""

from __future__ import annotations

import numpy as np

from posenc_spec.families.sinusoidal.conventions import UndefinedWidthError
from posenc_spec.families.sinusoidal.grid import Probe
from posenc_spec.families.sinusoidal.judge import call_problem
from posenc_spec.families.sinusoidal.properties import expectation
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Drawing, NothingToDraw
from posenc_spec.gate.runner import run_target
from posenc_spec.gate.values import integer
from posenc_spec.tolerance import compare

DEFAULT_NUM_POSITIONS = 300  # seed 000's table: PE(300, 512)
DEFAULT_DIM = 512


def plot(declaration, sizes: dict, options) -> Drawing:
    """The table at ``num_positions x dim`` (``fn(timesteps, dim)`` with int64 timesteps
    spread over ``[0, t_max]`` for the timesteps API) against the declared convention's."""
    convention = declaration.spec.convention
    num_positions = integer("--num-positions", sizes["num_positions"] or DEFAULT_NUM_POSITIONS, maximum=2**20)
    dim = integer("--dim", sizes["dim"] or DEFAULT_DIM, minimum=2, maximum=2**16)
    try:
        convention.check_odd(dim)
    except UndefinedWidthError as problem:  # an odd --dim the convention has no value at
        raise UsageError(str(problem)) from None
    if declaration.api == "timesteps":
        steps = np.round(np.linspace(0.0, declaration.t_max, num_positions)).astype(np.int64)
        probe = Probe(f"plot-int64:{num_positions}x{dim}", "table", num_positions, dim, steps)
    else:
        probe = Probe(f"plot-{num_positions}x{dim}", "table", num_positions, dim)
    turn = run_target(declaration, [probe.request()], options)
    if not turn.imported:
        raise UsageError(f"cannot import TARGET {declaration.name}: {turn.import_message}")
    outcome = turn.outcomes[0]
    problem = call_problem(probe, outcome)
    if problem:
        raise NothingToDraw(f"{declaration.name} at {probe.size}", problem)

    from posenc_spec.figures.style import quiet_floats  # matplotlib: only once there is something to draw

    from .diagnostics import table_figures, table_labels

    exp = expectation(probe.positions, dim, convention, outcome.dtype)
    table = np.asarray(outcome.table, dtype=np.float64)
    title, row_kind = table_labels(declaration, outcome.dtype)
    with quiet_floats():  # a table near the largest float overflows its error ratios to Inf, as judged
        summary = compare(table, exp.table, exp.tolerance)
    figures = table_figures(table, exp, title=title, row_kind=row_kind, comparison=summary)
    return Drawing(title, "every element within tolerance" if summary.ok else summary.describe(),
                   {name: (f"{name}.png", figure) for name, figure in figures.items()})
