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

The convention flags and ``--timeout`` are ``check``'s (:mod:`posenc_spec.gate.options`),
turned into a convention by the same code (:func:`posenc_spec.gate.config.make_spec`).
The target runs in the gate's worker process (:mod:`posenc_spec.gate.worker`), so a
target that raises, calls ``sys.exit`` or ``os._exit``, crashes or hangs past the timeout
gives a one-line reason, never a traceback or a hung command.

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

from ..checks import expectation
from ..gate.config import make_spec
from ..gate.options import add_convention_arguments, add_timeout_argument, convention_flags, positive_int
from ..gate.worker import load, run_calls, run_worker
from ..tolerance import compare

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
    add_convention_arguments(parser)
    add_timeout_argument(parser)
    parser.add_argument("--num-positions", type=positive_int, default=DEFAULT_NUM_POSITIONS, metavar="N",
                        help=f"rows (positions, or timesteps for --api timesteps); default {DEFAULT_NUM_POSITIONS}")
    parser.add_argument("--dim", type=positive_int, default=DEFAULT_DIM, metavar="D",
                        help=f"embedding width; default {DEFAULT_DIM}")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the PNGs (created)")
    parser.set_defaults(run=run)


def _request(api: str, num_positions: int, dim: int, t_max: float) -> tuple[dict, str]:
    """The worker's call request and how the call reads in a message."""
    if api == "timesteps":
        steps = np.round(np.linspace(0.0, t_max, num_positions)).astype(np.int64)
        label = f"int64:{num_positions}x{dim}"
        call = f"({num_positions} int64 timesteps in [0, {t_max:g}], {dim})"
    else:
        steps, label, call = None, f"{num_positions}x{dim}", f"({num_positions}, {dim})"
    request = {"label": label, "length": num_positions, "width": dim, "timesteps": steps,
               "shape": (num_positions, dim)}
    return request, call


def _error(message) -> int:
    print(f"posenc-spec plot: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    try:
        spec = make_spec({"target": args.target, **convention_flags(args), "timeout": args.timeout})
        convention = spec.convention
        convention.check_odd(args.dim)
    except (ValueError, TypeError) as error:  # ConfigError is a ValueError
        return _error(error)

    request, call = _request(spec.api, args.num_positions, args.dim, spec.t_max)
    try:
        with run_worker() as worker:
            imported, message = load(worker, spec.target, spec.timeout)
            if not imported:
                return _error(f"cannot import TARGET {args.target}: {message}")
            (outcome,) = list(run_calls(worker, spec.target, [request], spec.timeout))
    except KeyboardInterrupt:
        print("posenc-spec plot: interrupted", file=sys.stderr)
        return 130
    if not outcome.ok:
        print(f"posenc-spec plot: {args.target}{call} gave nothing to draw: {outcome.message}", file=sys.stderr)
        return 1

    from .diagnostics import write_table_figures  # matplotlib: only once there is something to draw

    positions = args.num_positions if request["timesteps"] is None else request["timesteps"].astype(np.float64)
    exp = expectation(positions, args.dim, convention, outcome.dtype)
    table = np.asarray(outcome.table, dtype=np.float64)
    title = f"{args.target} under {convention.name()}, {outcome.dtype}"
    try:
        paths = write_table_figures(table, exp, args.out, title=title)
    except OSError as error:
        return _error(f"cannot write the pictures into {args.out}: {error.strerror or error}")
    summary = compare(table, exp.table, exp.tolerance)
    print(f"{title}: " + ("every element within tolerance" if summary.ok else summary.describe()))
    for name, path in paths.items():
        print(f"  {name}: {path}")
    return 0
