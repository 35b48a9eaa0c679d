"""``posenc-spec identify TARGET``: which member of the family a target computes.

The answer is fitted on a few calls, checked on sizes it was not fitted on, then judged by
``check`` on its whole grid: what ``identify`` names, ``check`` accepts. With a declaration
(the declaration flags, else the target's entry in the nearest ``[tool.posenc-spec]``) the
answer says how it differs from it. ``posenc-spec init`` (:mod:`.init`) shares the flags and
the run (:func:`add_identify_arguments`, :func:`identify`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass

from posenc_spec import registry
from posenc_spec.gate.keys import ALIASES, FAMILY_KEYS, flag

from .arguments import (
    OUTPUT_STATUS,
    add_call_arguments,
    add_key_flags,
    add_run_arguments,
    error,
    families_text,
    open_outputs,
    run_options_of,
    write_output,
)

EPILOG = """\
exit status: 0 identified; 1 no member of the family fits, or check rejects the one that
fits the fitted tables (the answer is "none", with the nearest convention, its max
error/tolerance ratio, and the first check that fails); 2 usage error, or a TARGET that
cannot be imported; 3 the --json file could not be written at the end.

Each family names what its calls determine (tables: the preset or the fields; rotary
embeddings: the layout, theta, the rotary size, the rotated features and the scaling type
with its parameters).

The family's keys that say how a target is called (posenc-spec keys FAMILY marks them)
are read to call it; with its other keys (a declaration), else with the TARGET's entry in
the nearest pyproject.toml's [tool.posenc-spec], the answer says how it differs from them.
"""


def _declared_keys(names) -> tuple[str, ...]:
    """A family's keys the answer is compared with: those identify does not read to call."""
    return tuple(key for key in names.keys if key not in names.identify_keys)


def add_identify_arguments(parser: argparse.ArgumentParser) -> None:
    """TARGET and the flags of ``identify`` (``init`` takes the same): how the target is
    called, and every family's keys (``posenc-spec keys FAMILY`` lists them and marks those
    identify reads to call; the others declare what the answer is compared with)."""
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_call_arguments(parser)
    add_key_flags(parser, FAMILY_KEYS)
    add_run_arguments(parser)


def add_command(subparsers, name: str, run_command, **texts) -> argparse.ArgumentParser:
    """A command that takes ``identify``'s TARGET and flags (``texts``: its help, description
    and epilog, which the families' lines end), run by ``run_command``."""
    texts["epilog"] = f"{texts.get('epilog', '')}\n{families_text()}\n"
    parser = subparsers.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter,
                                   usage="%(prog)s TARGET [options]", **texts)
    add_identify_arguments(parser)
    parser.set_defaults(run=run_command)
    return parser


def register(subparsers) -> None:
    parser = add_command(subparsers, "identify", run, help="find which convention a target computes", epilog=EPILOG,
                         description="Find the layout, first function, shift, base, offset, scale and odd-width "
                                     "behaviour of a target from its tables; the answer is checked on sizes it was "
                                     "not fitted on, then by check on its whole grid.")
    parser.add_argument("--json", metavar="FILE", help="write the answer as JSON (- for standard output)")


@dataclass
class Request:
    """What ``identify`` was asked: the call's declaration (the keys a call is made with), the
    family's request (:class:`~posenc_spec.gate.family.Identification`), the declaration to
    compare with (and where it came from), and the run's options."""

    call: object
    asked: object = None
    compared: object = None
    source: str = ""
    options: object = None


def call_keys(names) -> tuple[str, ...]:
    """The keys ``identify`` and ``init`` read to call a target of ``names``' family: every
    key of how any target is called (:data:`~posenc_spec.gate.keys.CALLING_KEYS`), and the
    family's own (its ``identify_keys``), as ``check`` takes them."""
    from posenc_spec.gate.keys import CALLING_KEYS

    return tuple(dict.fromkeys((*CALLING_KEYS, *names.identify_keys)))


def request_of(args) -> Request:
    """The request the flags make, every flag validated (UsageError before any call).

    The call's declaration holds every key of how the target is called that was given, as
    ``check`` reads them, so that what ``identify`` and ``init`` take is what ``check`` takes;
    ``strict`` is the flag's, else the compared entry's (identify's acceptance check is the
    user's own)."""
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.sandbox import check_preload

    api = declare({"target": args.target, "api": args.api}, flags=True).api
    own = registry.names_of_api(api)
    _read_former_names(args, own)
    reads = call_keys(own)
    for names in registry.names():
        given = [key for key in names.identify_keys if names is not own and getattr(args, key, None) is not None
                 and key not in reads]
        owners = (registry.owners_of_key(given[0]) or (names,)) if given else ()
        if given and own not in owners:  # a key the family shares (base) is its own family's too
            raise UsageError(f"{flag(given[0])} describes {registry.nouns(owners)}: give --api "
                             f"{registry.apis_of(owners)}")
    flags = {key: getattr(args, key) for key in reads if getattr(args, key, None) is not None}
    run = {"target": args.target, "api": api, "t_max": args.t_max, "max_positions": args.max_positions,
           "timeout": args.timeout}
    try:
        call = declare({**run, **flags, "strict": args.strict}, flags=True)
    except UsageError:  # a call the family's default member cannot be declared with (ALiBi's one-row mask
        # signature needs a key-only form): the family's request validates those keys itself
        call = declare({**run, "strict": args.strict}, flags=True)
    if args.t_max is not None:
        flags["t_max"] = args.t_max
    request = Request(call, call.family.identify_request(flags, call), options=run_options_of(args))
    request.compared, request.source = _compared(args, call, request.asked)
    if request.compared is not None and request.compared.strict and not call.strict:
        request.call = dataclasses.replace(call, strict=True)
        request.asked = call.family.identify_request(flags, request.call)
    check_preload(request.options.preload)
    return request


def _read_former_names(args, own) -> None:
    """The flags given by a key's former name, set as the key (with the note :func:`renamed`
    gives); the former name of another family's key is refused as that family's key is."""
    from posenc_spec.gate.declaration import renamed
    from posenc_spec.gate.errors import UsageError

    given = {key: getattr(args, key) for key in (*FAMILY_KEYS, *ALIASES) if getattr(args, key, None) is not None}
    for key, value in renamed(given, own, flags=True).items():
        if key in ALIASES:
            owners = registry.owners_of_key(key)
            raise UsageError(f"{flag(key)} describes {registry.nouns(owners)}: give --api {registry.apis_of(owners)}")
        setattr(args, key, value)


def _compared(args, call, asked):
    """``(declaration, where it came from)`` the answer is compared with, or ``(None, "")``."""
    from posenc_spec.gate.config import find_pyproject, read_config
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError

    own = registry.names_of_api(call.api).identify_keys  # read to call, whichever family shares their name
    given = {key: getattr(args, key) for names in registry.names() for key in _declared_keys(names)
             if getattr(args, key, None) is not None and key not in own}
    if given:
        return declare({"target": args.target, "api": call.api, **asked.compared_keys(given)}, flags=True), "the flags"
    try:
        search = find_pyproject()
        declarations = read_config(search.found) if search.found is not None else []
    except UsageError as problem:  # say it, and answer: a table without targets yet is init's to fill
        return None, f"not compared with a declaration ({problem})"
    for declaration in declarations:
        if declaration.target == call.target and declaration.api == call.api and declaration.formula:
            return declaration, str(search.found)
    return None, ""


def identify(request: Request) -> dict:
    """The answer (see the module docstring), compared with the request's declaration.
    IdentifyError when the target cannot be imported."""
    from posenc_spec.gate.identify import with_slip

    call = request.call
    result = request.asked.run(request.options)
    result["target"] = call.name
    if result["convention"] is not None:
        result = with_slip(result, request.asked.slip(result, request.compared))
    if request.compared is not None:
        result = _with_differences(result, request)
    elif request.source:
        result = {**result, "message": f"{result['message']}; {request.source}"}
    return result


def _with_differences(result: dict, request: Request) -> dict:
    """The answer with ``declared``: where the declaration came from and how the answer (or,
    for "none", its nearest) differs from it, also said at the end of the message."""
    answer = result["convention"] or (result.get("nearest") or {}).get("convention")
    if answer is None:
        return result
    words = request.asked.differences(answer, request.compared)
    what = "the answer" if result["convention"] is not None else "the nearest"
    said = "; ".join(words) if words else "as declared"
    return {**result, "declared": {"source": request.source, "differences": words},
            "message": f"{result['message']}; {what} against the declaration in {request.source}: {said}"}


def run(args) -> int:
    import contextlib

    with contextlib.ExitStack() as held:  # the --json destination, open from start to end
        return _run(args, held)


def _sources(target: str) -> list[tuple[str, str]]:
    """The target's source files, which no report may replace."""
    from posenc_spec.gate.sources import source_files

    return [(str(path), f"a source file of {target}") for path in source_files(target)]


def _run(args, held) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.identify import IdentifyError
    from posenc_spec.gate.output import destination, json_report

    try:
        request = request_of(args)
        json_out, = open_outputs(held, ("--json", args.json), reads=_sources(args.target))
        result = identify(request)
    except UsageError as problem:
        return error("identify", problem)
    except IdentifyError as problem:
        return error("identify", f"cannot import {args.target}: {problem}")
    result["target"] = args.target
    destination.emit(f"{args.target}: {result['message']}", sys.stderr if args.json == "-" else sys.stdout)
    if args.json is not None:
        if not write_output("identify", json_out, json_report.to_text(result)):
            return OUTPUT_STATUS
    return 0 if result["convention"] is not None else 1
