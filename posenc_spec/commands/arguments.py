"""The flags the subcommands share, and a parser whose errors take one line.

Declaration flags arrive as text and are validated by
:func:`posenc_spec.gate.declaration.declare`, exactly as the same keys from a TOML file
are; argparse only collects them.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from posenc_spec.gate.declaration import CONVENTION_KEYS, flag

USAGE_STATUS = 2


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, with a close match for a typo, and
    which never guesses an option from its prefix."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        if "unrecognized arguments:" in message:
            unknown = message.split(":", 1)[1].split()
            options = self._all_options()
            for word in unknown:
                if word.startswith("-"):
                    close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1)
                    if close:
                        message += f" (did you mean {close[0]}?)"
                        break
        self.exit(USAGE_STATUS, f"{self.prog}: error: {message} (--help for usage)\n")

    def _all_options(self) -> list[str]:
        """Every option of this parser and of its subcommands (unknown options of a
        subcommand are reported by the top-level parser)."""
        options = []
        for action in self._actions:
            options += action.option_strings
            for parser in getattr(action, "choices", None) or {}:
                if isinstance(action.choices, dict) and isinstance(action.choices[parser], Parser):
                    options += action.choices[parser]._all_options()
        return options


def add_declaration_arguments(parser: argparse.ArgumentParser, api_choices=None) -> None:
    """The flags that declare a target's convention, API and grid (all default None)."""
    text = {"metavar": "VALUE", "default": None}
    parser.add_argument("--convention", metavar="NAME", default=None,
                        help="the declared preset: vaswani, concat, tensor2tensor, fairseq, guided-diffusion "
                             "(default vaswani)")
    helps = {"layout": "interleaved or concat", "first": "sin or cos", "freq_shift": "0 or 1",
             "base": "the base (> 1)", "offset": "the position of row 0", "scale": "the scale of the argument"}
    for key in CONVENTION_KEYS:
        parser.add_argument(flag(key), dest=key, help=f"override the preset's {key}: {helps[key]}", **text)
    parser.add_argument("--odd", **text, help="odd widths: error (expect an exception; default), zero-pad, ceil, "
                                             "or skip (test none)")
    parser.add_argument("--api", **text, help="table: fn(num_positions, dim) (default); timesteps: fn(timesteps, dim)")
    parser.add_argument("--t-max", dest="t_max", **text, help="largest timestep for the timesteps API (default 1000)")
    parser.add_argument("--max-positions", dest="max_positions", **text,
                        help="cap every length of the grid (a model's longest sequence)")
    parser.add_argument("--timeout", **text, help="seconds for the import and for each call (default 60)")


def add_against_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--against", metavar="FILE.npz", default=None,
                        help="replay the calls of a snapshot (posenc-spec snapshot) and compare in ULPs; without "
                             "convention flags only this regression check runs")
    parser.add_argument("--max-ulp", dest="max_ulp", metavar="N", default=None,
                        help="the largest ULP distance --against allows (default 0: bit for bit)")


def declaration_flags(args: argparse.Namespace) -> dict:
    keys = ("convention", *CONVENTION_KEYS, "odd", "api", "t_max", "max_positions", "timeout", "against", "max_ulp")
    return {key: getattr(args, key, None) for key in keys}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-j", "--jobs", default=None, metavar="N",
                        help="targets checked at once (default: the usable cores)")
    parser.add_argument("--max-memory", dest="max_memory", default=None, metavar="SIZE",
                        help="address space each target's process may add (e.g. 4GiB; default: half the "
                             "machine's memory shared by the jobs)")
    parser.add_argument("--max-processes", dest="max_processes", default=None, metavar="N",
                        help="processes a target may start (default 64)")


def error(command: str, message) -> int:
    """Say a usage error in one line on stderr; the usage exit status."""
    from posenc_spec.gate.output.destination import emit

    emit(f"posenc-spec {command}: error: {message}\n", sys.stderr)
    return USAGE_STATUS


def internal_error(command: str, problem: BaseException) -> int:
    """A fault of posenc-spec itself, in one line (the traceback with POSENC_SPEC_DEBUG=1)."""
    import os
    import traceback

    if os.environ.get("POSENC_SPEC_DEBUG"):
        traceback.print_exc()
    return error(command, f"internal error: {type(problem).__name__}: {problem} (POSENC_SPEC_DEBUG=1 shows the "
                          "traceback; please report it)")
