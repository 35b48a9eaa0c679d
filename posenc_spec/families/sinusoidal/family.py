"""What the gate's core asks of the sinusoidal family (:class:`~posenc_spec.gate.family.Family`)."""

from __future__ import annotations

import re

from posenc_spec.families.sinusoidal import advice, grid, sequences, vacuity
from posenc_spec.families.sinusoidal import judge as sinusoidal
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import Convention, UndefinedWidthError
from posenc_spec.families.sinusoidal.judge import call_problem
from posenc_spec.gate.family import Family

from . import spec
from .keys import CONVENTION_KEYS, NAMES


class Sinusoidal(Family):
    names = NAMES
    report_figures = True
    plot_sizes = ("num_positions", "dim")

    def declare(self, keys, context):
        return spec.declare(keys, context)

    def assert_checkable(self, declaration) -> None:
        vacuity.assert_distinguishable(declaration)

    def regression_bounds(self, declaration):
        convention = declaration.spec.convention

        def pieces(probe, outcome):
            if call_problem(probe, outcome):
                return None
            limit = probe.role == "degenerate" and probe.width == 2 and convention.freq_shift == 1
            try:
                expected = checks.expectation(probe.positions, probe.width, convention, outcome.dtype, limit)
            except (UndefinedWidthError, ValueError):  # an odd width under odd=error, or no bound for this dtype
                return None
            return [(outcome.table, expected.tolerance)]

        return pieces

    def kept_figures(self, report) -> dict:
        from .diagnostics import kept_figures  # matplotlib: only when asked

        return kept_figures(report)

    def snapshot_columns(self, declared: dict):
        from .prediction import columns

        return columns(declared)

    def probes(self, declaration) -> list:
        return sinusoidal.probes(declaration)

    def sequence_probes(self, declaration) -> list:
        return sequences.sequences_for(declaration.api, declaration.t_max, declaration.max_positions)

    def plan_ids(self, calls) -> list[str]:
        return grid.plan_ids(calls)

    def prepare(self, declaration) -> None:
        sinusoidal.prepare(declaration)

    def judge(self, declaration, results, keep_table):
        return sinusoidal.SinusoidalJudge(declaration, results, keep_table)

    def nearest(self, declaration, judged) -> dict | None:
        return advice.nearest(declaration, judged.tables)

    def hints(self, declaration, probes, outcomes, report) -> list:
        return advice.hints(declaration, probes, outcomes, report)

    def shape_hints(self, declaration, probes, outcomes, report) -> list:
        from posenc_spec.gate.advice import swapped_call

        from .shapes import shape_hints

        return shape_hints(declaration, probes, outcomes,
                           lambda first, second: swapped_call(declaration, first, second))

    def likely_fix(self, reason: str, api: str) -> str:
        takes_tensor = re.search(r"(TypeError|AttributeError).*'int' object|(TypeError|AttributeError).*\bint\b",
                                 reason)
        if api == "table" and takes_tensor:
            return "the function may take a tensor of timesteps: try --api timesteps"
        if api == "timesteps" and re.search(r"TypeError|AttributeError.*Tensor", reason):
            return "the function may take (num_positions, dim): try --api table"
        if "transposed" in reason or "rows for" in reason:
            return "check the argument order: the gate calls fn(num_positions, dim) and wants (positions, features)"
        if re.search(r"returned an? [A-Z]\w* of object values", reason):
            return "TARGET may name a class: point it at the function or method that returns the table"
        if "extra leading batch axis" in reason:
            return "return table[0]: the gate wants (positions, features)"
        return ""

    def plot(self, declaration, sizes, options):
        from .plot import plot

        return plot(declaration, sizes, options)

    def identify_request(self, flags, call):
        return _Identification(call, flags)


class _Identification:
    """``identify`` of a table or timesteps target (:mod:`posenc_spec.gate.identify`)."""

    def __init__(self, call, flags: dict):
        from posenc_spec.gate.declaration import declare

        self.call = call
        # How the target is called (signature, init, method, kwargs, x_layout), validated as
        # check validates them, then kept in a declaration's typed form.
        asked = declare({"target": call.target, "api": call.api, **flags}, flags=True) if flags else call
        self.calling = calling_keys(asked)

    def run(self, options) -> dict:
        from posenc_spec.families.sinusoidal.identify import identify_target

        call = self.call
        return identify_target(call.target, api=call.api, t_max=call.t_max, timeout=call.timeout,
                               max_positions=call.max_positions, options=options, calling=self.calling,
                               strict=call.strict)

    def compared_keys(self, flags: dict) -> dict:
        return flags

    def differences(self, answer: dict, declared) -> list[str]:
        from posenc_spec.families.sinusoidal.declared import sinusoidal_differences

        odd = answer.get("odd")
        found = Convention(**{**answer, "odd": odd or declared.spec.convention.odd})
        return sinusoidal_differences(found, declared.spec.convention, odd is not None and not declared.spec.skip_odd)

    def slip(self, result: dict, compared):
        from posenc_spec.families.sinusoidal.identify import known_slip

        found = Convention(**{**result["convention"], "odd": "error"})
        declared = compared.spec.convention if compared is not None else None
        return known_slip(found, declared, "timesteps" if self.call.api == "timesteps" else "positions")

    def entry_keys(self, result: dict, defaults: dict) -> dict:
        from posenc_spec.families.sinusoidal.declared import answer_keys
        from posenc_spec.gate.identify.toml_text import number

        call = self.call
        keys = answer_keys(result, call.api, call.t_max, call.max_positions) | self.calling
        fields = result["convention"]
        return keys | {key: number(fields[key]) for key in CONVENTION_KEYS if key in defaults and key not in keys}


def calling_keys(declaration) -> dict:
    """How ``declaration``'s target is called, as the keys of a declaration that say it (those
    that differ from the API's own call)."""
    keys = declaration.calling.declared_keys()
    x_layout = declaration.spec.x_layout
    if x_layout is not None and "signature" in keys:
        keys["x_layout"] = x_layout
    return keys


FAMILY = Sinusoidal()
