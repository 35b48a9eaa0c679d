"""Pictures of a sinusoidal table or timestep embedding under test beside the table the
declared convention gives (``posenc-spec plot``, ``check --plots``, the Python API's
``report.figures``), each headed by the target, its convention and dtype (the ``title``),
rows (positions or timesteps) down and embedding dimensions across:

- ``heatmap.png`` (:func:`table_heatmap_figure`): the values, on a colorbar of values;
- ``row_profiles.png`` (:func:`table_row_profiles_figure`): a few rows, the table's solid
  and the expected values dashed, elements out of bound marked red, a legend per row;
- ``similarity.png`` (:func:`table_similarity_figure`): the cosine similarity of every pair
  of rows, beside the expected table's, on one colorbar;
- ``difference.png`` (:func:`~posenc_spec.figures.difference.difference_figure`): the
  signed difference and each element's error over its own tolerance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from posenc_spec.figures.arrays import as_table, check_rows, cosine_similarity
from posenc_spec.figures.difference import LARGEST_SHOWN_VALUE, Rows, difference_panels, error_ratio
from posenc_spec.figures.style import DPI, HEADING_SIZE, figure_style, heading, new_figure, quiet_floats, save_png
from posenc_spec.text import printable
from posenc_spec.tolerance import Comparison, compare

from .figures import SEED000_ROWS
from .properties import Expectation, expectation

PROFILE_PANEL_HEIGHT = 1.0  # inches, seed 000's row panels


def table_labels(declaration, dtype: str, slot: str | None = None) -> tuple[str, str]:
    """The title of the pictures of a declared target's table ("TARGET at SLOT under
    CONVENTION, DTYPE", without " at SLOT" when None; the target's name as a terminal would
    show it, no control character drawn as a glyph) and what its rows are: timesteps for
    the timesteps API, else positions."""
    where = f" at {slot}" if slot is not None else ""
    title = f"{printable(declaration.name)}{where} under {declaration.convention_name()}, {dtype}"
    return title, "timestep" if declaration.api == "timesteps" else "position"


def kept_figures(report) -> dict:
    """The four figures (:func:`table_figures`) of the table a report kept (``report.kept``,
    not None), by name."""
    kept, declaration = report.kept, report.declaration
    title, row_kind = table_labels(declaration, kept.dtype, kept.slot)
    exp = expectation(kept.positions, kept.table.shape[1], declaration.spec.convention, kept.dtype)
    return table_figures(kept.table, exp, title=title, row_kind=row_kind)


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
        "difference": difference_panels(table, exp.table, ratio, summary, rows, title, dpi),
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
