"""``posenc-spec check`` and ``posenc-spec merge``.

``check`` gates one TARGET (declared by flags), the targets of a ``--config`` file, those
of the nearest ``[tool.posenc-spec]``, or the reference implementations (``--builtin``); it
prints a summary, and writes the versioned JSON report (``--json``), JUnit XML
(``--junitxml``), pictures of failing targets (``--plots``) and GitHub annotations.
``merge`` joins the JSON reports of ``--shard`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .arguments import (
    add_against_arguments,
    add_declaration_arguments,
    add_rope_arguments,
    add_run_arguments,
    check_outputs,
    declaration_flags,
    error,
    write_output,
)

CHECK_EPILOG = """\
exit status: 0 conforms; 1 does not conform (a check failed: the target raised, exited,
crashed, hung past --timeout, exceeded a limit, or returned a wrong shape, NaN, Inf or
wrong values); 2 usage error, or a TARGET that cannot be imported.

check ids (for --xfails files and the reports; S names a slot of the grid such as
4096x1024 or every-step-x128, the same whatever --max-positions or --t-max):
import, call[S], finite[S], formula[S], range[S], pair-norm[S], row-norm[S],
position-zero[S], frequencies[S], relative-offset[S], dot-product[S], degenerate[d=2],
degenerate[L=1], odd[7], odd[65], determinism, global-state; regression (--against).
See posenc_spec.gate.grid for what each one checks and for the grid. Rotary embeddings
(D a head size, S long or short, T the dtype of x): call, finite and formula at [d=D],
[d=D:S] or [d=D:T]; attention-factor[d=D]; identity, prefix, passthrough, norm,
relative and history at [d=D...]; see posenc_spec.gate.rope.grid.

Without TARGET: the targets of --config FILE, else of the nearest pyproject.toml with a
[tool.posenc-spec] table (from the working directory up to the repository root); with
none, nothing is checked (exit 2). --builtin checks the reference implementations
posenc-spec ships instead. Flags given with them override every target's keys.
"""


def register(subparsers) -> None:
    check = subparsers.add_parser(
        "check", help="check targets against their declared conventions",
        description="Check implementations of a position encoding against a declared convention.",
        epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("target", nargs="?", metavar="TARGET",
                       help="package.module:attr or path/to/file.py:attr (attr may be dotted)")
    check.add_argument("--config", metavar="FILE", help="a TOML file of [[targets]] (or a pyproject.toml)")
    check.add_argument("--builtin", action="store_true",
                       help="check the reference implementations posenc-spec ships (no TARGET, no --config)")
    add_declaration_arguments(check)
    add_rope_arguments(check)
    add_against_arguments(check)
    check.add_argument("--xfails", metavar="FILE", help="known deviations: check ids or glob patterns, # reasons")
    check.add_argument("--json", metavar="FILE", help="write the report as JSON (- for standard output)")
    check.add_argument("--junitxml", metavar="FILE", help="write the report as JUnit XML, for CI test reporters")
    check.add_argument("--annotations", default=None, metavar="github|none",
                       help="one ::error line per failing check, shown on the pull request "
                            "(default: github when GITHUB_ACTIONS=true, else none)")
    check.add_argument("--plots", metavar="DIR", help="write pictures of each target that does not conform")
    add_run_arguments(check, jobs=True)
    check.add_argument("--fail-fast", action="store_true",
                       help="stop each target's calls at its first failed check (a quicker verdict; the checks "
                            "after it are reported as not run)")
    check.add_argument("--shard", metavar="K/N", help="check only every N-th target, starting with the K-th")
    check.add_argument("-v", "--verbose", action="store_true", help="list every check, not only the failures")
    check.set_defaults(run=run_check)

    merge = subparsers.add_parser(
        "merge", help="join the JSON reports of --shard runs into one",
        description="Join the --json reports of the shards of one run; the exit status is the whole run's.")
    merge.add_argument("reports", nargs="+", metavar="REPORT.json")
    merge.add_argument("--json", metavar="FILE", required=True, help="where to write the joined report (- for stdout)")
    merge.add_argument("--junitxml", metavar="FILE", help="also write it as JUnit XML")
    merge.add_argument("--annotations", default=None, metavar="github|none",
                       help="one ::error line per failing check (default: github under GitHub Actions)")
    merge.set_defaults(run=run_merge)


def run_check(args) -> int:
    from posenc_spec.gate.config import Front, select_declarations
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.options import run_options
    from posenc_spec.gate.output import destination, json_report, text
    from posenc_spec.gate.sandbox import check_preload

    try:
        front = Front("TARGET", "--config", "--xfails", others="--config FILE, a TARGET, or --builtin (the "
                      "reference implementations posenc-spec ships)")
        declarations, config = select_declarations(front, args.target, args.config, args.xfails,
                                                   declaration_flags(args), builtin=args.builtin)
        options = run_options(args.jobs, args.shard, args.max_memory, args.max_processes, preload=args.preload,
                              fail_fast=args.fail_fast)
        check_outputs(("--json", args.json), ("--junitxml", args.junitxml))
        annotate = annotations_wanted(args.annotations)
        if args.plots is not None and Path(args.plots).exists() and not Path(args.plots).is_dir():
            raise UsageError(f"--plots {args.plots} exists and is not a folder")
        from posenc_spec.gate.engine import check_many, shard
        from posenc_spec.gate.vacuity import assert_distinguishable

        positions = shard(list(range(len(declarations))), *options.shard)
        selected = [declarations[position] for position in positions]
        # Before the header, so that a usage error is the only line; check_many asks again
        # (its guard for every caller), which vacuity answers from its cache.
        for declaration in selected:
            if declaration.formula:
                assert_distinguishable(declaration)
        check_preload(options.preload)
        out = sys.stderr if args.json == "-" else sys.stdout
        destination.emit(text.run_header(len(selected), config, options.jobs, options.shard) + "\n", out)
        reports = check_many(selected, options, keep_table=args.plots is not None)
    except UsageError as problem:
        return error("check", problem)
    figures = _figures(reports, args.plots)
    entries = []
    for position, report, drawn in zip(positions, reports, figures, strict=True):
        lines = drawn.lines() if drawn is not None else []
        destination.emit("\n".join(text.summary_lines(report, args.verbose, lines)) + "\n", out)
        entries.append(json_report.target_entry(report, position, drawn.as_json() if drawn is not None else None))
    data = json_report.run_report(entries, len(declarations), options.shard, config)
    if len(reports) > 1:
        conforming = sum(report.conforms for report in reports)
        destination.emit(f"{conforming} of {len(reports)} targets conform\n", out)
    return write_outputs("check", data, args.json, args.junitxml, annotate, out)


def annotations_wanted(value) -> bool:
    """``--annotations``: github (by default under GitHub Actions) or none."""
    from posenc_spec.gate.values import choice

    default = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "none"
    return choice("--annotations", value or default, ("github", "none")) == "github"


def write_outputs(command: str, data: dict, json_path, junit_path, annotate: bool, out) -> int:
    """The report's files and annotations; the run's exit status (2 when a file cannot be written)."""
    from posenc_spec.gate.output import annotations, destination, json_report, junit

    if annotate:
        destination.emit("".join(line + "\n" for line in annotations.github_annotations(data)), out)
    for path, render in ((json_path, json_report.to_text), (junit_path, junit.junit_xml)):
        if path is not None and (failed := write_output(command, path, render(data))) is not None:
            return failed
    return json_report.EXIT_STATUS[data["status"]]


def _figures(reports, folder):
    if folder is None:
        return [None] * len(reports)
    from posenc_spec.figures.gate_plots import write_figures  # matplotlib, only when asked

    return write_figures(reports, folder)


def run_merge(args) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output import json_report

    try:
        check_outputs(("--json", args.json), ("--junitxml", args.junitxml))
        annotate = annotations_wanted(args.annotations)
        data = json_report.merge([json_report.read_report(path) for path in args.reports], args.reports)
    except UsageError as problem:
        return error("merge", problem)
    return write_outputs("merge", data, args.json, args.junitxml, annotate, sys.stdout)

