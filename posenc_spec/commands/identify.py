"""``posenc-spec identify TARGET``: which member of the family a target computes."""

from __future__ import annotations

import argparse
import sys

from posenc_spec.gate.keys import ROPE_APIS, flag

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
exit status: 0 identified; 1 no member of the family fits (the answer is "none", with the
nearest convention and its max error/tolerance ratio); 2 usage error, or a TARGET that
cannot be imported; 3 the --json file could not be written at the end.

--api rope-freqs | rope-cache | rope-apply names the layout, theta, the rotary size, the
rotated features and the scaling type with its parameters, where the calls determine them.
"""
# The RoPE flags identify reads: how the target is called and what it returns (the rest it finds).
ROPE_CALL_FLAGS = {"head_dim": None, "rope_layout": ("rope-apply",), "cache_layout": ("rope-cache",),
                   "cache_form": ("rope-cache",), "cache_call": ("rope-cache",), "x_layout": ("rope-apply",)}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "identify", help="find which convention a target computes", epilog=EPILOG,
        description="Find the layout, first function, shift, base, offset, scale and odd-width behaviour of a "
                    "target from its tables; the answer is checked on sizes it was not fitted on.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr")
    add_call_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="write the answer as JSON (- for standard output)")
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
    add_run_arguments(parser)
    parser.set_defaults(run=run)


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


def run(args) -> int:
    import contextlib

    with contextlib.ExitStack() as held:  # the --json destination, open from start to end
        return _run(args, held)


def _run(args, held) -> int:
    from posenc_spec.gate.declaration import declare
    from posenc_spec.gate.errors import UsageError
    from posenc_spec.gate.identify import IdentifyError, identify_target
    from posenc_spec.gate.output import destination, json_report
    from posenc_spec.gate.sandbox import check_preload

    try:
        # The keys a call is made with, validated as check validates them.
        call = declare({"target": args.target, "api": args.api, "t_max": args.t_max,
                        "max_positions": args.max_positions, "timeout": args.timeout}, flags=True)
        api = call.api
        if api in ROPE_APIS:
            if args.t_max is not None:
                raise UsageError("--t-max is read by --api timesteps, not by the rotary APIs")
            shape, head_dim = _call_shape(args, api)
        else:
            given = [key for key in ROPE_CALL_FLAGS if getattr(args, key) is not None]
            if given:
                raise UsageError(f"{flag(given[0])} describes a rotary embedding: give --api rope-freqs, rope-cache "
                                 "or rope-apply")
        options = run_options_of(args)
        json_out, = open_outputs(held, ("--json", args.json))
        check_preload(options.preload)
        if api in ROPE_APIS:
            from posenc_spec.gate.identify.rope import identify_many

            result = identify_many([call.target], shape, head_dim, call.max_positions, call.timeout, options)[0]
        else:
            result = identify_target(call.target, api=api, t_max=call.t_max, timeout=call.timeout,
                                     max_positions=call.max_positions, options=options)
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
