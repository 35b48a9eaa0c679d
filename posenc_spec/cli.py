"""``posenc-spec``: check, merge, identify, init, plot, snapshot, diff and keys from the command line.

Each subcommand lives in :mod:`posenc_spec.commands`; this module only wires them.
"""

from __future__ import annotations

import os
import sys

from posenc_spec import __version__


def build_parser():
    from posenc_spec.commands import check, diff, identify, init, keys, plot, snapshot
    from posenc_spec.commands.arguments import Parser

    parser = Parser(prog="posenc-spec", description="Verify position encodings against a declared convention.")
    parser.add_argument("--version", action="version", version=f"posenc-spec {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    check.register(subparsers)
    identify.register(subparsers)
    init.register(subparsers)
    plot.register(subparsers)
    snapshot.register(subparsers)
    diff.register(subparsers)
    keys.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    # The gate never reaches the network: set before anything imports transformers.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    from posenc_spec.commands.arguments import internal_error

    args = build_parser().parse_args(argv)
    _notes_as_lines(args.command)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        from posenc_spec.gate.output.destination import emit

        emit(f"posenc-spec {args.command}: interrupted", sys.stderr)
        return 130
    except Exception as problem:  # a fault of ours: one line, never a traceback
        return internal_error(args.command, problem)


def _notes_as_lines(command: str) -> None:
    """A key given by its former name (a :class:`~posenc_spec.gate.keys.RenamedKey` warning)
    is said as one line on stderr, ``posenc-spec check: note: --grid-base is now --base``;
    other warnings as Python shows them."""
    import warnings

    from posenc_spec.gate.keys import RenamedKey

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, RenamedKey):
            from posenc_spec.gate.output.destination import emit

            emit(f"posenc-spec {command}: note: {message}", sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def console_main() -> int:
    """``posenc-spec`` as a program of its own: as :func:`main`, in a process that no other
    process of the same user can trace or read through ``/proc`` (a target's code runs as
    the same user when the gate is not root), and that kills whatever is left below it at
    exit (a subreaper: :func:`~posenc_spec.gate.sandbox.guard_descendants`). The pytest
    plugin and the Python API leave the process they run in as it is."""
    from posenc_spec.gate.child.limits import not_dumpable
    from posenc_spec.gate.sandbox import guard_descendants

    not_dumpable()
    guard_descendants()
    return main()


if __name__ == "__main__":
    sys.exit(console_main())
