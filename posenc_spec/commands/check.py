"""``posenc-spec check`` and ``posenc-spec merge``.

``check`` gates one TARGET (declared by flags), the targets of a ``--config`` file, those
of the nearest ``[tool.posenc-spec]``, or the reference implementations (``--builtin``); it
prints a summary, and writes the versioned JSON report (``--json``), JUnit XML
(``--junitxml``), pictures of failing targets (``--plots``) and GitHub annotations.
``merge`` joins the JSON reports of ``--shard`` runs.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import sys

from .arguments import (
    OUTPUT_STATUS,
    add_against_arguments,
    add_declaration_arguments,
    add_run_arguments,
    declaration_flags,
    error,
    families_text,
    files_read,
    open_outputs,
    run_options_of,
    write_output,
)

CHECK_EPILOG = """\
{families}

exit status: 0 conforms; 1 does not conform (a check failed: the target raised, crashed,
hung, exceeded a limit, or returned a wrong shape, NaN, Inf or wrong values); 2 usage error,
or a TARGET that cannot be imported; 3 a --json, --junitxml or --plots destination could
not be written at the end.

check ids (--xfails and the reports): import, determinism, aliasing, global-state,
regression (--against), and each family's (posenc-spec keys FAMILY).

Without TARGET: the targets of --config FILE, else of the nearest pyproject.toml with a
[tool.posenc-spec] table (up to the repository root); --builtin checks the reference
implementations posenc-spec ships. Flags override every target's keys.
"""


def check_epilog() -> str:
    """The epilog of ``check --help``: the families, exit statuses, where check ids and
    targets come from."""
    return CHECK_EPILOG.format(families=families_text())


def register(subparsers) -> None:
    check = subparsers.add_parser(
        "check", help="check targets against their declared conventions", usage="%(prog)s [TARGET] [options]",
        description="Check implementations of a position encoding against a declared convention.",
        epilog=check_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("target", nargs="?", metavar="TARGET",
                       help="module:attr or path/to/file.py:attr (attr may be dotted)")
    check.add_argument("--config", metavar="FILE", help="a TOML file of [[targets]] (or a pyproject.toml)")
    check.add_argument("--builtin", action="store_true", help="check the reference implementations posenc-spec ships")
    check.add_argument("--xfails", metavar="FILE", help="known deviations: check ids or glob patterns")
    check.add_argument("-v", "--verbose", action="store_true", help="list every check, not only the failures")
    add_declaration_arguments(check.add_argument_group("the declaration (each family's keys: posenc-spec keys "
                                                       "FAMILY)"))
    add_against_arguments(check)
    outputs = check.add_argument_group("outputs")
    outputs.add_argument("--json", metavar="FILE", help="write the report as JSON (- for standard output)")
    outputs.add_argument("--junitxml", metavar="FILE", help="write the report as JUnit XML, for CI test reporters")
    outputs.add_argument("--annotations", default=None, metavar="github|none",
                         help="::error lines (default: github under GitHub Actions)")
    outputs.add_argument("--plots", metavar="DIR", help="pictures of each target that does not conform")
    run = check.add_argument_group("the run")
    add_run_arguments(run, jobs=True)
    run.add_argument("--fail-fast", action="store_true",
                     help="stop a target's calls at its first failed check")
    run.add_argument("--shard", metavar="K/N", help="check only every N-th target, from the K-th")
    check.set_defaults(run=run_check)

    merge = subparsers.add_parser(
        "merge", help="join the JSON reports of --shard runs into one",
        description="Join the --json reports of the shards of one run, every status recomputed from the checks; the "
                    "exit status is the whole run's (2: a shard that is missing, repeated, from another run or that "
                    "disagrees with itself; 3: a report that could not be written).")
    merge.add_argument("reports", nargs="+", metavar="REPORT.json")
    merge.add_argument("--json", metavar="FILE", required=True, help="where to write the joined report (- for stdout)")
    merge.add_argument("--junitxml", metavar="FILE", help="also write it as JUnit XML")
    merge.add_argument("--annotations", default=None, metavar="github|none",
                       help="one ::error line per failing check (default: github under GitHub Actions)")
    merge.set_defaults(run=run_merge)


def run_check(args) -> int:
    with contextlib.ExitStack() as held:  # the report files and --plots, open from start to end
        return _check(args, held)


def _check(args, held: contextlib.ExitStack) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.sandbox import check_preload, start_root

    try:
        options = run_options_of(args, fail_fast=args.fail_fast)
        start_root(options.preload)  # first: its imports go on while this process reads the targets
        from posenc_spec.gate.config import Front, select_declarations
        from posenc_spec.gate.output import destination, json_report, text
        from posenc_spec.gate.preimport import import_drawing_modules

        front = Front("TARGET", "--config", "--xfails", others="--config FILE, a TARGET, or --builtin (the "
                      "reference implementations posenc-spec ships)")
        declarations, config = select_declarations(front, args.target, args.config, args.xfails,
                                                   declaration_flags(args), builtin=args.builtin)
        outputs = open_outputs(held, ("--json", args.json), ("--junitxml", args.junitxml),
                               reads=files_read(declarations, config))
        plots = None if args.plots is None else held.enter_context(
            contextlib.closing(destination.open_folder("--plots", args.plots)))
        annotate = annotations_wanted(args.annotations)
        from posenc_spec.gate.engine import check_many, shard
        positions = shard(list(range(len(declarations))), *options.shard)
        selected = [declarations[position] for position in positions]
        # Before the header, so that a usage error is the only line; check_many asks again
        # (its guard for every caller), which the family answers from its cache.
        for declaration in selected:
            if declaration.formula:
                declaration.family.assert_checkable(declaration)
        check_preload(options.preload)
        if plots is not None:  # matplotlib and all it reads, before any target runs
            import_drawing_modules()
        out = sys.stderr if args.json == "-" else sys.stdout
        destination.emit(text.run_header(len(selected), config, options.jobs, options.shard), out)
        reports = check_many(selected, options, keep_table=plots is not None)
    except UsageError as problem:
        return error("check", problem)
    figures = _figures(reports, plots)
    entries = []
    for position, report, drawn in zip(positions, reports, figures, strict=True):
        lines = drawn.lines() if drawn is not None else []
        destination.emit(text.summary_lines(report, args.verbose, lines), out)
        entries.append(json_report.target_entry(report, position, drawn.as_json() if drawn is not None else None))
    digest = json_report.run_digest((declaration.name, declaration.as_dict()) for declaration in declarations)
    data = json_report.run_report(entries, len(declarations), options.shard, config, digest)
    if len(reports) > 1:
        conforming = sum(report.conforms for report in reports)
        destination.emit(f"{conforming} of {len(reports)} targets conform", out)
    status = write_outputs("check", data, outputs, annotate, out)
    unwritten = sum(drawn is not None and drawn.unwritten for drawn in figures)
    if unwritten:
        error("check", f"--plots {args.plots}: the pictures of {unwritten} target{'s' * (unwritten != 1)} could "
                       "not be written (said above)")
        return OUTPUT_STATUS
    return status


def annotations_wanted(value) -> bool:
    """``--annotations``: github (by default under GitHub Actions) or none."""
    from posenc_spec.gate.values import choice

    default = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "none"
    return choice("--annotations", value or default, ("github", "none")) == "github"


def write_outputs(command: str, data: dict, outputs, annotate: bool, out) -> int:
    """The annotations and the report's files (``outputs``: the ``--json`` and ``--junitxml``
    destinations of :func:`~.arguments.open_outputs`); the run's exit status, or
    OUTPUT_STATUS when a file could not be written (each said on one line)."""
    from posenc_spec.gate.output import annotations, destination, json_report, junit

    if annotate:
        destination.emit(annotations.github_annotations(data), out, workflow_commands=True)
    written = [write_output(command, output, render(data))
               for output, render in zip(outputs, (json_report.to_text, junit.junit_xml), strict=True)
               if output is not None]
    return json_report.EXIT_STATUS[data["status"]] if all(written) else OUTPUT_STATUS


def _figures(reports, folder):
    if folder is None:
        return [None] * len(reports)
    from posenc_spec.figures.gate_plots import write_figures  # matplotlib, only when asked

    return write_figures(reports, folder)


def run_merge(args) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output import destination, json_report

    with contextlib.ExitStack() as held:
        try:
            outputs = open_outputs(held, ("--json", args.json), ("--junitxml", args.junitxml))
            annotate = annotations_wanted(args.annotations)
            data = json_report.merge([json_report.read_report(path) for path in args.reports], args.reports)
        except UsageError as problem:
            return error("merge", problem)
        out = sys.stderr if args.json == "-" else sys.stdout
        status = write_outputs("merge", data, outputs, annotate, out)
        if args.json != "-":  # there, standard output is the report, standard error only the annotations
            destination.emit(_merged(data, len(args.reports)), out)
        return status


def _merged(data: dict, shards: int) -> str:
    """What ``merge`` joined, in words, and why its exit status is what it is."""
    from posenc_spec.gate.output.json_report import EXIT_STATUS

    counts = collections.Counter(target["status"] for target in data["targets"])
    words = {"conforms": "conform", "does-not-conform": "do not conform", "error": "cannot be imported"}
    parts = [f"{counts[status]} {words[status]}" for status in words if counts[status]]
    why = {0: "every target conforms", 1: "a target does not conform", 2: "a target cannot be imported"}
    status = EXIT_STATUS[data["status"]]
    return (f"merged {shards} reports: {len(data['targets'])} targets, {', '.join(parts) or 'none'}; exit status "
            f"{status} ({why.get(status, data['status'])})")
