"""A table under test beside the table it should be: their difference, element by element
over its tolerance.

:func:`difference_figure` draws the signed difference from the expected table and each
element's error as a multiple of its own tolerance (:func:`error_ratio`, the comparison's
rule: :func:`posenc_spec.tolerance.ratios`), so a failing check points at the rows and
columns that are wrong. :class:`Rows` names a table's rows (positions or timesteps). Each
family's pictures (``posenc-spec plot``, ``check --plots``) draw it beside their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ..tolerance import compare, ratios
from .arrays import as_table
from .style import DPI, HEADING_SIZE, figure_style, heading, new_figure, quiet_floats

# Ratios below this are drawn as this: an exact element would otherwise be log10(0).
SMALLEST_SHOWN_RATIO = 1e-4
# Scales end at this magnitude, and values beyond it are drawn at their end: matplotlib
# spans a scale (high - low) and pads it, which overflows to Inf near the largest float.
LARGEST_SHOWN_VALUE = float(np.finfo(np.float64).max) / 16

ROW_KINDS = ("position", "timestep")


@dataclass(frozen=True, eq=False)
class Rows:
    """What a table's rows are: ``values`` (positions or timesteps) of ``kind``."""

    values: np.ndarray
    kind: str

    @classmethod
    def of(cls, positions, num_rows: int, kind: str | None = None) -> Rows:
        """``positions`` (None: ``0 .. num_rows - 1``) as rows of ``kind``; ``kind`` None is
        "position" when the values are ``0 .. n - 1`` (the table API), else "timestep"."""
        counted = np.arange(num_rows, dtype=np.float64)
        values = counted if positions is None else np.asarray(positions, dtype=np.float64).reshape(-1)
        if values.size != num_rows:
            raise ValueError(f"positions must hold one value per row ({num_rows}), got {values.size}")
        if kind is None:
            kind = "position" if np.array_equal(values, counted) else "timestep"
        if kind not in ROW_KINDS:
            raise ValueError(f"row_kind must be one of {', '.join(ROW_KINDS)} or None, got {kind!r}")
        return cls(values, kind)

    def name(self, row: int) -> str:
        return f"{self.kind} {self.values[row]:g}"

    def label(self, axis) -> None:
        """Name ``axis`` (of row indices) after the rows; unless the rows are ``0 .. n - 1``,
        each tick shows its row's value."""
        num_rows = self.values.size
        if np.array_equal(self.values, np.arange(num_rows)):
            axis.set_label_text(self.kind.capitalize())
            return
        ascending = bool(np.all(np.diff(self.values) >= 0))
        axis.set_label_text(self.kind.capitalize() + ("" if ascending else " (in the order called)"))

        def tick(value, _position):
            row = int(round(value))
            return f"{self.values[row]:g}" if row == value and 0 <= row < num_rows else ""

        axis.set_major_formatter(FuncFormatter(tick))


def error_ratio(table, expected, tolerance) -> np.ndarray:
    """``|table - expected| / tolerance`` per element; NaN or Inf in ``table`` count as
    infinitely wrong. Above 1 an element is out of its bound."""
    table = as_table(table)
    expected = as_table(expected, "expected")
    if table.shape != expected.shape:
        raise ValueError(f"table shape {table.shape} differs from the expected {expected.shape}")
    with quiet_floats():  # Inf - Inf is NaN, which ratios counts as infinitely wrong
        error = np.abs(table - expected)
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), expected.shape)
    return ratios(error, tolerance)


def difference_figure(table, expected, tolerance, *, title: str | None = None, positions=None,
                      row_kind: str | None = None, dpi: float = DPI) -> Figure:
    """Two panels on 12 x 5 inches, rows down and dimensions across: the signed
    difference ``table - expected`` (``RdBu_r``, symmetric about 0), and
    ``log10(error / tolerance)`` with red above 0 (out of bound) and blue below; the
    worst element is circled. NaN and Inf elements show in the ratio panel at its top.
    ``title`` (a target's name, say) heads the summary line of :func:`~posenc_spec.tolerance.compare`;
    ``positions`` and ``row_kind`` name the rows (see :meth:`Rows.of`)."""
    table = as_table(table)
    rows = Rows.of(positions, table.shape[0], row_kind)
    ratio = error_ratio(table, expected, tolerance)
    with quiet_floats():
        summary = compare(table, expected, tolerance)
    return difference_panels(table, expected, ratio, summary, rows, title, dpi)


def difference_panels(table: np.ndarray, expected, ratio: np.ndarray, summary, rows: Rows, title: str | None,
                       dpi: float) -> Figure:
    """:func:`difference_figure` of a checked table, its :func:`error_ratio` and its comparison."""
    difference = table - as_table(expected, "expected")
    finite = np.isfinite(difference)
    limit = min(float(np.max(np.abs(difference[finite]), initial=0.0)), LARGEST_SHOWN_VALUE) or 1.0
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
        difference_axes.set(xlabel="Embedding dimension", title="table - expected")
        figure.colorbar(image, ax=difference_axes, label="table - expected (value)")
        image = ratio_axes.imshow(log_ratio, aspect="auto", cmap="RdBu_r", norm=norm, interpolation="nearest")
        ratio_axes.set(xlabel="Embedding dimension",
                       title=f"error / tolerance: {summary.num_failing} of {summary.size} above 1")
        for axes in (difference_axes, ratio_axes):
            rows.label(axes.yaxis)
        if summary.size:
            row, column = summary.worst_index
            ratio_axes.plot([column], [row], marker="o", markersize=14, markerfacecolor="none",
                            markeredgecolor="black", markeredgewidth=2, clip_on=False)
        figure.colorbar(image, ax=ratio_axes, label="log10(error / tolerance); above 0 fails")
        description = summary.describe() if summary.size else "empty table"
        figure.suptitle(description if title is None else heading(title, description, 12), fontsize=HEADING_SIZE)
        figure.tight_layout()
    return figure
