"""Plotting functions for sinusoidal and learned position tables, one per seed figure.

Every function takes arrays and returns a :class:`matplotlib.figure.Figure` drawn in one
fixed style (:mod:`posenc_spec.figures.style`); none of them loads or computes a table.
``posenc-spec plot`` (:mod:`posenc_spec.figures.command`) draws a target's table and its
difference from the expected one.
"""

from .animation import TimestepSweep, timestep_sweep_frame_figure
from .diagnostics import difference_figure, error_ratio, write_table_figures
from .learned import (
    learned_table_figure,
    pick_dimensions,
    similarity_over_positions_figure,
    similarity_two_ways_figure,
    single_dimensions_grid_figure,
)
from .sinusoidal import (
    formula_table_figure,
    position_heatmap_figure,
    position_pcolormesh_figure,
    row_profiles_figure,
    timestep_embedding_figure,
)
from .style import DPI, SAVEFIG_KWARGS, STYLE, figure_style, save_png

__all__ = [
    "DPI",
    "SAVEFIG_KWARGS",
    "STYLE",
    "TimestepSweep",
    "difference_figure",
    "error_ratio",
    "figure_style",
    "formula_table_figure",
    "learned_table_figure",
    "pick_dimensions",
    "position_heatmap_figure",
    "position_pcolormesh_figure",
    "row_profiles_figure",
    "save_png",
    "similarity_over_positions_figure",
    "similarity_two_ways_figure",
    "single_dimensions_grid_figure",
    "timestep_embedding_figure",
    "timestep_sweep_frame_figure",
    "write_table_figures",
]
