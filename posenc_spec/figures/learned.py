"""Figures of a learned position-embedding table (seeds 001 and 004), for any table.

Each function takes a 2-D array, positions x embedding dimensions (GPT-2's ``wpe`` is
1024 x 768, MiniLM's 512 x 384), and returns a :class:`matplotlib.figure.Figure`. They
load nothing: the caller brings the table. The same functions draw the sinusoidal
tables where the seeds do (seed 000's similarity matrix, seed 004's grid of formula
dimensions).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .arrays import as_table, cosine_similarity
from .style import DPI, figure_style, hide_spines, new_figure


def learned_table_figure(table, title: str = "Position embedding matrix", *, vmin: float = -0.2,
                         vmax: float = 0.2, cmap: str = "viridis", dpi: float = DPI) -> Figure:
    """Seed 004: the whole table transposed (dimensions down, positions across),
    ``imshow(table.T, aspect='auto', vmin=-.2, vmax=.2)`` on a 10 x 4 inch figure."""
    table = as_table(table)
    with figure_style():
        figure = new_figure((10, 4), dpi)
        axes = figure.add_subplot()
        axes.imshow(table.T, aspect="auto", vmin=vmin, vmax=vmax, cmap=cmap)
        axes.set(xlabel="Token position", ylabel="Dimensions", title=title)
    return figure


def similarity_over_positions_figure(table, title: str | None = "Position-wise Similarity of Positional Embeddings",
                                     *, cmap: str = "Blues", figsize=(6.4, 4.8), dpi: float = DPI) -> Figure:
    """Seeds 000 and 001: the cosine similarity of every pair of positions (rows), in
    ``Blues`` with all four spines hidden. Seed 000 draws it without a title on 6 x 4
    inches (``title=None, figsize=(6, 4)``)."""
    table = as_table(table)
    with figure_style():
        figure = new_figure(figsize, dpi)
        axes = figure.add_subplot()
        axes.imshow(cosine_similarity(table), cmap=cmap)
        if title:
            axes.set_title(title)
        axes.set(xlabel="Position", ylabel="Position")
        hide_spines(axes)
    return figure


def similarity_two_ways_figure(table, *, cmap: str = "viridis", dpi: float = DPI) -> Figure:
    """Seed 004: cosine similarity between positions ("time", rows) and between embedding
    dimensions (columns), side by side on 12 x 5 inches, both from -1 to 1 with colorbars."""
    table = as_table(table)
    over_time = cosine_similarity(table)
    across_dimensions = cosine_similarity(table.T)
    with figure_style():
        figure = new_figure((12, 5), dpi)
        axes = figure.subplots(1, 2)
        panels = (
            (over_time, 'Token index ("time")', '$S_c$ over "time"'),
            (across_dimensions, "Embedding index", "$S_c$ across embeddings"),
        )
        for ax, (similarity, label, title) in zip(axes, panels, strict=True):
            image = ax.imshow(similarity, vmin=-1, vmax=1, cmap=cmap)
            ax.set(xlabel=label, ylabel=label, title=title)
            colorbar = figure.colorbar(image, ax=ax, pad=0.02, fraction=0.046)
            colorbar.ax.tick_params(labelsize=10)
            colorbar.ax.set_yticks(np.arange(-1, 1.1, 0.5))
        figure.tight_layout()
    return figure


def pick_dimensions(width: int, count: int = 12, seed: int = 0) -> np.ndarray:
    """``count`` distinct embedding dimensions drawn with a seeded generator, sorted:
    the same picks on every run and every machine."""
    if count > width:
        raise ValueError(f"count must be at most the table's {width} dimensions, got {count}")
    return np.sort(np.random.default_rng(seed).choice(width, size=count, replace=False))


def single_dimensions_grid_figure(table, seed: int = 0, *, dims=None,
                                  xlabel: str = "Start of text <---> end of context window",
                                  dpi: float = DPI) -> Figure:
    """Seed 004: a 3 x 4 grid (16 x 6 inches), each panel one embedding dimension (one
    column of the table) over all positions, in black with a dashed zero line.

    The seed labels each panel "Position index"; the index picks an embedding dimension,
    and the panels say so. The twelve dimensions come from :func:`pick_dimensions` with
    ``seed`` (the seed drew them unseeded), or from ``dims``.
    """
    table = as_table(table)
    num_positions, width = table.shape
    if dims is None:
        dims = pick_dimensions(width, 12, seed)
    dims = [int(d) for d in np.asarray(dims).ravel()]
    if len(dims) != 12 or not all(0 <= d < width for d in dims):
        raise ValueError(f"dims must be 12 dimensions in 0..{width - 1}, got {dims}")
    with figure_style():
        figure = new_figure((16, 6), dpi)
        axes = figure.subplots(3, 4)
        for ax, dim in zip(axes.flat, dims, strict=True):
            ax.plot(table[:, dim], "k", label=f"Embedding dimension {dim}")
            ax.axhline(0, linestyle="--", color="gray", zorder=-3)
            ax.set(xticks=[], yticks=[0], xlim=[0, num_positions])
            ax.legend(fontsize=10)
        # The x-axis label on the last panel only, as in the seed.
        axes.flat[-1].set_xlabel(xlabel, fontsize=12)
        figure.tight_layout()
    return figure
