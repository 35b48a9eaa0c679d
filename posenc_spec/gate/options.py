"""The command-line flags that declare a convention, shared by ``check`` and ``plot``.

:func:`add_convention_arguments` adds ``--convention``, ``--layout``, ``--first``,
``--freq-shift``, ``--base``, ``--offset``, ``--scale``, ``--odd``, ``--api`` and
``--t-max``; :func:`add_timeout_argument` adds ``--timeout``. Every flag defaults to None
(absent), so that a flag given on the command line overrides a config file's key and an
absent one leaves the defaults of :func:`posenc_spec.gate.config.make_spec` in force;
:func:`convention_flags` collects the parsed values under the keys ``make_spec`` takes,
which turns them into a convention and a :class:`~posenc_spec.gate.engine.GateSpec`.
"""

from __future__ import annotations

import argparse

from posenc_spec.conventions import FUNCTIONS, LAYOUTS, PRESETS

from .config import ODD_CHOICES
from .engine import APIS, DEFAULT_TIMEOUT

# The make_spec keys (and argparse dests) of the flags add_convention_arguments adds.
CONVENTION_FLAGS = ("convention", "layout", "first", "freq_shift", "base", "offset", "scale", "odd", "api", "t_max")


def number(text: str):
    """An int when the text is one, else a float (``--offset 2`` stays 2, not 2.0)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_number(text: str):
    value = number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def add_convention_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that declare the convention, the API and the largest timestep."""
    parser.add_argument("--convention", choices=list(PRESETS), metavar="NAME",
                        help=f"the declared preset: {', '.join(PRESETS)} (default vaswani)")
    parser.add_argument("--layout", choices=LAYOUTS, help="override the preset's layout")
    parser.add_argument("--first", choices=FUNCTIONS, help="override the preset's first function")
    parser.add_argument("--freq-shift", dest="freq_shift", type=int, choices=(0, 1), help="override the shift")
    parser.add_argument("--base", type=number, metavar="B", help="override the base")
    parser.add_argument("--offset", type=number, metavar="N", help="override the offset (position of row 0)")
    parser.add_argument("--scale", type=number, metavar="S", help="override the scale of the argument")
    parser.add_argument("--odd", choices=ODD_CHOICES,
                        help="odd widths: error (expect an exception; default), zero-pad, ceil, or skip (test none)")
    parser.add_argument("--api", choices=APIS, help="table: fn(num_positions, dim) (default); "
                                                    "timesteps: fn(timesteps, dim)")
    parser.add_argument("--t-max", dest="t_max", type=positive_number, metavar="T",
                        help="largest timestep passed to a timesteps-API target (default 1000)")


def add_timeout_argument(parser: argparse.ArgumentParser, default: float | None = None) -> None:
    """``--timeout SECONDS``: the limit for the import and for each call of the target."""
    parser.add_argument("--timeout", type=positive_number, default=default, metavar="SECONDS",
                        help=f"limit for the import and for each call (default {DEFAULT_TIMEOUT:g})")


def convention_flags(args: argparse.Namespace) -> dict:
    """The values of :func:`add_convention_arguments`' flags, by ``make_spec`` key (None: not given)."""
    return {key: getattr(args, key) for key in CONVENTION_FLAGS}
