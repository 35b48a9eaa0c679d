"""``posenc-spec identify TARGET``: which member of the family a target computes."""

from __future__ import annotations

import argparse
import sys

from posenc_spec.gate.declaration import (
    APIS,
    DEFAULT_T_MAX,
    DEFAULT_TIMEOUT,
    MAX_T_MAX,
    MAX_TIMEOUT,
)
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.loader import TargetError, absolute_target
from posenc_spec.gate.options import run_options
from posenc_spec.gate.output import destination, json_report
from posenc_spec.gate.values import choice, integer, number

from .arguments import add_run_arguments, error

EPILOG = """\
exit status: 0 identified; 1 no member of the family fits (the answer is "none", with the
nearest convention and its max error/tolerance ratio); 2 usage error, or a TARGET that
cannot be imported.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "identify", help="find which convention a target computes", epilog=EPILOG,
        description="Find the layout, first function, shift, base, offset, scale and odd-width behaviour of a "
                    "target from its tables; the answer is checked on sizes it was not fitted on.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    parser.add_argument("--api", default=None, help="table (default) or timesteps")
    parser.add_argument("--t-max", dest="t_max", default=None, help="largest timestep for the timesteps API")
    parser.add_argument("--max-positions", dest="max_positions", default=None, help="cap every length")
    parser.add_argument("--timeout", default=None, help=f"seconds per import and call (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--json", metavar="FILE", help="write the answer as JSON (- for standard output)")
    add_run_arguments(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from posenc_spec.gate.identify import IdentifyError, identify_target

    try:
        target = absolute_target(args.target)
        api = choice("--api", args.api or "table", APIS)
        t_max = number("--t-max", args.t_max if args.t_max is not None else DEFAULT_T_MAX, above=0, maximum=MAX_T_MAX)
        timeout = number("--timeout", args.timeout if args.timeout is not None else DEFAULT_TIMEOUT, above=0,
                         maximum=MAX_TIMEOUT)
        max_positions = None if args.max_positions is None else integer("--max-positions", args.max_positions)
        options = run_options(1, None, args.max_memory, args.max_processes)
        if args.json is not None:
            destination.check("--json", args.json)
        result = identify_target(target, api=api, t_max=t_max, timeout=timeout, max_positions=max_positions,
                                 options=options)
    except (UsageError, TargetError) as problem:
        return error("identify", problem)
    except IdentifyError as problem:
        return error("identify", f"cannot import {args.target}: {problem}")
    result["target"] = args.target
    destination.emit(f"{args.target}: {result['message']}\n", sys.stderr if args.json == "-" else sys.stdout)
    if args.json is not None:
        try:
            destination.write(args.json, json_report.to_text(result))
        except OSError as problem:
            return error("identify", f"cannot write {args.json}: {problem.strerror or problem}")
    return 0 if result["convention"] is not None else 1
