"""``posenc-spec snapshot TARGET --out FILE.npz``: record what a target returns on the grid.

The target runs in a sealed child, as ``check`` runs it, on the gate's default grid for its
API (bounded by ``--max-positions`` and ``--t-max``): every call of its family's grid once. Every output is kept in
the dtype it was produced in, with the exact inputs and the environment; a call that raises
is recorded as raising. ``check TARGET --against FILE.npz`` replays it.

``--out`` is checked and held before the target runs
(:func:`posenc_spec.gate.output.destination.open_destination`): its folder, or the nearest
one above it that exists (the missing ones are made at the end, as ``plot --out`` makes
its folder), must be writable, and an existing file needs ``--force``. The recording is written at the end
atomically into the folder held, never through a symlink or into a FIFO a target left at
that name; without ``--force`` a file made there meanwhile is left alone.

Exit status: 0 written; 2 usage error (an existing file without ``--force``, an ``--out`` that
cannot be written, among them), or a TARGET that cannot be imported; 3 the calls were made
but ``--out`` could not be written at the end (one line says why).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile

from .arguments import (
    OUTPUT_STATUS,
    add_declaration_arguments,
    add_run_arguments,
    declaration_flags,
    error,
    families_text,
    files_read,
    refuse_overwriting,
    run_options_of,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "snapshot", help="record what a target returns on the gate's grid, for check --against",
        description="Record every output of TARGET on the gate's default grid (with its exact inputs) in FILE.npz.",
        usage="%(prog)s TARGET --out FILE.npz [options]", epilog=families_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_declaration_arguments(parser)
    parser.add_argument("--out", required=True, metavar="FILE.npz",
                        help="the snapshot to write (its folder must exist; checked before the target runs)")
    parser.add_argument("--force", action="store_true", help="replace an existing file")
    add_run_arguments(parser)
    parser.set_defaults(run=run)


def _open_out(value: str, force: bool):
    """``--out`` checked and held before the target runs."""
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output.destination import open_destination

    if value == "-":
        raise UsageError("--out -: a snapshot is a file, not standard output")
    if os.path.isfile(value) and not force:
        raise UsageError(f"--out {value} exists (give --force to replace it)")
    return open_destination("--out", value, "the snapshot", replace=force, make_folders=True)


def _encoded(snapshot, shown: str) -> bytes:
    """``snapshot`` as the bytes of its ``.npz`` file, written by
    :func:`~posenc_spec.regression.snapshot.write_snapshot` into a private folder (it writes
    only to a path); :class:`~posenc_spec.regression.SnapshotError` naming the file as
    ``shown`` when it cannot be."""
    from pathlib import Path

    from posenc_spec.regression import SnapshotError
    from posenc_spec.regression.snapshot import write_snapshot

    with tempfile.TemporaryDirectory(prefix="posenc-spec-snapshot-") as folder:
        staged = os.path.join(folder, "snapshot.npz")
        try:
            return Path(write_snapshot(staged, snapshot)).read_bytes()
        except SnapshotError as problem:  # too large for a reader, say: about the user's file, not ours
            raise SnapshotError(str(problem).replace(staged, shown)) from None


def run(args) -> int:
    from posenc_spec.gate import against, engine
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output.destination import Unwritten, emit
    from posenc_spec.gate.runner import run_target
    from posenc_spec.regression import Snapshot, SnapshotError
    from posenc_spec.regression.snapshot import snapshot_meta

    with contextlib.ExitStack() as held:
        try:
            declaration = declare({"target": args.target, **declaration_flags(args)}, flags=True)
            options = run_options_of(args)
            refuse_overwriting([("--out", args.out)], files_read([declaration], None))
            out = held.enter_context(contextlib.closing(_open_out(args.out, args.force)))
            requests = against.snapshot_requests(engine.probes(declaration))
            turn = run_target(declaration, requests, options)
        except UsageError as problem:
            return error("snapshot", problem)
        if not turn.imported:
            return error("snapshot", f"cannot import {args.target}: {turn.import_message}")
        calls = tuple(against.record(request, outcome)
                      for request, outcome in zip(requests, turn.outcomes, strict=True))
        meta = snapshot_meta(declaration.name, declaration.api, max_positions=declaration.max_positions,
                             t_max=declaration.t_max, declaration=declaration.as_dict())
        try:
            data = _encoded(Snapshot(meta, calls), args.out)
        except SnapshotError as problem:
            return error("snapshot", problem)
        try:
            out.write(data)
        except Unwritten as problem:
            error("snapshot", problem)
            return OUTPUT_STATUS
    raised = sum(call.raised is not None for call in calls)
    emit(f"{declaration.name}: {len(calls)} calls recorded ({raised} raised) in {args.out} "
         f"({len(data) / 2**20:.2f} MiB)")
    return 0
