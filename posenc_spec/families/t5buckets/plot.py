"""``posenc-spec plot`` of a T5-bucket target: ``bucket_map.png``, the buckets it returns over
the relative positions of the gate's widest call (the dense ``int64`` slot of a function of
positions; the largest table's offsets, each drawn once, for a table or a bias) against the
exact buckets, with the exact boundaries where each bucket starts (``max_exact`` and the
logarithmic starts of :func:`~.oracle.bucket_starts`, both directions) and every position
whose bucket lies outside the band marked."""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Drawing, NothingToDraw
from posenc_spec.gate.runner import run_target

from . import grid, oracle, tolerance

FILE = "bucket_map.png"


def widest_call(spec, calls):
    """``(probe, relative, buckets)`` of the widest of ``calls`` (``(probe, outcome)`` pairs, the
    grid's own) that returned integer buckets of its shape, each relative position once."""
    found = []
    for probe, outcome in calls:
        if probe.role != "table":
            continue
        if outcome.ok and outcome.table.dtype.kind in "iu" and outcome.table.shape == probe.result_shape():
            relative = probe.relative_positions(spec.convention).reshape(-1)
            order = np.unique(relative, return_index=True)[1]  # each offset once (its first element), sorted
            found.append((probe, relative[order], outcome.table.reshape(-1)[order].astype(np.int64)))
    return max(found, key=lambda call: call[1].size) if found else None


def boundaries(convention) -> np.ndarray:
    """Where the buckets start, as declared relative positions: ``±max_exact`` and ``±`` each
    logarithmic start (one sign alone when causal)."""
    starts = np.array([convention.max_exact, *oracle.bucket_starts(convention)], dtype=np.int64)
    signs = (-1, 1) if convention.bidirectional else (-1,)
    made = np.concatenate([sign * starts for sign in signs])
    return -made if convention.relative_position == "query-minus-memory" else made


def bucket_map_figure(relative, buckets, convention, log_dtype: str, title: str, dpi: int = 72):
    """The map (see the module docstring) of ``buckets`` at ``relative`` (sorted, declared sign)."""
    from posenc_spec.figures.style import figure_style, heading, new_figure

    expected = oracle.buckets(relative, convention)
    low, high = tolerance.bucket_band(relative, convention, log_dtype)
    wrong = (buckets < low) | (buckets > high)
    with figure_style():
        figure = new_figure((8.0, 4.2), dpi)
        axes = figure.add_subplot(1, 1, 1)
        axes.step(relative, expected, where="post", color="0.6", linewidth=2.5, label="exact buckets")
        axes.step(relative, buckets, where="post", color="C0", linewidth=1.0, label="returned")
        for start in boundaries(convention):
            if relative[0] <= start <= relative[-1]:
                axes.axvline(start, color="0.8", linewidth=0.5, linestyle=":")
        if wrong.any():
            axes.plot(relative[wrong], buckets[wrong], "x", color="C3", markersize=4,
                      label=f"outside the band ({int(wrong.sum())})")
        axes.set_xlabel(f"relative position ({convention.relative_position})")
        axes.set_ylabel("bucket")
        axes.legend(loc="best", fontsize="small")
        figure.suptitle(heading(title, "dotted: where each bucket starts, exactly", 8.0), fontsize=10)
    return figure, int(wrong.sum())


def kept_figures(report) -> dict:
    """``check --plots``' picture of a report that does not conform: the bucket map of the call it kept."""
    declaration, kept = report.declaration, report.kept
    spec = declaration.spec
    title = f"{declaration.name} at {kept.slot} under {spec.describe()}"
    figure, _ = bucket_map_figure(kept.positions, kept.table, spec.convention, spec.log_dtype, title)
    return {"bucket_map": figure}


def plot(declaration, sizes: dict, options) -> Drawing:
    """The bucket map of the target's widest call (see the module docstring)."""
    spec = declaration.spec
    given = [name for name, value in sizes.items() if value is not None]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} sizes a table; the {declaration.api} API draws the "
                         "relative positions of check's own calls")
    probes = [probe for probe in grid.probes_for(spec.convention, spec.signature, spec.query_offset,
                                                 spec.square_only) if probe.role == "table"]
    turn = run_target(declaration, [probe.request() for probe in probes], options)
    if not turn.imported:
        raise UsageError(f"cannot import TARGET {declaration.name}: {turn.import_message}")
    drawn = widest_call(spec, zip(probes, turn.outcomes, strict=True))
    if drawn is None:
        first = next(f"{probe.slot}: {outcome.message}" for probe, outcome in zip(probes, turn.outcomes, strict=True)
                     if not outcome.ok or outcome.table.dtype.kind not in "iu")
        raise NothingToDraw(declaration.name, f"no call returned integer buckets; first {first}")
    probe, relative, buckets = drawn
    title = f"{declaration.name} at {probe.slot} under {spec.describe()}"
    figure, wrong = bucket_map_figure(relative, buckets, spec.convention, spec.log_dtype, title)

    verdict = (f"every bucket of {relative.size} offsets within its band" if not wrong
               else f"{wrong} of {relative.size} offsets in another bucket")
    return Drawing(title, verdict, {"bucket_map": (FILE, figure)},
                   (f"drawn: {probe.slot}, each relative position once",))
