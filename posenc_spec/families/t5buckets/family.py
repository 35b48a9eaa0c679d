"""What the gate's core asks of the T5-bucket family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

import dataclasses

from posenc_spec.gate.family import Family

from . import grid
from .judge import BucketJudge
from .keys import NAMES
from .spec import DEFAULT_EMBEDDING, declare


class T5Buckets(Family):
    names = NAMES
    # The checks of what the buckets are (a failed call, or int-min alone, shows no slip).
    value_checks = ("range", "formula", "exact-small", "halves", "monotone", "saturation", "relative-only",
                    "decode")
    report_figures = True  # check --plots draws the bucket map of the widest call

    def declare(self, keys, context):
        return declare(keys, context)

    def probes(self, declaration) -> list:
        spec = declaration.spec
        return grid.probes_for(spec.convention, spec.signature, spec.query_offset, spec.square_only,
                               declaration.max_positions)

    def sequence_probes(self, declaration) -> list:
        spec = declaration.spec
        return grid.decode_probes(spec.convention, spec.signature, spec.query_offset, spec.square_only,
                                  declaration.max_positions)

    def plan_ids(self, calls) -> list[str]:
        return grid.plan_ids(calls)

    def judge(self, declaration, results, keep_table):
        return BucketJudge(declaration.spec, results)

    def nearest(self, declaration, judged):
        from .slips import nearest_member, observations_of

        declared = declaration.spec.convention
        member = nearest_member(observations_of(judged.calls, declared), declared)
        if member is None or member == declared:
            return None
        return {"name": member.name(), "message": f"the buckets are those of {member.name()}", **member.as_dict()}

    def hints(self, declaration, probes, outcomes, report) -> list:
        from .slips import diagnose, observations_of

        declared = declaration.spec.convention
        return diagnose(observations_of(zip(probes, outcomes, strict=True), declared), declared)

    def handed_keys(self, declaration) -> set[str]:
        """The settings the signature passes the target (``bidirectional``, ``num_buckets``,
        ``max_distance``, each unless ``bucket_args`` passes it nothing): declaring another value
        hands the target that value too, so a hint that names one (a halving forgotten reads as
        twice the buckets) names the slip and advises no key."""
        passed = declaration.spec.names()
        handed = {setting for setting in SETTINGS if passed.get(setting)}
        return super().handed_keys(declaration) | handed

    def kept_figures(self, report) -> dict:
        from .plot import kept_figures  # matplotlib: only when asked

        return kept_figures(report)

    def plot(self, declaration, sizes, options):
        from .plot import plot

        return plot(declaration, sizes, options)

    def identify_request(self, flags, call):
        return _Identification(call, flags)


FAMILY = T5Buckets()


class _Identification:
    """``identify`` of a T5-bucket target (:mod:`.identify`): how it is called (and the settings a
    function that takes them is called with) from the flags, its parameters from its buckets."""

    def __init__(self, call, flags: dict):
        from posenc_spec.gate.declaration import declare

        keys = {"target": call.target, "api": call.api, "timeout": call.timeout, "max_positions": call.max_positions}
        self.declaration = dataclasses.replace(declare({**keys, **flags}, flags=True), strict=call.strict)

    def run(self, options) -> dict:
        from .identify import identify_target

        return identify_target(self.declaration, options)

    def compared_keys(self, flags: dict) -> dict:
        return flags

    def differences(self, answer: dict, declared) -> list[str]:
        declared_fields = declared.spec.convention.as_dict()
        return [f"{key} {_text(answer[key])} (declared {_text(declared_fields[key])})"
                for key in declared_fields if answer.get(key) != declared_fields[key]]

    def slip(self, result: dict, compared):
        """With a declaration, the slip each field that differs from it names (every T5 member
        is one some code means, so without one no answer is a slip)."""
        from posenc_spec.gate.identify.hint import Hint

        if compared is None:
            return None
        declared = compared.spec.convention.as_dict()
        differs = [key for key in declared if key in FIELD_SLIPS and result["convention"].get(key) != declared[key]]
        if not differs:
            return None
        said = "; ".join(f"{key} {_text(result['convention'][key])} where {_text(declared[key])} is declared"
                         for key in differs)
        return Hint(tuple(dict.fromkeys(FIELD_SLIPS[key] for key in differs)),
                    f"it is the declared convention with a slip ({said})")

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        from .conventions import PRESETS, BucketConvention

        member = BucketConvention(**result["convention"])
        preset = next((name for name, convention in PRESETS.items() if convention == member), None)
        keys = {"convention": preset} if preset else {"convention": "t5-encoder", **changed_fields(member)}
        spec = self.declaration.spec
        keys.update(self.declaration.calling.declared_keys())
        if spec.args:
            keys["arg_names"] = dict(spec.args)
        if spec.config:
            keys["model_config"] = spec.config
        if spec.query_offset != "start":
            keys["query_positions"] = "last"
        if spec.signature == "bias" and spec.embedding != DEFAULT_EMBEDDING:
            keys["bucket_embedding"] = spec.embedding
        return keys


# The settings a signature may pass the target (the convention's fields under their keys' names).
SETTINGS = ("bidirectional", "num_buckets", "max_distance")
# The slip each field of an answer that differs from the declared member names.
FIELD_SLIPS = {"bidirectional": "t5-direction", "relative_position": "t5-sign-flipped", "num_buckets": "t5-settings",
               "max_distance": "t5-settings"}


def _text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def changed_fields(member) -> dict:
    """The fields of ``member`` that T5's encoder (the default preset) does not have."""
    from .conventions import PRESETS

    base = PRESETS["t5-encoder"].as_dict()
    return {key: value for key, value in member.as_dict().items() if base[key] != value}
