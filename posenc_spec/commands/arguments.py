"""The flags the subcommands share, and a parser whose errors take one line.

Declaration flags arrive as text and are validated by
:func:`posenc_spec.gate.declaration.declare`, exactly as the same keys from a TOML file
are; argparse only collects them.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import stat
import sys

from posenc_spec import registry
from posenc_spec.gate.keys import (
    ALIASES,
    APIS,
    DECLARATION_KEYS,
    DEFAULT_T_MAX,
    DEFAULT_TIMEOUT,
    FAMILY_KEYS,
    REPEATED,
    flag,
)

USAGE_STATUS = 2
OUTPUT_STATUS = 3  # the work was done, but a report, picture or snapshot could not be written at the end


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, with a close match for a typo, and
    which never guesses an option from its prefix."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        self._words = list(sys.argv[1:] if args is None else args)
        return super().parse_args(args, namespace)

    def error(self, message: str):
        if "unrecognized arguments:" in message:
            unknown = message.split(":", 1)[1].split()
            options = self._options_of_command(getattr(self, "_words", []))
            for word in unknown:
                if word.startswith("-"):
                    close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1)
                    if close:
                        message += f" (did you mean {close[0]}?)"
                        break
        from posenc_spec.gate.output.destination import emit

        emit(f"{self.prog}: error: {message} (--help for usage)", sys.stderr)  # the words are the user's
        self.exit(USAGE_STATUS)

    def _options_of_command(self, words: list[str]) -> list[str]:
        """The options of the subcommand named in ``words`` (its unknown options are reported by
        the top-level parser), else of this parser."""
        for action in self._actions:
            if isinstance(action.choices, dict):
                for word in words:
                    if isinstance(action.choices.get(word), Parser):
                        return action.choices[word]._options_of_command([])
        return [option for action in self._actions for option in action.option_strings]


def add_declaration_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that declare a target: how it is called, and every family's keys (all default
    None); ``--help`` lists the families, ``posenc-spec keys FAMILY`` each one's keys."""
    add_call_arguments(parser)
    add_key_flags(parser, FAMILY_KEYS)


def add_key_flags(parser: argparse.ArgumentParser, keys) -> None:
    """A flag for each of ``keys`` not yet a flag of ``parser``, and for each former name of a
    key (read as the key, with a note): none listed in ``--help``, whose one line per family
    says where they are (:func:`families_text`)."""
    taken = {option for action in parser._actions for option in action.option_strings}
    for key in (*keys, *(old for old, new in ALIASES.items() if new in keys)):
        if flag(key) not in taken:
            taken.add(flag(key))
            parser.add_argument(flag(key), dest=key, default=None, help=argparse.SUPPRESS,
                                action="append" if key in REPEATED else "store")


def families_text() -> str:
    """One line per family for ``--help``: its name, its APIs, what it checks."""
    lines = ["families (--api API; posenc-spec keys FAMILY lists a family's keys, signatures and check ids):"]
    for names in registry.names():
        lines.append(f"  {names.name:<11} {', '.join(names.apis):<43} {names.title.split(' (')[0]}")
    return "\n".join(lines)


def _config_flags() -> str:
    return " or ".join(dict.fromkeys(flag(names.config_key) for names in registry.names() if names.config_key))


def add_call_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that say how a target is called: its API, the timesteps, the lengths and the
    time it gets (all default None)."""
    parser.add_argument("--api", metavar="API", default=None,
                        help=f"the target's API, naming its family (default {APIS[0]})")
    parser.add_argument("--t-max", dest="t_max", metavar="T", default=None,
                        help=f"largest timestep of the timesteps API (default {DEFAULT_T_MAX:g})")
    parser.add_argument("--max-positions", dest="max_positions", metavar="N", default=None,
                        help="every position the grid hands stays below N")
    parser.add_argument("--timeout", metavar="SECONDS", default=None,
                        help=f"the target's seconds per import and call (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--strict", action="store_const", const=True, default=None,
                        help="fail on notes too (inputs no use produces)")
    parser.add_argument("--call", metavar="CALL", default=None,
                        help="the target's call as written, with roles: 'fn(head_dim, num_positions)'")
    parser.add_argument("--signature", metavar="NAME", default=None,
                        help="how the target is called, if not in its API's form")
    parser.add_argument("--init", metavar="KEY=VALUE", action="append", default=None,
                        help="build an object of class TARGET first (repeatable; {head_dim} ... stand for the "
                             f"call's sizes), or --init config from {_config_flags()}")
    parser.add_argument("--method", metavar="NAME", default=None,
                        help="the method to call on the object --init builds")
    parser.add_argument("--kwarg", dest="kwargs", metavar="KEY=VALUE", action="append", default=None,
                        help="a keyword argument for every call (repeatable)")
    parser.add_argument("--x-layout", dest="x_layout", metavar="LAYOUT", default=None,
                        help="how the x the target takes is laid out")
    parser.add_argument("--framework", metavar="NAME", default=None,
                        help="numpy, torch, jax, tensorflow or keras (default: read from the target's module)")
    parser.add_argument("--keras-backend", dest="keras_backend", metavar="NAME", default=None,
                        help="the backend a keras target runs on")


def add_against_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--against", metavar="FILE.npz", default=None,
                        help="replay a snapshot's calls and compare the outputs")
    parser.add_argument("--max-ulp", dest="max_ulp", metavar="N", default=None,
                        help="the largest ULP distance --against allows")


def declaration_flags(args: argparse.Namespace) -> dict:
    """The declaration keys the command's flags give, former names as given (None where a flag
    is absent or not offered)."""
    return {key: getattr(args, key, None) for key in (*DECLARATION_KEYS, *ALIASES)}


def add_run_arguments(parser: argparse.ArgumentParser, jobs: bool = False) -> None:
    """The limits of each target's process; ``jobs``: also ``-j`` (only where several targets run)."""
    if jobs:
        parser.add_argument("-j", "--jobs", default=None, metavar="N",
                            help="targets checked at once (default: the usable cores)")
    parser.add_argument("--max-memory", dest="max_memory", default=None, metavar="SIZE",
                        help="memory a target may add, such as 4GiB")
    parser.add_argument("--max-processes", dest="max_processes", default=None, metavar="N",
                        help="processes and threads a target may start")
    parser.add_argument("--max-file-size", dest="max_file_size", default=None, metavar="SIZE",
                        help="the largest file a target may write (default 256MiB)")
    parser.add_argument("--preload", action="append", default=None, metavar="MODULE[,...]",
                        help="trusted modules imported once, before any target")

def run_options_of(args: argparse.Namespace, **more):
    """The run's options from the flags of :func:`add_run_arguments` (``-j`` and ``--shard``
    where the command has them; one lane where it has not), and ``more``."""
    from posenc_spec.gate.options import run_options

    return run_options(getattr(args, "jobs", 1), getattr(args, "shard", None), args.max_memory, args.max_processes,
                       preload=args.preload, max_file_size=args.max_file_size, **more)


def open_outputs(held: contextlib.ExitStack, *options: tuple[str, str | None], reads=()) -> list:
    """Before any work: the file of each ``(flag, path)`` opened for writing
    (:func:`~posenc_spec.gate.output.destination.open_destination`; ``-`` is standard output,
    None where the path is None), each closed when ``held`` closes;
    :class:`~posenc_spec.gate.errors.UsageError` for the first that cannot be, for two
    flags that name one file (one report would replace the other), and for a flag that names
    a file of ``reads`` (``(path, what it is)``: a file the command reads, such as a target's
    source, which the report would replace)."""
    from posenc_spec.gate.output import destination

    refuse_overwriting([(option, path) for option, path in options if path not in (None, "-")], reads)
    return [None if path is None else held.enter_context(contextlib.closing(destination.open_destination(option, path)))
            for option, path in options]


def files_read(declarations, config: str | None) -> list[tuple[str, str]]:
    """The files a run reads, each with what it is: no report may replace one."""
    from posenc_spec.gate.config import BUILT_IN
    from posenc_spec.gate.sources import source_files

    files = [] if config in (None, BUILT_IN) else [(config, "the configuration file")]
    for declaration in declarations:
        files += [(str(path), f"a source file of {declaration.name}")
                  for path in source_files(declaration.target, declaration.search_path)]
        if declaration.xfails.path:
            files.append((declaration.xfails.path, f"the xfails file of {declaration.name}"))
        if declaration.against_path:
            files.append((declaration.against_path, f"the snapshot {declaration.name} is checked against"))
    return files


def _file_identity(path) -> tuple | None:
    """What ``path`` names, for telling whether two paths name one file: a regular file's
    device and inode (through symlinks, as a destination follows them), a name not there
    yet by its absolute path; None for anything else (a device, a FIFO, a folder: two flags
    may share ``/dev/null``)."""
    try:
        info = os.stat(path)
    except OSError:
        return ("name", os.path.realpath(path))
    return ("file", info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def refuse_overwriting(outputs: list[tuple[str, str]], reads) -> None:
    """:class:`~posenc_spec.gate.errors.UsageError` for two ``(flag, path)`` of ``outputs``
    that name one file, or one that names a file of ``reads`` (``(path, what it is)``)."""
    from posenc_spec.gate.errors import UsageError

    read = {}
    for path, what in reads:
        identity = _file_identity(path)
        if identity is not None and identity[0] == "file":
            read.setdefault(identity, what)
    written = {}
    for option, path in outputs:
        identity = _file_identity(path)
        if identity is None:
            continue
        if identity in read:
            raise UsageError(f"{option} {path} is {read[identity]}: writing there would replace it")
        if identity in written:
            raise UsageError(f"{written[identity]} and {option} name one file, {path}: one report would replace the "
                             "other")
        written[identity] = option


def write_output(command: str, out, text: str) -> bool:
    """Write ``text`` to ``out`` (from :func:`open_outputs`): True, or False after one line
    on stderr saying why it was not written."""
    try:
        out.write(text)
    except OSError as problem:
        error(command, problem.strerror or problem)
        return False
    return True


def error(command: str, message) -> int:
    """Say a usage error in one line on stderr; the usage exit status."""
    from posenc_spec.gate.output.destination import emit

    emit(f"posenc-spec {command}: error: {message}", sys.stderr)
    return USAGE_STATUS


def internal_error(command: str, problem: BaseException) -> int:
    """A fault of posenc-spec itself, in one line (the traceback with POSENC_SPEC_DEBUG=1)."""
    import os
    import traceback

    if os.environ.get("POSENC_SPEC_DEBUG"):
        traceback.print_exc()
    return error(command, f"internal error: {type(problem).__name__}: {problem} (POSENC_SPEC_DEBUG=1 shows the "
                          "traceback; please report it)")
