"""``posenc-spec check`` and ``posenc-spec identify``: a thin layer over the gate's engine."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from .config import ConfigError, make_spec, read_config, read_pyproject
from .engine import APIS, DEFAULT_TIMEOUT, check_many, exit_status
from .identify import IdentifyError, identify_target
from .options import CONVENTION_FLAGS, add_convention_arguments, add_timeout_argument, positive_int
from .report import reports_json, summary_lines, write_figures, write_json

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

--plots DIR: for each target that does not conform and returned a table, write
heatmap.png, row_profiles.png, similarity.png and difference.png (as posenc-spec plot
does) of the first size whose formula check failed (else of the largest size that gets
every check, 300x512 by default) into DIR/<target>/; the report names each file, and the
JSON entry holds them under "figures". A run option, so a command-line flag only.
"""

IDENTIFY_EPILOG = """\
exit status: 0 identified; 1 no member of the family fits (the answer is "none", with the
nearest convention and its max error/tolerance ratio); 2 usage error, or a TARGET that
cannot be imported.
"""


def register(subparsers) -> None:
    check = subparsers.add_parser(
        "check", help="check a target against a declared convention",
        description="Check an implementation of a sinusoidal encoding against a declared convention.",
        epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("target", nargs="?", metavar="TARGET",
                       help="package.module:attr or path/to/file.py:attr (attr may be dotted)")
    check.add_argument("--config", metavar="FILE", help="a TOML file of [[targets]] to check in one run")
    add_convention_arguments(check)
    check.add_argument("--max-positions", dest="max_positions", type=positive_int, metavar="N",
                       help="cap every length of the grid (for implementations with a maximum length)")
    check.add_argument("--xfails", metavar="FILE", help="known deviations: one check id per line, # comments")
    check.add_argument("--json", metavar="FILE", help="write the report as JSON (- for standard output)")
    add_timeout_argument(check)
    check.add_argument("--plots", type=Path, metavar="DIR",
                       help="write PNGs of each target that does not conform into DIR/<target>/")
    check.add_argument("-v", "--verbose", action="store_true", help="list every check, not only the failures")
    check.set_defaults(run=run_check)

    identify = subparsers.add_parser(
        "identify", help="find which convention a target computes",
        description="Find the layout, first function, shift, base, offset and scale of a target from its tables.",
        epilog=IDENTIFY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    identify.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    identify.add_argument("--api", choices=APIS, default="table", help="table (default) or timesteps")
    identify.add_argument("--json", metavar="FILE", help="write the answer as JSON (- for standard output)")
    add_timeout_argument(identify, default=DEFAULT_TIMEOUT)
    identify.set_defaults(run=run_identify)


_FLAG_KEYS = (*CONVENTION_FLAGS, "max_positions", "xfails", "timeout")


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
    if args.plots is not None and args.plots.exists() and not args.plots.is_dir():
        return _error("check", f"--plots {args.plots} exists and is not a folder")
    try:
        reports = check_many(specs, keep_table=args.plots is not None)
        figures = write_figures(reports, args.plots) if args.plots is not None else None
    except KeyboardInterrupt:
        print("posenc-spec check: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        return _internal_error("check", error)
    out = sys.stderr if args.json == "-" else sys.stdout
    for report, pictures in zip(reports, figures or [None] * len(reports), strict=True):
        print("\n".join(summary_lines(report, args.verbose, pictures)), file=out)
    status = exit_status(reports)
    if len(reports) > 1:
        conforming = sum(report.conforms for report in reports)
        print(f"{conforming} of {len(reports)} targets conform", file=out)
    if args.json:
        try:
            write_json(reports_json(reports, single, figures), args.json)
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
