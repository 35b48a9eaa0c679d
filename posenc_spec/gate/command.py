"""``posenc-spec check`` and ``posenc-spec identify``: a thin layer over the gate's engine."""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from posenc_spec.conventions import FUNCTIONS, LAYOUTS, PRESETS

from .config import ODD_CHOICES, ConfigError, make_spec, read_config, read_pyproject
from .engine import APIS, DEFAULT_TIMEOUT, check_many, exit_status
from .identify import IdentifyError, identify_target
from .report import reports_json, summary_lines, write_json

CHECK_EPILOG = """\
exit status: 0 conforms; 1 does not conform (a check failed, the target raised, exited,
crashed, hung past --timeout, or returned a wrong shape, NaN, Inf or no numbers);
2 usage error, or a TARGET that cannot be imported.

check ids (for --xfails files and the JSON report; S is a size such as 4096x1024 or
int64:1001x128): import, call[S], finite[S], formula[S], range[S], pair-norm[S],
row-norm[S], position-zero[S], frequencies[S], relative-offset[S], dot-product[S],
degenerate[d=2], degenerate[L=1], odd[7], odd[65], determinism, global-state.
See posenc_spec.gate.grid for what each one checks and for the grid.

--config FILE: a TOML file of [[targets]] tables, each with `target` and any of the keys
convention, layout, first, freq_shift, base, offset, scale, odd, api, t_max,
max_positions, xfails, timeout (top-level keys are defaults for every target; flags
given on the command line override every target). With no TARGET and no --config the
[tool.posenc-spec] table of ./pyproject.toml is read, with the same keys.
"""

IDENTIFY_EPILOG = """\
exit status: 0 identified; 1 no member of the family fits (the answer is "none", with the
nearest convention and its max error/tolerance ratio); 2 usage error, or a TARGET that
cannot be imported.
"""


def _number(text: str):
    """An int when the text is one, else a float (``--offset 2`` stays 2, not 2.0)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_number(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def register(subparsers) -> None:
    check = subparsers.add_parser(
        "check", help="check a target against a declared convention",
        description="Check an implementation of a sinusoidal encoding against a declared convention.",
        epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("target", nargs="?", metavar="TARGET",
                       help="package.module:attr or path/to/file.py:attr (attr may be dotted)")
    check.add_argument("--config", metavar="FILE", help="a TOML file of [[targets]] to check in one run")
    check.add_argument("--convention", choices=list(PRESETS), metavar="NAME",
                       help=f"the declared preset: {', '.join(PRESETS)} (default vaswani)")
    check.add_argument("--layout", choices=LAYOUTS, help="override the preset's layout")
    check.add_argument("--first", choices=FUNCTIONS, help="override the preset's first function")
    check.add_argument("--freq-shift", dest="freq_shift", type=int, choices=(0, 1), help="override the shift")
    check.add_argument("--base", type=_number, metavar="B", help="override the base")
    check.add_argument("--offset", type=_number, metavar="N", help="override the offset (position of row 0)")
    check.add_argument("--scale", type=_number, metavar="S", help="override the scale of the argument")
    check.add_argument("--odd", choices=ODD_CHOICES,
                       help="odd widths: error (expect an exception; default), zero-pad, ceil, or skip (test none)")
    check.add_argument("--api", choices=APIS, help="table: fn(num_positions, dim) (default); "
                                                   "timesteps: fn(timesteps, dim)")
    check.add_argument("--t-max", dest="t_max", type=_positive_number, metavar="T",
                       help="largest timestep passed to a timesteps-API target (default 1000)")
    check.add_argument("--max-positions", dest="max_positions", type=_positive_int, metavar="N",
                       help="cap every length of the grid (for implementations with a maximum length)")
    check.add_argument("--xfails", metavar="FILE", help="known deviations: one check id per line, # comments")
    check.add_argument("--json", metavar="FILE", help="write the report as JSON (- for standard output)")
    check.add_argument("--timeout", type=_positive_number, metavar="SECONDS",
                       help=f"limit for the import and for each call (default {DEFAULT_TIMEOUT:g})")
    check.add_argument("-v", "--verbose", action="store_true", help="list every check, not only the failures")
    check.set_defaults(run=run_check)

    identify = subparsers.add_parser(
        "identify", help="find which convention a target computes",
        description="Find the layout, first function, shift, base, offset and scale of a target from its tables.",
        epilog=IDENTIFY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    identify.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    identify.add_argument("--api", choices=APIS, default="table", help="table (default) or timesteps")
    identify.add_argument("--json", metavar="FILE", help="write the answer as JSON (- for standard output)")
    identify.add_argument("--timeout", type=_positive_number, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                          help=f"limit for the import and for each call (default {DEFAULT_TIMEOUT:g})")
    identify.set_defaults(run=run_identify)


_FLAG_KEYS = ("convention", "layout", "first", "freq_shift", "base", "offset", "scale", "odd", "api", "t_max",
              "max_positions", "xfails", "timeout")


def _error(command: str, message) -> int:
    print(f"posenc-spec {command}: error: {message}", file=sys.stderr)
    return 2


def _internal_error(command: str, error: BaseException) -> int:
    if os.environ.get("POSENC_SPEC_DEBUG"):
        traceback.print_exc()
    return _error(command, f"internal error: {type(error).__name__}: {error} "
                           "(set POSENC_SPEC_DEBUG=1 for the traceback)")


def _specs(args):
    flags = {key: getattr(args, key) for key in _FLAG_KEYS}
    if args.target and args.config:
        raise ConfigError("give either TARGET or --config, not both")
    if args.target:
        if flags["xfails"] is not None:
            flags["xfails"] = os.path.abspath(flags["xfails"])
        return [make_spec({"target": args.target, **flags})], True
    if flags["xfails"] is not None:
        raise ConfigError("--xfails goes with a TARGET; in a config file give each target an `xfails` key")
    if args.config:
        return read_config(args.config, flags), False
    return read_pyproject("pyproject.toml", flags), False


def run_check(args) -> int:
    try:
        specs, single = _specs(args)
    except (ConfigError, ValueError) as error:
        return _error("check", error)
    try:
        reports = check_many(specs)
    except KeyboardInterrupt:
        print("posenc-spec check: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        return _internal_error("check", error)
    out = sys.stderr if args.json == "-" else sys.stdout
    for report in reports:
        print("\n".join(summary_lines(report, args.verbose)), file=out)
    status = exit_status(reports)
    if len(reports) > 1:
        conforming = sum(report.conforms for report in reports)
        print(f"{conforming} of {len(reports)} targets conform", file=out)
    if args.json:
        try:
            write_json(reports_json(reports, single), args.json)
        except OSError as error:
            return _error("check", f"cannot write {args.json}: {error.strerror or error}")
    return status


def run_identify(args) -> int:
    try:
        result = identify_target(args.target, api=args.api, timeout=args.timeout)
    except IdentifyError as error:
        return _error("identify", f"cannot import {args.target}: {error}")
    except ValueError as error:
        return _error("identify", error)
    except KeyboardInterrupt:
        print("posenc-spec identify: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        return _internal_error("identify", error)
    out = sys.stderr if args.json == "-" else sys.stdout
    print(f"{args.target}: {result['message']}", file=out)
    if args.json:
        try:
            write_json(result, args.json)
        except OSError as error:
            return _error("identify", f"cannot write {args.json}: {error.strerror or error}")
    return 0 if result["convention"] is not None else 1
