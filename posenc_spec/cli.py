"""``posenc-spec``: check, identify and plot sinusoidal encodings from the command line.

Each subcommand lives with the code it drives (``posenc_spec.gate.command`` for ``check``
and ``identify``, ``posenc_spec.figures.command`` for ``plot``); this module only wires them.
"""

from __future__ import annotations

import argparse
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    from posenc_spec.figures import command as figures_command
    from posenc_spec.gate import command as gate_command

    parser = argparse.ArgumentParser(
        prog="posenc-spec",
        description="Verify sinusoidal position encodings and timestep embeddings against a declared convention.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gate_command.register(subparsers)
    figures_command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    # The gate never reaches the network: set before anything imports transformers.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
