"""``posenc-spec identify TARGET``: which member of the family a target computes.

The answer is fitted on a few calls, checked on sizes it was not fitted on, then judged by
``check`` on its whole grid: what ``identify`` names, ``check`` accepts. With a declaration
(the declaration flags, else the target's entry in the nearest ``[tool.posenc-spec]``) the
answer says how it differs from it. ``posenc-spec init`` (:mod:`.init`) shares the flags and
the run (:func:`add_identify_arguments`, :func:`identify`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from posenc_spec.gate.keys import CONVENTION_KEYS, ROPE_APIS, flag

from .arguments import (
    OUTPUT_STATUS,
    ROPE_FLAGS,
    add_call_arguments,
    add_run_arguments,
    error,
    open_outputs,
    run_options_of,
    write_output,
)

EPILOG = """\
exit status: 0 identified; 1 no member of the family fits, or check rejects the one that
fits the fitted tables (the answer is "none", with the nearest convention, its max
error/tolerance ratio, and the first check that fails); 2 usage error, or a TARGET that
cannot be imported; 3 the --json file could not be written at the end.

--api rope-freqs | rope-cache | rope-apply names the layout, theta, the rotary size, the
rotated features and the scaling type with its parameters, where the calls determine them.

With a declaration (the declaration flags below, else the TARGET's entry in the nearest
pyproject.toml's [tool.posenc-spec]) the answer says how it differs from it.
"""
# The RoPE flags identify reads: how the target is called and what it returns (the rest it finds).
ROPE_CALL_FLAGS = {"head_dim": None, "rope_layout": ("rope-apply",), "cache_layout": ("rope-cache",),
                   "cache_form": ("rope-cache",), "cache_call": ("rope-cache",), "x_layout": ("rope-apply",)}
# The keys of a declaration the answer is compared with (flags of check; identify finds them).
SINUSOIDAL_DECLARED = ("convention", *CONVENTION_KEYS, "odd")
ROPE_DECLARED = ("rope_config", "rope_theta", "rope_type", "layer_type", "rope_parameters", "partial_rotary_factor",
                 "rotary_dim", "rotary_features", "attention_factor")


def add_identify_arguments(parser: argparse.ArgumentParser) -> None:
    """TARGET and the flags of ``identify`` (``init`` takes the same)."""
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_call_arguments(parser)
    group = parser.add_argument_group("rotary embeddings (--api rope-freqs | rope-cache | rope-apply)")
    for key in ROPE_CALL_FLAGS:
        metavar, text = ROPE_FLAGS[key]
        if key == "head_dim":
            text = "the model's head size: identify calls only it (default: 64 and 128)"
        elif key == "rope_layout":
            text = "rope-apply: judge under this pairing (default: the pairing the calls show)"
        elif key == "cache_layout":
            text = "rope-cache: each of cos and sin: half, interleaved or compact (default: read from the columns)"
        group.add_argument(flag(key), dest=key, metavar=metavar, default=None, help=text)
    declared = parser.add_argument_group(
        "the declaration the answer is compared with (default: the TARGET's entry in the nearest "
        "[tool.posenc-spec]); they change nothing identify fits")
    declared.add_argument("--convention", metavar="NAME", default=None, help="the declared preset")
    for key in (*CONVENTION_KEYS, "odd"):
        declared.add_argument(flag(key), dest=key, metavar="VALUE", default=None, help=f"the declared {key}")
    for key in ROPE_DECLARED:
        if key == "rope_parameters":
            declared.add_argument(flag(key), dest=key, metavar="KEY=VALUE", action="append", default=None,
                                  help="a declared parameter of the rope type (repeatable)")
        else:
            metavar, text = ROPE_FLAGS[key]
            declared.add_argument(flag(key), dest=key, metavar=metavar, default=None, help=text)
    add_run_arguments(parser)


def add_command(subparsers, name: str, run_command, **texts) -> argparse.ArgumentParser:
    """A command that takes ``identify``'s TARGET and flags (``texts``: its help, description
    and epilog), run by ``run_command``."""
    parser = subparsers.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, **texts)
    add_identify_arguments(parser)
    parser.set_defaults(run=run_command)
    return parser


def register(subparsers) -> None:
    parser = add_command(subparsers, "identify", run, help="find which convention a target computes", epilog=EPILOG,
                         description="Find the layout, first function, shift, base, offset, scale and odd-width "
                                     "behaviour of a target from its tables; the answer is checked on sizes it was "
                                     "not fitted on, then by check on its whole grid.")
    parser.add_argument("--json", metavar="FILE", help="write the answer as JSON (- for standard output)")


def _call_shape(args, api: str):
    """The RoPE call flags as a :class:`~posenc_spec.gate.identify.rope.CallShape`, and the head size."""
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.identify.rope import CallShape
    from posenc_spec.gate.rope.spec import CACHE_CALLS, CACHE_FORMS, CACHE_LAYOUTS, ROPE_LAYOUTS, X_LAYOUTS
    from posenc_spec.gate.rope.spec import head_dim as valid_head_dim
    from posenc_spec.gate.values import choice

    for key, apis in ROPE_CALL_FLAGS.items():
        if getattr(args, key) is not None and apis is not None and api not in apis:
            raise UsageError(f"{flag(key)} is read by --api {' and '.join(apis)}, not by --api {api}")
    head_dim = None if args.head_dim is None else valid_head_dim(flag("head_dim"), args.head_dim)

    def pick(key, choices, default):
        value = getattr(args, key)
        return default if value is None else choice(flag(key), value, choices)

    return CallShape(api, cache_form=pick("cache_form", CACHE_FORMS, "cos-sin"),
                     cache_layout=pick("cache_layout", CACHE_LAYOUTS, None),
                     cache_call=pick("cache_call", CACHE_CALLS, "positions"),
                     x_layout=pick("x_layout", X_LAYOUTS, "bshd"),
                     rope_layout=pick("rope_layout", ROPE_LAYOUTS, None)), head_dim


@dataclass
class Request:
    """What ``identify`` was asked: the call's declaration (the keys a call is made with), the
    RoPE call shape and head size, the declaration to compare with (and where it came
    from), and the run's options."""

    call: object
    shape: object = None
    head_dim: int | None = None
    compared: object = None
    source: str = ""
    options: object = None

    @property
    def rope(self) -> bool:
        return self.shape is not None


def request_of(args) -> Request:
    """The request the flags make, every flag validated (UsageError before any call)."""
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.sandbox import check_preload

    call = declare({"target": args.target, "api": args.api, "t_max": args.t_max,
                    "max_positions": args.max_positions, "timeout": args.timeout}, flags=True)
    shape = head_dim = None
    if call.api in ROPE_APIS:
        if args.t_max is not None:
            raise UsageError("--t-max is read by --api timesteps, not by the rotary APIs")
        shape, head_dim = _call_shape(args, call.api)
    else:
        given = [key for key in ROPE_CALL_FLAGS if getattr(args, key) is not None]
        if given:
            raise UsageError(f"{flag(given[0])} describes a rotary embedding: give --api rope-freqs, rope-cache "
                             "or rope-apply")
    request = Request(call, shape, head_dim, options=run_options_of(args))
    request.compared, request.source = _compared(args, call)
    check_preload(request.options.preload)
    return request


def _compared(args, call):
    """``(declaration, where it came from)`` the answer is compared with, or ``(None, "")``."""
    from posenc_spec.gate.config import find_pyproject, read_config
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError

    keys = {key: getattr(args, key) for key in (*SINUSOIDAL_DECLARED, *ROPE_DECLARED)
            if getattr(args, key, None) is not None}
    if keys:
        layouts = {key: getattr(args, key) for key in ("rope_layout", "cache_layout") if getattr(args, key)}
        return declare({"target": args.target, "api": call.api, **keys, **layouts}, flags=True), "the flags"
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
    call = request.call
    if request.rope:
        from posenc_spec.gate.identify.rope import identify_many

        result = identify_many([call.target], request.shape, request.head_dim, call.max_positions, call.timeout,
                               request.options)[0]
    else:
        from posenc_spec.gate.identify import identify_target

        result = identify_target(call.target, api=call.api, t_max=call.t_max, timeout=call.timeout,
                                 max_positions=call.max_positions, options=request.options)
    result["target"] = call.name
    if request.compared is not None:
        result = _with_differences(result, request)
    elif request.source:
        result = {**result, "message": f"{result['message']}; {request.source}"}
    return result


def _with_differences(result: dict, request: Request) -> dict:
    """The answer with ``declared``: where the declaration came from and how the answer (or,
    for "none", its nearest) differs from it, also said at the end of the message."""
    from posenc_spec.conventions import Convention
    from posenc_spec.gate.identify.declared import rope_differences, sinusoidal_differences

    answer = result["convention"] or (result.get("nearest") or {}).get("convention")
    if answer is None:
        return result
    declared = request.compared
    if request.rope:
        layout = declared.rope.rope_layout if request.call.api == "rope-apply" else declared.rope.cache_layout
        words = rope_differences(answer, answer.get("layout"), declared.rope.convention, layout)
    else:
        odd = answer.get("odd")
        found = Convention(**{**answer, "odd": odd or declared.convention.odd})
        words = sinusoidal_differences(found, declared.convention, odd is not None and not declared.skip_odd)
    what = "the answer" if result["convention"] is not None else "the nearest"
    said = "; ".join(words) if words else "as declared"
    return {**result, "declared": {"source": request.source, "differences": words},
            "message": f"{result['message']}; {what} against the declaration in {request.source}: {said}"}


def run(args) -> int:
    import contextlib

    with contextlib.ExitStack() as held:  # the --json destination, open from start to end
        return _run(args, held)


def _run(args, held) -> int:
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.identify import IdentifyError
    from posenc_spec.gate.output import destination, json_report

    try:
        request = request_of(args)
        json_out, = open_outputs(held, ("--json", args.json))
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
