"""``posenc-spec plot TARGET``: pictures of what a target returns and of where it is wrong.

::

    posenc-spec plot TARGET [--api API] [the family's flags] [--num-positions N] [--dim D] --out DIR
    posenc-spec plot TARGET --against FILE.npz [--max-ulp N] [--out FILE.png]

With a declaration: the target's family (:meth:`posenc_spec.gate.family.Family.plot`,
``posenc_spec/families/<name>/plot.py``) makes the calls it draws and writes its PNGs into
DIR, each difference taken from the declared convention's values element by element
against their tolerance: for tables and timesteps ``heatmap.png``, ``row_profiles.png``,
``similarity.png`` and ``difference.png`` of one call (``--num-positions``, ``--dim``); for
rotary embeddings ``difference_*.png`` of the call furthest out of its bound.

Regression (``--against``): replays the snapshot's calls (``posenc-spec snapshot``), compares
each with its record in ULPs (:func:`posenc_spec.regression.compare.compare_call`) and
draws :func:`~posenc_spec.figures.regression.ulp_figure` of the output that moved furthest
into FILE.png (default: the snapshot's path with ``.png``; an existing folder, or a path
ending in ``/``: the snapshot's name with ``.png`` in it). Outputs of more than two axes are
drawn with their leading axes as rows.

Where the pictures go is checked and held before the target runs
(:mod:`posenc_spec.gate.output.destination`): DIR, or the nearest folder above it (the
missing ones are made at the first picture), or FILE.png's folder; each picture is written
atomically, never through a symlink and never into a FIFO that a target left there.

The flags and ``--timeout`` are ``check``'s, validated by the same code (:func:`~posenc_spec.gate.declaration.declare`).
The target runs in a sealed child (:mod:`posenc_spec.gate.runner`): a target that raises,
exits, crashes or hangs past the timeout gives a one-line reason, never a traceback.

Exit status: 0 pictures written (whether or not the target conforms; the summary line
says), 1 the target gave nothing to draw (every call raised, exited, crashed, hung or
returned something unreadable), 2 usage error (a missing or tampered snapshot, an ``--out``
that is not a folder or cannot be written, among them) or TARGET cannot be imported, 3 the
summary was printed but a picture could not be written at the end (one line says why).

Registering the subcommand imports neither matplotlib nor torch; ``plot`` imports them
when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from .arguments import (
    OUTPUT_STATUS,
    add_against_arguments,
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
    """Add ``plot`` to the ``posenc-spec`` subcommands."""
    parser = subparsers.add_parser(
        "plot",
        help="write PNGs of a target's results and where they differ from the expected ones",
        description="PNGs of TARGET's results beside the declared convention's in DIR, as its family draws them "
                    "(tables: heatmap, row profiles, similarity and difference of one call; rotary embeddings: "
                    "the difference of the call furthest out of bound). --against FILE.npz: the ULP distances "
                    "of the output that moved furthest from the snapshot. The flags are check's.",
        usage="%(prog)s TARGET [options]", epilog=families_text(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_declaration_arguments(parser)
    add_against_arguments(parser)
    add_run_arguments(parser)
    parser.add_argument("--num-positions", default=None, metavar="N",
                        help="rows of the call drawn, for the families whose plot takes it (tables: positions or "
                             "timesteps; default 300)")
    parser.add_argument("--dim", default=None, metavar="D",
                        help="width of the call drawn, for the families whose plot takes it (tables: default 512)")
    parser.add_argument("--out", default=None, metavar="DIR|FILE.png",
                        help="folder for the PNGs (created); with --against the PNG to write (its folder must "
                             "exist; default: the snapshot's path with .png), or a folder for it (one that exists, "
                             "or DIR/, created). Checked before TARGET runs")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.sandbox import check_preload

    try:
        declaration = declare({"target": args.target, **declaration_flags(args)}, flags=True)
        options = run_options_of(args)
        check_preload(options.preload)
        sized = next((name for name, value in (("num_positions", args.num_positions), ("dim", args.dim))
                      if value is not None), None)
        if sized and (declaration.against is not None or sized not in declaration.family.plot_sizes):
            other = "--against" if declaration.against is not None else f"--api {declaration.api}"
            raise UsageError(f"--{sized.replace('_', '-')} sizes a table; it does not apply to {other}")
        if declaration.against is None and args.out is None:
            raise UsageError("--out DIR is required: the folder for the PNGs")
        if declaration.against is not None and declaration.formula:
            raise UsageError("--against draws the ULP distances alone: drop the family's declaration flags")
        if declaration.against is not None and args.out is not None and not os.path.isdir(args.out):
            refuse_overwriting([("--out", args.out)], files_read([declaration], None))
        out = _open_out(args.out, declaration.against_path if declaration.against is not None else None)
    except UsageError as problem:  # a bad snapshot among them (declare reads it)
        return error("plot", problem)
    with contextlib.closing(out):
        if declaration.against is not None:
            return _against(args, declaration, options, out)
        return _family(args, declaration, options, out)


def _open_out(value: str | None, snapshot: str | None):
    """Where the pictures go, checked and held before the target runs: the folder DIR of a
    table's or a RoPE target's pictures; with ``--against`` (``snapshot`` its path), the PNG
    file, or the folder that holds it (one that exists, or a path ending in ``/``)."""
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.output.destination import open_destination, open_folder

    if value == "-":
        raise UsageError("--out -: the pictures are PNG files, not standard output")
    if snapshot is None or (value is not None and (value.endswith(("/", os.sep)) or os.path.isdir(value))):
        return open_folder("--out", value)
    return open_destination("--out", value or str(Path(snapshot).with_suffix(".png")), "the picture")


def _nothing_to_draw(what: str, problem: str) -> int:
    from posenc_spec.gate.output.destination import emit

    emit(f"posenc-spec plot: {what} gave nothing to draw: {problem}", sys.stderr)
    return 1


def _written(out, title: str, verdict: str, pictures: dict, *notes: str) -> int:
    """Write ``pictures`` (``name -> (file name, figure)``) into ``out`` and print the
    summary: ``title: verdict``, the notes and each picture's path; exit 0, or
    :data:`OUTPUT_STATUS` after one line on stderr when one could not be written."""
    from posenc_spec.figures.style import png_bytes
    from posenc_spec.gate.output.destination import Folder, Unwritten, emit

    paths = {}
    try:
        for name, (file, figure) in pictures.items():
            data = png_bytes(figure)
            if isinstance(out, Folder):
                paths[name] = out.write(None, file, data)
            else:  # the one file --against names
                out.write(data)
                paths[name] = out.value
    except Unwritten as problem:
        emit([f"{title}: {verdict}", *(f"  {note}" for note in notes)])
        error("plot", problem)
        return OUTPUT_STATUS
    emit([f"{title}: {verdict}", *(f"  {note}" for note in notes),
          *(f"  {name}: {path}" for name, path in paths.items())])
    return 0


# -- a family's pictures ----------------------------------------------------------------------


def _family(args, declaration, options, out) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.family import NothingToDraw

    sizes = {"num_positions": args.num_positions, "dim": args.dim}
    try:
        drawing = declaration.family.plot(declaration, sizes, options)
    except UsageError as problem:
        return error("plot", problem)
    except NothingToDraw as nothing:
        return _nothing_to_draw(nothing.what, nothing.problem)
    return _written(out, drawing.title, drawing.verdict, drawing.pictures, *drawing.notes)


# -- regression ------------------------------------------------------------------------------


def _against(args, declaration, options, out) -> int:
    from posenc_spec.gate import against
    from posenc_spec.gate.runner import run_target
    from posenc_spec.regression import SnapshotError
    from posenc_spec.regression.ulp import ulp_distance

    snapshot, max_ulp = declaration.against, declaration.max_ulp
    requests = against.replay_requests(snapshot)
    turn = run_target(declaration, requests, options)
    if not turn.imported:
        return error("plot", f"cannot import TARGET {args.target}: {turn.import_message}")
    diffs, worst = [], None
    try:
        for call, replayed, diff in against.replay_diffs(snapshot, requests, turn.outcomes, max_ulp):
            diffs.append(diff)
            for output in diff.outputs if not (diff.problem or diff.raised) else ():
                if output.problem is None and (worst is None or output.max_ulp > worst[0].max_ulp):
                    worst = (output, call, replayed)
    except SnapshotError as problem:  # a fault of the replay
        return error("plot", problem)
    if worst is None:
        first = next((diff.describe() for diff in diffs), "the snapshot records no call")
        return _nothing_to_draw(f"{declaration.name} against {declaration.against_path}",
                                f"no output returned both times with one shape and dtype; first {first}")
    output, call, replayed = worst
    old, new = call.outputs[output.position], replayed.outputs[output.position]
    distances = ulp_distance(old.values, new.values, old.dtype)
    distances = distances.reshape(-1, distances.shape[-1]) if distances.ndim > 2 else distances.reshape(
        distances.shape or (1,))
    which = f" output {output.position}" if len(call.outputs) > 1 else ""

    from posenc_spec.figures.regression import ulp_figure  # matplotlib: only now

    title = f"{declaration.name} at {call.label}{which}, {old.dtype}"
    figure = ulp_figure(distances, title=title, dtype=old.dtype)
    verdict = f"{against.calls_within(diffs, max_ulp)}; worst {call.label}{which} ({old.dtype}): {output.describe()}"
    return _written(out, f"{declaration.name} against {declaration.against_path}", verdict,
                    {"ulp": (f"{Path(declaration.against_path).stem}.png", figure)})
