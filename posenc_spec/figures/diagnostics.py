"""Pictures of a table under test beside the table it should be.

``posenc-spec plot`` and ``check --plots`` draw four with :func:`table_figures`,
each headed by the target, its convention and dtype (the ``title``), rows (positions or
timesteps) down and embedding dimensions across:

- ``heatmap.png`` (:func:`table_heatmap_figure`): the values, on a colorbar of values;
- ``row_profiles.png`` (:func:`table_row_profiles_figure`): a few rows, the table's solid
  and the expected values dashed, elements out of bound marked red, a legend per row;
- ``similarity.png`` (:func:`table_similarity_figure`): the cosine similarity of every pair
  of rows, beside the expected table's, on one colorbar;
- ``difference.png`` (:func:`difference_figure`): the signed difference from the expected
  table and each element's error as a multiple of its own tolerance
  (:mod:`posenc_spec.tolerance`), so a failing check points at the rows and columns that
  are wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from posenc_spec.families.sinusoidal.properties import Expectation

from ..tolerance import Comparison, compare
from .arrays import as_table, check_rows, cosine_similarity
from .sinusoidal import SEED000_ROWS
from .style import DPI, HEADING_SIZE, figure_style, heading, new_figure, quiet_floats, save_png

# Ratios below this are drawn as this: an exact element would otherwise be log10(0).
SMALLEST_SHOWN_RATIO = 1e-4
# Scales end at this magnitude, and values beyond it are drawn at their end: matplotlib
# spans a scale (high - low) and pads it, which overflows to Inf near the largest float.
LARGEST_SHOWN_VALUE = float(np.finfo(np.float64).max) / 16

ROW_KINDS = ("position", "timestep")
PROFILE_PANEL_HEIGHT = 1.0  # inches, seed 000's row panels


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
    error = np.abs(table - expected)
    error = np.where(np.isfinite(error), error, np.inf)
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), expected.shape)
    with quiet_floats():  # a zero bound admits only a zero error; a ratio past the largest float is Inf
        return np.where(error == 0, 0.0, error / tolerance)


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
    return _difference_figure(table, expected, ratio, summary, rows, title, dpi)


def _difference_figure(table: np.ndarray, expected, ratio: np.ndarray, summary, rows: Rows, title: str | None,
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


def _checked(table, exp: Expectation, title: str | None, row_kind: str | None):
    """The table as float64, its :class:`Rows`, and the title (the convention and dtype when None)."""
    if not isinstance(exp, Expectation):
        raise TypeError(f"exp must be an Expectation (posenc_spec.families.sinusoidal.properties.expectation), "
                        f"got {type(exp).__name__}")
    table = as_table(table)
    if table.shape != exp.table.shape:
        raise ValueError(f"table shape {table.shape} differs from the expected {exp.table.shape}")
    if title is None:
        title = f"table under {exp.convention.name()}, {exp.out_dtype}"
    return table, Rows.of(exp.positions, table.shape[0], row_kind), title


def _value_limits(table: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """``(low, high)``, widened to the table's finite values where they lie outside, at most
    to :data:`LARGEST_SHOWN_VALUE`."""
    finite = table[np.isfinite(table)]
    return (max(min(low, float(finite.min(initial=low))), -LARGEST_SHOWN_VALUE),
            min(max(high, float(finite.max(initial=high))), LARGEST_SHOWN_VALUE))


def table_heatmap_figure(table, exp: Expectation, *, title: str | None = None, row_kind: str | None = None,
                         dpi: float = DPI) -> Figure:
    """The table's values on 7 x 5 inches in ``viridis`` from -1 to 1 (wider when the
    values are), with a colorbar of values. NaN elements are left blank."""
    return _heatmap_figure(*_checked(table, exp, title, row_kind), dpi)


def _heatmap_figure(table: np.ndarray, rows: Rows, title: str, dpi: float) -> Figure:
    low, high = _value_limits(table, -1.0, 1.0)
    with figure_style():
        figure = new_figure((7, 5), dpi)
        figure.set_layout_engine("constrained")
        axes = figure.add_subplot()
        image = axes.imshow(table, aspect="auto", cmap="viridis", vmin=low, vmax=high)
        axes.set_xlabel("Embedding dimension")
        rows.label(axes.yaxis)
        figure.colorbar(image, ax=axes, label="Value")
        figure.suptitle(heading(title, "the table's values", 7), fontsize=HEADING_SIZE)
    return figure


def profile_rows(num_positions: int) -> list[int]:
    """Seed 000's positions that the table holds, ending with its last row: exactly the
    seed's ten rows for a 300-row table."""
    last = num_positions - 1
    return [row for row in SEED000_ROWS[:-1] if row < last] + [last]


def table_row_profiles_figure(table, exp: Expectation, rows=None, *, title: str | None = None,
                              row_kind: str | None = None, dpi: float = DPI) -> Figure:
    """One 12-inch panel per row (default :func:`profile_rows`), y from -1.5 to 1.5 (wider
    when the values are): the table's row solid blue, the expected row dashed orange, and
    each element out of its bound a red dot (at the expected value where the table has
    NaN). Each panel's legend names its row and says how many elements are out of bound."""
    table, row_axis, title = _checked(table, exp, title, row_kind)
    return _row_profiles_figure(table, exp, error_ratio(table, exp.table, exp.tolerance), rows, row_axis, title, dpi)


def _row_profiles_figure(table: np.ndarray, exp: Expectation, ratio: np.ndarray, rows, row_axis: Rows, title: str,
                         dpi: float) -> Figure:
    num_rows, width = table.shape
    rows = check_rows(profile_rows(num_rows) if rows is None else rows, num_rows)
    out_of_bound = ratio > 1
    low, high = _value_limits(table, -1.5, 1.5)
    columns = np.arange(width)
    with figure_style():
        figure = new_figure((12, PROFILE_PANEL_HEIGHT * len(rows) + 1), dpi)
        figure.set_layout_engine("constrained")
        axes = figure.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
        for ax, row in zip(axes, rows, strict=True):
            ax.plot(columns, table[row], color="tab:blue", linewidth=2.5, label=row_axis.name(row))
            ax.plot(columns, exp.table[row], color="tab:orange", linewidth=1.5, linestyle="--", label="expected")
            wrong = np.flatnonzero(out_of_bound[row])
            if wrong.size:
                shown = np.where(np.isfinite(table[row, wrong]), table[row, wrong], exp.table[row, wrong])
                ax.plot(wrong, shown, linestyle="none", marker="o", markersize=3.5, color="red",
                        label=f"{wrong.size} out of bound")
            ax.set(xlim=(0, width), ylim=(low, high))
            ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0, fontsize=8)
        axes[-1].set_xlabel("Embedding dimension")
        figure.supylabel("Value")
        description = "the table's rows (solid) and the expected values (dashed); red dots: out of bound"
        figure.suptitle(heading(title, description, 12), fontsize=HEADING_SIZE)
    return figure


def table_similarity_figure(table, exp: Expectation, *, title: str | None = None, row_kind: str | None = None,
                            dpi: float = DPI) -> Figure:
    """The cosine similarity of every pair of rows of the table (NaN read as 0) beside the
    expected table's, on 11 x 5 inches, both in ``RdBu_r`` from -1 to 1 on one colorbar."""
    table, rows, title = _checked(table, exp, title, row_kind)
    return _similarity_figure(table, exp, rows, title, dpi)


def _similarity_figure(table: np.ndarray, exp: Expectation, rows: Rows, title: str, dpi: float) -> Figure:
    panels = ((np.nan_to_num(table), "this table"), (exp.table, f"expected ({exp.convention.name()})"))
    with figure_style():
        figure = new_figure((11, 5), dpi)
        figure.set_layout_engine("constrained")
        axes = figure.subplots(1, 2)
        for ax, (values, name) in zip(axes, panels, strict=True):
            image = ax.imshow(cosine_similarity(values), cmap="RdBu_r", vmin=-1, vmax=1)
            ax.set_title(name)
            rows.label(ax.xaxis)
            rows.label(ax.yaxis)
        figure.colorbar(image, ax=list(axes), label="Cosine similarity")
        figure.suptitle(heading(title, f"cosine similarity of every pair of {rows.kind}s", 11),
                        fontsize=HEADING_SIZE)
    return figure


def table_figures(table, exp: Expectation, *, title: str | None = None, row_kind: str | None = None,
                  dpi: float = DPI, comparison: Comparison | None = None) -> dict[str, Figure]:
    """The four pictures of ``table`` under ``exp`` by file stem: ``heatmap``,
    ``row_profiles``, ``similarity`` and ``difference``. ``title`` is "TARGET under
    CONVENTION, DTYPE"; ``row_kind`` says whether the rows are positions or timesteps
    (None: timesteps when ``exp``'s positions are not ``0 .. n - 1``); ``comparison`` is
    :func:`~posenc_spec.tolerance.compare` of the table with ``exp``, when the caller has it.
    The table is checked, and its error ratios computed, once for the four."""
    table, rows, title = _checked(table, exp, title, row_kind)
    ratio = error_ratio(table, exp.table, exp.tolerance)
    with quiet_floats():
        summary = compare(table, exp.table, exp.tolerance) if comparison is None else comparison
    return {
        "heatmap": _heatmap_figure(table, rows, title, dpi),
        "row_profiles": _row_profiles_figure(table, exp, ratio, None, rows, title, dpi),
        "similarity": _similarity_figure(table, exp, rows, title, dpi),
        "difference": _difference_figure(table, exp.table, ratio, summary, rows, title, dpi),
    }


def write_table_figures(table, exp: Expectation, out_dir, *, title: str | None = None,
                        row_kind: str | None = None, dpi: float = DPI,
                        comparison: Comparison | None = None) -> dict[str, Path]:
    """Write the PNGs of :func:`table_figures` (``heatmap.png``, ``row_profiles.png``,
    ``similarity.png``, ``difference.png``) into ``out_dir`` (created if needed); returns
    the paths by name. Tables with NaN still get pictures: those elements are left blank."""
    figures = table_figures(table, exp, title=title, row_kind=row_kind, dpi=dpi, comparison=comparison)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return {name: save_png(figure, out_dir / f"{name}.png") for name, figure in figures.items()}
