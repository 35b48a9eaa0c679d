"""What the gate's core asks of the rotary family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

from posenc_spec.families.rope import grid, sequences
from posenc_spec.families.rope.judge import RopeJudge
from posenc_spec.families.rope.spec import WITH_ROTATION, declare, grid_signature
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Family
from posenc_spec.gate.judge import Results
from posenc_spec.gate.keys import flag
from posenc_spec.gate.values import choice

from .keys import NAMES


def _rotated(made: list, declaration) -> list:
    """The calls, carrying the convention's own cos/sin where the signature takes them (a
    call description naming cos and sin with ``cache_layout = "compact"``: each ``(batch, seq, r/2)``)."""
    signature = grid_signature(declaration.calling, declaration.api)
    if signature not in WITH_ROTATION:
        return made
    compact = declaration.calling.form is not None and declaration.spec.cache_layout == "compact"
    return grid.with_rotation(made, declaration.spec, signature, compact)


class Rope(Family):
    names = NAMES
    value_checks = ("formula", "identity", "attention-factor", "norm", "passthrough")

    def declare(self, keys, context):
        return declare(keys, context)

    def regression_bounds(self, declaration):
        judged = RopeJudge(declaration.spec, declaration.api, Results())

        def pieces(probe, outcome):
            values, problem = judged.values(probe, outcome)
            if problem:
                return None
            return [(actual, bound) for _, actual, _, bound in judged.expected_pieces(probe, values)[1]]

        return pieces

    def probes(self, declaration) -> list:
        return _rotated(grid.probes_for(declaration.spec, declaration.api, declaration.max_positions), declaration)

    def sequence_probes(self, declaration) -> list:
        made = sequences.probes_for(declaration.spec, declaration.api, grid_signature(declaration.calling,
                                                                                      declaration.api),
                                    declaration.max_positions)
        return _rotated(made, declaration)

    def sequences_first(self, declaration) -> bool:
        return sequences.plays_first(declaration.spec)

    def plan_ids(self, calls) -> list[str]:
        return grid.plan_ids(calls)

    def judge(self, declaration, results, keep_table):
        return RopeJudge(declaration.spec, declaration.api, results)

    def hints(self, declaration, probes, outcomes, report) -> list:
        from posenc_spec.families.rope.slips import diagnose

        statuses = {check.name: check.status for check in report.checks}
        return diagnose(declaration.spec, declaration.api, list(zip(probes, outcomes, strict=True)), statuses,
                        declaration.max_positions)

    def plot(self, declaration, sizes, options):
        from .plot import plot

        return plot(declaration, sizes, options)

    def identify_request(self, flags, call):
        return _Identification(call, flags)


# The APIs each call flag of identify goes with (None: every rotary API).
_READ_BY = {"head_dim": None, "layout": ("rope-apply",), "cache_layout": ("rope-cache",),
            "cache_form": ("rope-cache",), "cache_call": ("rope-cache",), "x_layout": ("rope-apply",)}


class _Identification:
    """``identify`` of a rotary target (:mod:`posenc_spec.families.rope.identify`): how it is
    called comes from the flags, the convention from its values."""

    def __init__(self, call, flags: dict):
        from posenc_spec.families.rope.identify import CallShape
        from posenc_spec.families.rope.spec import (
            CACHE_CALLS,
            CACHE_FORMS,
            CACHE_LAYOUTS,
            ROPE_LAYOUTS,
            X_LAYOUTS,
            valid_head_dim,
        )

        if "t_max" in flags:
            raise UsageError(f"--t-max is read by --api timesteps, not by --api {call.api}")
        for key, apis in _READ_BY.items():
            if key in flags and apis is not None and call.api not in apis:
                raise UsageError(f"{flag(key)} is read by --api {' and '.join(apis)}, not by --api {call.api}")

        def pick(key, choices, default):
            return choice(flag(key), flags[key], choices) if key in flags else default

        self.call, self.flags = call, flags
        self.head_dim = valid_head_dim(flag("head_dim"), flags["head_dim"]) if "head_dim" in flags else None
        self.shape = CallShape(call.api, cache_form=pick("cache_form", CACHE_FORMS, "cos-sin"),
                               cache_layout=pick("cache_layout", CACHE_LAYOUTS, None),
                               # a call description's roles imply the cache call (spec.py's _cache_call)
                               cache_call=pick("cache_call", CACHE_CALLS,
                                               getattr(call.spec, "cache_call", "positions")),
                               x_layout=pick("x_layout", X_LAYOUTS, "bshd"),
                               rope_layout=pick("layout", ROPE_LAYOUTS, None))

    def run(self, options) -> dict:
        from posenc_spec.families.rope.identify import identify_handed_rotation, identify_many

        call = self.call
        if call.calling.signature in WITH_ROTATION:
            return identify_handed_rotation(call, self.flags.get("rope_layout"), options)
        return identify_many([call.target], self.shape, self.head_dim, call.max_positions, call.timeout, options,
                             call=call)[0]

    def compared_keys(self, flags: dict) -> dict:
        return {**flags, **{key: self.flags[key] for key in ("layout", "cache_layout") if key in self.flags}}

    def differences(self, answer: dict, declared) -> list[str]:
        from posenc_spec.families.rope.declared import rope_differences

        spec = declared.spec
        layout = spec.rope_layout if self.call.api == "rope-apply" else spec.cache_layout
        return rope_differences(answer, answer.get("layout"), spec.convention, layout)

    def slip(self, result: dict, compared):
        """With a declaration, the slips that take it to the answer (theta, the pairing, a
        scaling or a partial rotary size dropped); without one, only a theta no model means
        (:func:`~posenc_spec.families.rope.identify.undeclared_slip`: the square root of a
        released checkpoint's, the ``i/d`` slip)."""
        from posenc_spec.families.rope.identify import known_slip, undeclared_slip

        if compared is None:
            return undeclared_slip(result["convention"]) if result.get("convention") else None
        spec = compared.spec
        layout = spec.rope_layout if self.call.api == "rope-apply" else spec.cache_layout
        return known_slip(result["convention"], spec.convention, layout)

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        from posenc_spec.families.rope.declared import rope_answer_keys

        return rope_answer_keys(result, self.shape, self.head_dim, self.call.max_positions, self.call)


FAMILY = Rope()
