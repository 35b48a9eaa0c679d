"""``posenc-spec plot`` of an ALiBi target: one head count's calls (the declared
``num_heads``, else :data:`PLOT_HEADS`, a count with the paper's interleave), read as the
gate reads them, against the oracle and its bounds.

- ``slopes.png``: each head's slope on a log2 scale, the target's (returned by
  ``alibi-slopes``; measured from the steps between neighbouring keys of a bias) over the
  declared ones, with each head's error in units of its bound below;
- ``bias.png`` (``alibi-bias``): the bias of the call drawn, head 0 and the last head, the
  region the checks judge outlined by the masked elements left blank;
- ``bias_difference.png`` (``alibi-bias``): ``(got - expected) / bound`` of every judged
  element of those heads (beyond +-1 is out of bound).

The call drawn is the one whose worst element is furthest out of its bound (of equals, the
first of the head count's calls: its square prefill, or its length-64 call).
"""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Drawing, NothingToDraw

from . import oracle, properties
from .grid import AlibiProbe, calls
from .judge import AlibiJudge, positions_of
from .slips import Reading, measured_slopes
from .tolerance import longest_distance, slope_tolerance

PLOT_HEADS = 12
WIDTH, HEIGHT, DPI = 8.0, 5.0, 100


def _probes(spec, heads: int, max_positions) -> list[AlibiProbe]:
    return [AlibiProbe(call.size, "table", call, call.slot, signature=spec.signature)
            for call in calls(spec.signature, heads, spec.convention, True, max_positions)
            if call.k_len <= 64 and (call.dtype == "float32")]


def _ratio(reading: Reading, conv) -> tuple[float, np.ndarray, properties.BiasExpectation]:
    """The worst ``|error| / bound`` of one bias call, its values and expectation."""
    call = reading.probe.call
    values = reading.values(conv)
    exp = properties.expectation(call.num_heads, positions_of(call, conv), conv, reading.dtype)
    ratio = np.where(exp.judged[None], np.abs(_scaled(values, exp)), 0.0)
    return float(ratio.max(initial=0.0)), values, exp


def _scaled(values: np.ndarray, exp: properties.BiasExpectation) -> np.ndarray:
    """``(got - expected) / bound``: 0 where they are equal (a bound of 0 too), inf where a
    bound of 0 is broken, NaN for a NaN value (left blank)."""
    error = values - exp.table
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(error == 0, 0.0, error / exp.tolerance)


def _slopes_figure(title: str, got: np.ndarray, expected: np.ndarray, bound: np.ndarray, what: str):
    from posenc_spec.figures.style import heading, new_figure

    figure = new_figure((WIDTH, HEIGHT), DPI)
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    heads = np.arange(expected.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        top.plot(heads, np.log2(expected), "o", mfc="none", label="declared")
        top.plot(heads, np.log2(np.abs(got)), ".", label=what)
        bottom.bar(heads, np.where(bound > 0, (got - expected) / bound, 0.0))
    top.set_ylabel("log2 slope")
    top.legend(loc="upper right")
    bottom.axhline(1.0, linestyle=":")
    bottom.axhline(-1.0, linestyle=":")
    bottom.set_xlabel("head")
    bottom.set_ylabel("error / bound")
    top.set_title(heading(title, "slopes per head", WIDTH), fontsize="small")
    return figure


def _bias_figure(title: str, table: np.ndarray, judged: np.ndarray, what: str, colour_label: str):
    from posenc_spec.figures.style import heading, new_figure

    figure = new_figure((WIDTH, HEIGHT), DPI)
    axes = figure.subplots(1, 2, squeeze=False)[0]
    last = table.shape[0] - 1
    for axis, head in zip(axes, (0, last), strict=True):
        shown = np.where(judged, table[head], np.nan)
        image = axis.imshow(shown, aspect="auto", interpolation="nearest")
        axis.set_title(f"head {head}", fontsize="small")
        axis.set_xlabel("key")
        axis.set_ylabel("query row")
        figure.colorbar(image, ax=axis, label=colour_label)
    figure.suptitle(heading(title, what, WIDTH), fontsize="small")
    return figure


def _run(declaration, probes, options) -> list[Reading]:
    from posenc_spec.gate.judge import Results
    from posenc_spec.gate.runner import run_target

    turn = run_target(declaration, [probe.request() for probe in probes], options)
    if not turn.imported:
        raise UsageError(f"cannot import TARGET {declaration.name}: {turn.import_message}")
    reader, readings, problems = AlibiJudge(declaration.spec.convention, Results()), [], []
    for probe, outcome in zip(probes, turn.outcomes, strict=True):
        _, dtype, problem = reader.values(probe, outcome)
        if problem:
            problems.append(f"{probe.slot}: {problem}")
        else:
            readings.append(Reading(probe, outcome.table, dtype))
    if not readings:
        raise NothingToDraw(declaration.name, f"every call failed; first {problems[0]}")
    return readings


def plot(declaration, sizes: dict, options) -> Drawing:
    """The pictures of the module docstring."""
    spec, conv = declaration.spec, declaration.spec.convention
    heads = spec.attention_heads or max(PLOT_HEADS, conv.alibi_heads or 1)
    readings = _run(declaration, _probes(spec, heads, declaration.max_positions), options)
    expected = oracle.slopes(heads, conv)
    bound = slope_tolerance(heads, conv, longest_distance(declaration.max_positions))
    if spec.slopes_only:
        reading = readings[0]
        got = reading.values(conv)
        title = f"{declaration.name} at {heads} heads under {spec.describe()}, {reading.dtype}"
        worst = float(np.max(np.abs(got - expected) / bound))
        verdict = (f"every slope within its bound (max error/bound {worst:.3g})" if worst <= 1
                   else f"slopes out of bound: max error/bound {worst:.3g}")
        figure = _slopes_figure(title, got, expected, bound, "returned")
        return Drawing(title, verdict, {"slopes": ("slopes.png", figure)})
    ratio, values, exp, reading = max(((*_ratio(reading, conv), reading) for reading in readings),
                                      key=lambda drawn: drawn[0])
    title = f"{declaration.name} at {reading.probe.slot} under {spec.describe()}, {reading.dtype}"
    got = measured_slopes(reading, conv)
    pictures = {}
    if got is not None:
        pictures["slopes"] = ("slopes.png", _slopes_figure(title, got, expected, np.abs(expected) * 2**-5,
                                                           "measured from the bias"))
    scaled = _scaled(values, exp)
    pictures["bias"] = ("bias.png", _bias_figure(title, values, exp.judged, "the bias", "bias"))
    pictures["bias_difference"] = ("bias_difference.png", _bias_figure(
        title, scaled, exp.judged, "(got - expected) / bound", "error / bound"))
    verdict = (f"every judged element within its bound (max error/bound {ratio:.3g})" if ratio <= 1
               else f"out of bound at {reading.probe.slot}: max error/bound {ratio:.3g}")
    notes = (f"drawn: the call furthest out of bound of {len(readings)} at {heads} heads",
             "slopes.png: measured slopes are drawn against a band of 2**-5 relative (the formula check holds "
             "each element to its own bound)")
    return Drawing(title, verdict, pictures, notes)
