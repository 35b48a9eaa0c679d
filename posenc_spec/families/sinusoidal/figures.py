"""Figures of sinusoidal tables (seeds 000, 002, 003 and 004), each from a given array.

The arrays come from whatever computes the table (the reference implementations, a
target under test); nothing here computes or loads one.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from posenc_spec.figures.arrays import as_table, check_rows
from posenc_spec.figures.style import DPI, figure_style, hide_spines, new_figure

SEED000_ROWS = (0, 1, 2, 10, 50, 100, 150, 200, 250, 299)


def row_profiles_figure(table, rows=SEED000_ROWS, *, reference=None, color: str = "blue",
                        panel_height: float = 1.0, dpi: float = DPI) -> Figure:
    """Seed 000: one thin 12-inch panel per row (position), the row's values over the
    embedding dimensions, x from 0 to the width and y from -1.5 to 1.5.

    The seed drew ten separate 12 x 1 figures; here they are one figure, one panel each,
    named by position. ``reference`` (same shape) is drawn underneath in grey, for
    comparing a table with the expected one.
    """
    table = as_table(table)
    rows = check_rows(rows, table.shape[0])
    if reference is not None:
        reference = as_table(reference, "reference")
        if reference.shape != table.shape:
            raise ValueError(f"reference must have the table's shape {table.shape}, got {reference.shape}")
    width = table.shape[1]
    with figure_style():
        figure = new_figure((12, panel_height * len(rows)), dpi)
        axes = figure.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
        for ax, row in zip(axes, rows, strict=True):
            if reference is not None:
                ax.plot(reference[row], color="0.6", linewidth=2)
            ax.plot(table[row], alpha=0.5, c=color)
            ax.set_xlim([0, width])
            ax.set_ylim([-1.5, 1.5])
            ax.set_ylabel(f"{row}", rotation=0, ha="right", va="center")
        axes[-1].set_xlabel("Embedding dimension")
        figure.supylabel("Position")
        figure.tight_layout()
    return figure


def position_heatmap_figure(table, *, cmap: str = "Blues", figsize=(6, 4), dpi: float = DPI) -> Figure:
    """Seed 000: the table as an image, positions down and dimensions across, in
    ``Blues`` with all four spines hidden, on 6 x 4 inches."""
    table = as_table(table)
    with figure_style():
        figure = new_figure(figsize, dpi)
        axes = figure.add_subplot()
        axes.imshow(table, cmap=cmap)
        axes.set(xlabel="Embedding Dimensions", ylabel="Position in Sequence")
        hide_spines(axes)
    return figure


def position_pcolormesh_figure(table, *, cmap: str = "viridis", dpi: float = DPI) -> Figure:
    """Seed 002: ``pcolormesh`` of the table on 12 x 8 inches in ``viridis``, depth (the
    embedding dimension) across, position down (the y axis inverted), with a colorbar."""
    table = as_table(table)
    num_positions, width = table.shape
    with figure_style():
        figure = new_figure((12, 8), dpi)
        axes = figure.add_subplot()
        mesh = axes.pcolormesh(table, cmap=cmap)
        axes.set_xlabel("Depth")
        axes.set_xlim((0, width))
        axes.set_ylim((num_positions, 0))
        axes.set_ylabel("Position")
        figure.colorbar(mesh, ax=axes)
    return figure


def timestep_embedding_figure(embedding, *, plot_every: int = 50, cmap: str = "magma", dpi: float = DPI) -> Figure:
    """Seed 003: the timestep embeddings as a ``magma`` heatmap (timesteps down, dimensions
    across) over every ``plot_every``-th embedding drawn as a line in the colormap's colour
    for its timestep, on 20 x 10 inches with the colorbar at the right.

    The seed's ``extent=[0, d-1, 0, n]`` put timestep 0 at the top of an axis labelled n;
    here each row sits at its own timestep and each column at its own dimension, in line
    with the curves below.
    """
    embedding = as_table(embedding, "embedding")
    if isinstance(plot_every, bool) or not isinstance(plot_every, (int, np.integer)) or plot_every < 1:
        raise ValueError(f"plot_every must be a positive int, got {plot_every!r}")
    num_steps, width = embedding.shape
    x = np.arange(width)
    colours = matplotlib.colormaps[cmap].resampled(num_steps)
    with figure_style():
        figure = new_figure((20, 10), dpi)
        top, bottom = figure.subplots(2, 1, gridspec_kw={"height_ratios": [3, 1], "hspace": 0.3})
        image = top.imshow(embedding, aspect="auto", cmap=cmap)
        top.set(xlabel="Embedding dimensions", ylabel="Timesteps", title="Embeddings Visualization")
        for step in range(0, num_steps, plot_every):
            bottom.plot(x, embedding[step], color=colours(step))
        bottom.set(xlabel="Embedding dimensions", ylabel=f"Every {plot_every}th embedding",
                   title="Embeddings Visualization")
        figure.subplots_adjust(right=0.85)
        colorbar_axes = figure.add_axes((0.88, 0.15, 0.02, 0.7))
        figure.colorbar(image, cax=colorbar_axes, label="Embedding values")
    return figure


def formula_table_figure(table, dims=None, *, vmin: float = -1, vmax: float = 1, cmap: str = "viridis",
                         dpi: float = DPI) -> Figure:
    """Seed 004: the table transposed (dimensions down, token order across) beside a few
    of its dimensions traced over token order, each marked on the image by a dashed line
    in its trace's colour; 12 x 4 inches. ``dims`` defaults to the seed's
    ``linspace(200, 600, 4)`` (clipped to the width).

    The seed titled the traces "A few position embeddings"; they are embedding
    dimensions (columns), and the title and legend say so.
    """
    table = as_table(table)
    num_positions, width = table.shape
    if dims is None:
        dims = np.linspace(min(200, width - 1), min(600, width - 1), 4, dtype=int)
    dims = check_rows(dims, width, "dims")
    with figure_style():
        figure = new_figure((12, 4), dpi)
        image_axes, trace_axes = figure.subplots(1, 2)
        image_axes.imshow(table.T, vmin=vmin, vmax=vmax, cmap=cmap)
        image_axes.set(ylabel="Embedding dimensions", xlabel='Token order ("time")', title="All position embeddings")
        lines = trace_axes.plot(table[:, dims], label=[f"dimension {d}" for d in dims])
        trace_axes.set(ylabel="Weight value", xlabel='Token order ("time")', xlim=[0, num_positions],
                       title="A few embedding dimensions")
        trace_axes.legend(fontsize=8, loc="lower left")
        for line, dim in zip(lines, dims, strict=True):
            image_axes.axhline(dim, linestyle="--", color=line.get_color(), linewidth=1.8)
        figure.tight_layout()
    return figure
