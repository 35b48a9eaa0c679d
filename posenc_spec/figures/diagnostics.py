"""Pictures of a table under test: where it departs from the expected table.

:func:`difference_figure` shows the signed difference from the expected table and each
element's error as a multiple of its own tolerance (:mod:`posenc_spec.tolerance`), so a
failing check points at the rows and columns that are wrong. :func:`write_table_figures`
writes it with the heatmap, row profiles and similarity matrix, as ``posenc-spec plot``
does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from ..checks import Expectation
from ..tolerance import compare
from .arrays import as_table
from .learned import similarity_over_positions_figure
from .sinusoidal import SEED000_ROWS, position_heatmap_figure, row_profiles_figure
from .style import DPI, figure_style, new_figure, save_png

# Ratios below this are drawn as this: an exact element would otherwise be log10(0).
SMALLEST_SHOWN_RATIO = 1e-4

def error_ratio(table, expected, tolerance) -> np.ndarray:
    """``|table - expected| / tolerance`` per element; NaN or Inf in ``table`` count as
    infinitely wrong. Above 1 an element is out of its bound."""
    table = as_table(table)
    expected = as_table(expected, "expected")
    if table.shape != expected.shape:
        raise ValueError(f"table shape {table.shape} differs from the expected {expected.shape}")
    error = np.abs(table - expected)
    error = np.where(np.isfinite(error), error, np.inf)
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), expected.shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero bound admits only a zero error
        return np.where(error == 0, 0.0, error / tolerance)


def difference_figure(table, expected, tolerance, *, title: str | None = None, dpi: float = DPI) -> Figure:
    """Two panels on 12 x 5 inches, positions down and dimensions across: the signed
    difference ``table - expected`` (``RdBu_r``, symmetric about 0), and
    ``log10(error / tolerance)`` with red above 0 (out of bound) and blue below; the
    worst element is circled. NaN and Inf elements show in the ratio panel at its top.
    ``title`` (a target's name, say) heads the summary line of :func:`~posenc_spec.tolerance.compare`."""
    table = as_table(table)
    ratio = error_ratio(table, expected, tolerance)
    summary = compare(table, expected, tolerance)
    difference = table - as_table(expected, "expected")
    finite = np.isfinite(difference)
    limit = float(np.max(np.abs(difference[finite]), initial=0.0)) or 1.0
    log_ratio = np.log10(np.maximum(ratio, SMALLEST_SHOWN_RATIO))
    top = float(np.max(log_ratio[np.isfinite(log_ratio)], initial=0.0))
    top = max(1.0, np.ceil(top))
    log_ratio = np.minimum(log_ratio, top)  # Inf (NaN elements) at the top of the scale
    norm = TwoSlopeNorm(vcenter=0.0, vmin=np.log10(SMALLEST_SHOWN_RATIO), vmax=top)
    with figure_style():
        figure = new_figure((12, 5), dpi)
        difference_axes, ratio_axes = figure.subplots(1, 2)
        image = difference_axes.imshow(np.where(finite, difference, np.nan), aspect="auto", cmap="RdBu_r",
                                       vmin=-limit, vmax=limit, interpolation="nearest")
        difference_axes.set(xlabel="Embedding dimension", ylabel="Position (row)", title="table - expected")
        figure.colorbar(image, ax=difference_axes)
        image = ratio_axes.imshow(log_ratio, aspect="auto", cmap="RdBu_r", norm=norm, interpolation="nearest")
        ratio_axes.set(xlabel="Embedding dimension", ylabel="Position (row)",
                       title=f"error / tolerance: {summary.num_failing} of {summary.size} above 1")
        if summary.size:
            row, column = summary.worst_index
            ratio_axes.plot([column], [row], marker="o", markersize=14, markerfacecolor="none",
                            markeredgecolor="black", markeredgewidth=2, clip_on=False)
        figure.colorbar(image, ax=ratio_axes, label="log10(error / tolerance); above 0 fails")
        heading = summary.describe() if summary.size else "empty table"
        figure.suptitle(heading if title is None else f"{title}\n{heading}", fontsize=10)
        figure.tight_layout()
    return figure


def profile_rows(num_positions: int) -> list[int]:
    """Seed 000's positions that the table holds, ending with its last row: exactly the
    seed's ten rows for a 300-row table."""
    last = num_positions - 1
    return [row for row in SEED000_ROWS[:-1] if row < last] + [last]


def write_table_figures(table, exp: Expectation, out_dir, *, title: str | None = None,
                        dpi: float = DPI) -> dict[str, Path]:
    """Write ``heatmap.png``, ``row_profiles.png`` (expected rows in grey beneath),
    ``similarity.png`` and ``difference.png`` for ``table`` under ``exp`` into
    ``out_dir`` (created if needed); returns the paths by name."""
    table = as_table(table)
    if table.shape != exp.table.shape:
        raise ValueError(f"table shape {table.shape} differs from the expected {exp.table.shape}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Tables with NaN still get pictures: imshow leaves those elements blank.
    figures = {
        "heatmap": position_heatmap_figure(table, dpi=dpi),
        "row_profiles": row_profiles_figure(table, profile_rows(table.shape[0]), reference=exp.table, dpi=dpi),
        "similarity": similarity_over_positions_figure(np.nan_to_num(table), title="Cosine similarity of positions",
                                                       figsize=(6, 5), dpi=dpi),
        "difference": difference_figure(table, exp.table, exp.tolerance, title=title, dpi=dpi),
    }
    return {name: save_png(figure, out_dir / f"{name}.png") for name, figure in figures.items()}
