"""``posenc-spec diff OLD.npz NEW.npz``: two snapshots compared in ULPs, nothing called.

For example a CPU run against a GPU run, or two library versions; where the two were
recorded in different numeric environments (:mod:`posenc_spec.environment`), a line says
how. Both files are read a block of elements at a time
(:func:`posenc_spec.regression.compare.compare_files`): a few MiB of memory, whatever they
hold. Exit status: 0 every output within ``--max-ulp``; 1 beyond; 2 a missing, unreadable,
truncated or tampered snapshot, or two snapshots of different calls or APIs; 3 the
``--json`` file could not be written at the end.
"""

from __future__ import annotations

from .arguments import OUTPUT_STATUS, error, open_outputs, write_output


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two snapshots in ULPs",
        description="Compare two snapshots (posenc-spec snapshot) output by output, in ULPs.")
    parser.add_argument("old", metavar="OLD.npz")
    parser.add_argument("new", metavar="NEW.npz")
    parser.add_argument("--max-ulp", dest="max_ulp", default=None, metavar="N",
                        help="the largest ULP distance allowed (default 0: bit for bit)")
    parser.add_argument("--json", metavar="FILE", help="write the comparison as JSON (- for standard output)")
    parser.set_defaults(run=run)


def run(args) -> int:
    import contextlib

    with contextlib.ExitStack() as held:  # the --json destination, open from start to end
        return _run(args, held)


def _run(args, held) -> int:
    import sys

    from posenc_spec.environment import numeric_differences
    from posenc_spec.gate.declaration import MAX_ULP
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output import destination, json_report
    from posenc_spec.gate.values import integer
    from posenc_spec.regression import SnapshotError
    from posenc_spec.regression.compare import compare_files

    try:
        max_ulp = integer("--max-ulp", args.max_ulp if args.max_ulp is not None else 0, minimum=0, maximum=MAX_ULP)
        json_out, = open_outputs(held, ("--json", args.json), reads=[(args.old, "the old snapshot"),
                                                                     (args.new, "the new snapshot")])
        old_meta, new_meta, diffs = compare_files(args.old, args.new, max_ulp)
    except (UsageError, SnapshotError) as problem:
        return error("diff", problem)
    failing = [diff for diff in diffs if not diff.passed]
    out = sys.stderr if args.json == "-" else sys.stdout
    differences = numeric_differences(old_meta["environment"], new_meta["environment"])
    lines = [f"  recorded in different numeric environments: {'; '.join(differences)}"] if differences else []
    destination.emit(lines + [f"  {diff.describe()}" for diff in failing], out)
    destination.emit(f"{args.old} -> {args.new}: {_verdict(len(diffs), len(failing), max_ulp)}", out)
    if args.json is not None:
        data = {"old": args.old, "new": args.new, "max_ulp": max_ulp, "passed": not failing,
                "calls": [diff.as_dict() for diff in diffs]}
        if not write_output("diff", json_out, json_report.to_text(data)):
            return OUTPUT_STATUS
    return 1 if failing else 0


def _verdict(calls: int, failing: int, max_ulp: int) -> str:
    """What the comparison found, in words, and why the exit status is what it is."""
    if not failing:
        same = "give identical outputs, bit for bit" if max_ulp == 0 else f"within {max_ulp} ULP of each other"
        return f"all {calls} calls {same}"
    allowed = "differ (bit for bit was asked" if max_ulp == 0 else f"differ by more than {max_ulp} ULP (--max-ulp"
    return f"{failing} of {calls} calls {allowed}); exit status 1"
