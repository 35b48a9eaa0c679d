"""``posenc-spec snapshot TARGET --out FILE.npz``: record what a target returns on the grid.

The target runs in a sealed child, as ``check`` runs it, on the gate's default grid for its
API (bounded by ``--max-positions`` and ``--t-max``): every size, the odd and degenerate
widths, and for the timesteps API the int64 and float32 timesteps. Every output is kept in
the dtype it was produced in, with the exact inputs and the numeric environment (what decides
float results on this machine: :mod:`posenc_spec.environment`); a call that raises
is recorded as raising. ``check TARGET --against FILE.npz`` replays it.

Exit status: 0 written; 2 usage error, an existing file without ``--force``, a TARGET that
cannot be imported, or a file that cannot be written.
"""

from __future__ import annotations

from pathlib import Path

from .arguments import (
    add_call_arguments,
    add_rope_arguments,
    add_run_arguments,
    declaration_flags,
    error,
    run_options_of,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "snapshot", help="record what a target returns on the gate's grid, for check --against",
        description="Record every output of TARGET on the gate's default grid (with its exact inputs) in FILE.npz.")
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_call_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE.npz", help="the snapshot to write")
    parser.add_argument("--force", action="store_true", help="replace an existing file")
    add_rope_arguments(parser)
    add_run_arguments(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from posenc_spec.gate import against, engine
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output.destination import emit
    from posenc_spec.gate.runner import run_target
    from posenc_spec.regression import Snapshot, SnapshotError
    from posenc_spec.regression.snapshot import snapshot_meta, write_snapshot

    try:
        declaration = declare({"target": args.target, **declaration_flags(args)}, flags=True)
        options = run_options_of(args)
        if Path(args.out).exists() and not args.force:
            raise UsageError(f"--out {args.out} exists (give --force to replace it)")
        requests = against.snapshot_requests(engine.probes(declaration))
        turn = run_target(declaration, requests, options)
    except UsageError as problem:
        return error("snapshot", problem)
    if not turn.imported:
        return error("snapshot", f"cannot import {args.target}: {turn.import_message}")
    calls = tuple(against.record(request, outcome) for request, outcome in zip(requests, turn.outcomes, strict=True))
    meta = snapshot_meta(declaration.name, declaration.api, max_positions=declaration.max_positions,
                         t_max=declaration.t_max, declaration=declaration.as_dict())
    try:
        path = write_snapshot(args.out, Snapshot(meta, calls), force=args.force)
    except SnapshotError as problem:
        return error("snapshot", problem)
    raised = sum(call.raised is not None for call in calls)
    size = path.stat().st_size
    emit(f"{declaration.name}: {len(calls)} calls recorded ({raised} raised) in {path} ({size / 2**20:.2f} MiB)")
    return 0
