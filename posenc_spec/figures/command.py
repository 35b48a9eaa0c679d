"""``posenc-spec plot TARGET``: pictures of a target's table and of where it is wrong.

::

    posenc-spec plot TARGET [--convention NAME] [--layout interleaved|concat] [--first sin|cos]
                     [--freq-shift 0|1] [--base B] [--offset N] [--scale S] [--odd ...]
                     [--api table|timesteps] [--t-max T] [--num-positions N] [--dim D] --out DIR

calls the target once (``fn(num_positions, dim)`` for the table API; ``fn(timesteps, dim)``
with ``num_positions`` int64 timesteps spread over ``[0, t_max]`` for the timesteps API)
and writes ``heatmap.png``, ``row_profiles.png``, ``similarity.png`` and
``difference.png`` into DIR. The difference is taken from the expected table of the
declared convention, element by element against the tolerance of the table's dtype.

Exit status: 0 pictures written (whether or not the table conforms; the summary line
says), 1 the target gave nothing to draw (raised, wrong shape, no numbers), 2 usage
error or TARGET cannot be imported. TARGET is found by the gate's loader
(:func:`posenc_spec.gate.loader.load_target`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..checks import expectation
from ..conventions import FUNCTIONS, LAYOUTS, PRESETS, get_convention
from ..gate.config import ODD_CHOICES
from ..gate.engine import APIS
from ..gate.loader import TargetError, load_target
from ..tolerance import compare, dtype_name

DEFAULT_NUM_POSITIONS = 300  # seed 000's table: PE(300, 512)
DEFAULT_DIM = 512


def register(subparsers) -> None:
    """Add ``plot`` to the ``posenc-spec`` subcommands."""
    parser = subparsers.add_parser(
        "plot",
        help="write PNGs of a target's table and its difference from the expected table",
        description="Write heatmap.png, row_profiles.png, similarity.png and difference.png of TARGET's table "
                    "into DIR; difference.png shows each element's error as a multiple of its tolerance.",
    )
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_convention_arguments(parser)
    parser.add_argument("--num-positions", type=int, default=DEFAULT_NUM_POSITIONS, metavar="N",
                        help=f"rows (positions, or timesteps for --api timesteps); default {DEFAULT_NUM_POSITIONS}")
    parser.add_argument("--dim", type=int, default=DEFAULT_DIM, metavar="D",
                        help=f"embedding width; default {DEFAULT_DIM}")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the PNGs (created)")
    parser.set_defaults(run=run)


def add_convention_arguments(parser: argparse.ArgumentParser) -> None:
    """The convention flags of ``check`` (:mod:`posenc_spec.gate.command`), same names and choices."""
    parser.add_argument("--convention", choices=list(PRESETS), default="vaswani", metavar="NAME",
                        help=f"preset: {', '.join(PRESETS)} (default vaswani)")
    parser.add_argument("--layout", choices=LAYOUTS, help="override the preset's layout")
    parser.add_argument("--first", choices=FUNCTIONS, help="override the preset's first function")
    parser.add_argument("--freq-shift", dest="freq_shift", type=int, choices=(0, 1), help="override the shift")
    parser.add_argument("--base", type=float, metavar="B", help="override the base")
    parser.add_argument("--offset", type=float, metavar="N", help="override the offset (position of row 0)")
    parser.add_argument("--scale", type=float, metavar="S", help="override the scale of the argument")
    parser.add_argument("--odd", choices=ODD_CHOICES,
                        help="odd-width behaviour; 'skip' (check's choice to test no odd width) draws as 'error'")
    parser.add_argument("--api", choices=APIS, default="table",
                        help="table: fn(num_positions, dim) (default); timesteps: fn(timesteps, dim)")
    parser.add_argument("--t-max", dest="t_max", type=float, default=1000.0, metavar="T",
                        help="largest timestep for the timesteps API (default 1000)")


def _as_numbers(result):
    """The target's result as a float64 array and the dtype name its tolerance follows."""
    if hasattr(result, "detach"):  # torch: leave the graph and the device
        result = result.detach().cpu()
        if not result.dtype.is_floating_point:
            raise ValueError(f"returned a torch {result.dtype} tensor, not floating-point numbers")
        return result.double().numpy(), dtype_name(result.dtype)
    array = np.asarray(result)
    if not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"returned {type(result).__name__} of dtype {array.dtype}, not floating-point numbers")
    return array.astype(np.float64), dtype_name(array.dtype)


def run(args: argparse.Namespace) -> int:
    from .diagnostics import write_table_figures

    try:
        convention = get_convention(args.convention, layout=args.layout, first=args.first,
                                    freq_shift=args.freq_shift, base=args.base, offset=args.offset,
                                    scale=args.scale, odd=None if args.odd == "skip" else args.odd)
        if args.num_positions < 1:
            raise ValueError(f"--num-positions must be at least 1, got {args.num_positions}")
        convention.check_odd(args.dim)
        target = load_target(args.target)
    except (ValueError, TypeError, TargetError) as error:
        print(f"posenc-spec plot: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # the target's module may raise anything while it is imported
        print(f"posenc-spec plot: error: cannot import TARGET {args.target}: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 2

    if args.api == "timesteps":
        import torch

        steps = torch.linspace(0, args.t_max, args.num_positions).round().to(torch.int64)
        call_args, positions = (steps, args.dim), steps.numpy().astype(np.float64)
        call = f"({args.num_positions} int64 timesteps in [0, {args.t_max:g}], {args.dim})"
    else:
        call_args, positions = (args.num_positions, args.dim), args.num_positions
        call = f"({args.num_positions}, {args.dim})"
    try:
        table, out_dtype = _as_numbers(target(*call_args))
    except Exception as error:  # the target under test may raise anything
        print(f"posenc-spec plot: {args.target}{call} gave nothing to draw: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    exp = expectation(positions, args.dim, convention, out_dtype)
    if table.shape != exp.table.shape:
        print(f"posenc-spec plot: {args.target} returned shape {table.shape}, expected {exp.table.shape}",
              file=sys.stderr)
        return 1
    title = f"{args.target} under {convention.name()}, {out_dtype}"
    paths = write_table_figures(table, exp, args.out, title=title)
    summary = compare(table, exp.table, exp.tolerance)
    print(f"{title}: " + ("every element within tolerance" if summary.ok else summary.describe()))
    for name, path in paths.items():
        print(f"  {name}: {path}")
    return 0
