"""``posenc-spec plot TARGET``: pictures of a target's table and of where it is wrong.

::

    posenc-spec plot TARGET [--convention NAME] [--layout interleaved|concat] [--first sin|cos]
                     [--freq-shift 0|1] [--base B] [--offset N] [--scale S] [--odd ...]
                     [--api table|timesteps] [--t-max T] [--timeout SECONDS]
                     [--num-positions N] [--dim D] --out DIR

calls the target once (``fn(num_positions, dim)`` for the table API; ``fn(timesteps, dim)``
with ``num_positions`` int64 timesteps spread over ``[0, t_max]`` for the timesteps API)
and writes ``heatmap.png``, ``row_profiles.png``, ``similarity.png`` and
``difference.png`` into DIR. The difference is taken from the expected table of the
declared convention, element by element against the tolerance of the table's dtype.

The convention flags and ``--timeout`` are ``check``'s, validated by the same code
(:func:`posenc_spec.gate.declaration.declare`). The target runs in a sealed child
(:mod:`posenc_spec.gate.runner`), so a target that raises, calls ``sys.exit`` or
``os._exit``, crashes or hangs past the timeout gives a one-line reason, never a
traceback or a hung command.

Exit status: 0 pictures written (whether or not the table conforms; the summary line
says), 1 the target gave nothing to draw (raised, exited, crashed, hung, returned a wrong
shape or no floating-point numbers), 2 usage error or TARGET cannot be imported.

Registering the subcommand imports neither matplotlib nor torch; ``plot`` imports them
when it runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from posenc_spec.checks import expectation
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.grid import Probe
from posenc_spec.gate.options import run_options
from posenc_spec.gate.output.destination import emit
from posenc_spec.gate.values import integer
from posenc_spec.tolerance import compare

from .arguments import add_declaration_arguments, add_run_arguments, declaration_flags, error

DEFAULT_NUM_POSITIONS = 300  # seed 000's table: PE(300, 512)
DEFAULT_DIM = 512


def register(subparsers) -> None:
    """Add ``plot`` to the ``posenc-spec`` subcommands."""
    parser = subparsers.add_parser(
        "plot",
        help="write PNGs of a target's table and its difference from the expected table",
        description="Write heatmap.png, row_profiles.png, similarity.png and difference.png of TARGET's table "
                    "into DIR; difference.png shows each element's error as a multiple of its tolerance. "
                    "The convention flags are check's; --odd skip draws an odd width as --odd error would.",
    )
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_declaration_arguments(parser)
    add_run_arguments(parser)
    parser.add_argument("--num-positions", default=None, metavar="N",
                        help=f"rows (positions, or timesteps for --api timesteps); default {DEFAULT_NUM_POSITIONS}")
    parser.add_argument("--dim", default=None, metavar="D", help=f"embedding width; default {DEFAULT_DIM}")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the PNGs (created)")
    parser.set_defaults(run=run)


def _probe(api: str, num_positions: int, dim: int, t_max: float) -> Probe:
    """The one call ``plot`` makes (int64 timesteps spread over ``[0, t_max]`` for that API)."""
    if api == "timesteps":
        steps = np.round(np.linspace(0.0, t_max, num_positions)).astype(np.int64)
        return Probe(f"plot-int64:{num_positions}x{dim}", "table", num_positions, dim, steps)
    return Probe(f"plot-{num_positions}x{dim}", "table", num_positions, dim)


def run(args: argparse.Namespace) -> int:
    from posenc_spec.gate.judge import call_problem
    from posenc_spec.gate.runner import run_target
    from posenc_spec.gate.sandbox import Limits

    try:
        declaration = declare({"target": args.target, **declaration_flags(args)}, flags=True)
        num_positions = integer("--num-positions", args.num_positions or DEFAULT_NUM_POSITIONS, maximum=2**20)
        dim = integer("--dim", args.dim or DEFAULT_DIM, minimum=2, maximum=2**16)
        options = run_options(1, None, args.max_memory, args.max_processes)
        convention = declaration.convention
        convention.check_odd(dim)
        if args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {args.out} exists and is not a folder")
    except (ValueError, TypeError) as problem:  # UsageError and the convention's own errors
        return error("plot", problem)

    probe = _probe(declaration.api, num_positions, dim, declaration.t_max)
    turn = run_target(declaration.target, [probe.request()],
                      Limits(options.max_memory, options.max_processes, declaration.timeout))
    if not turn.imported:
        return error("plot", f"cannot import TARGET {args.target}: {turn.import_message}")
    outcome = turn.outcomes[0]
    problem = call_problem(probe, outcome)
    if problem:
        emit(f"posenc-spec plot: {args.target} at {probe.size} gave nothing to draw: {problem}\n", sys.stderr)
        return 1

    from posenc_spec.figures.diagnostics import write_table_figures  # matplotlib: only once there is something to draw

    exp = expectation(probe.positions, dim, convention, outcome.dtype)
    table = np.asarray(outcome.table, dtype=np.float64)
    title = f"{declaration.name} under {declaration.convention_name()}, {outcome.dtype}"
    try:
        paths = write_table_figures(table, exp, args.out, title=title)
    except OSError as problem:
        return error("plot", f"cannot write the pictures into {args.out}: {problem.strerror or problem}")
    summary = compare(table, exp.table, exp.tolerance)
    emit(f"{title}: " + ("every element within tolerance" if summary.ok else summary.describe()) + "\n")
    for name, path in paths.items():
        emit(f"  {name}: {path}\n")
    return 0
