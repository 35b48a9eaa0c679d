"""Plotting functions for sinusoidal and learned position tables, one per seed figure, and
for rotary embeddings (:mod:`.rope`: wavelengths per scaling type, the ``q(m) . k(n)`` scores).

Every function takes arrays and returns a :class:`matplotlib.figure.Figure` drawn in one
fixed style (:mod:`posenc_spec.figures.style`); none of them loads or computes a table.
``posenc-spec plot`` (:mod:`posenc_spec.commands.plot`) draws a target's table and its
difference from the expected one, a RoPE target's arrays against the oracle's, or a
target's ULP distances from a snapshot.
"""

from __future__ import annotations

from posenc_spec.lazy import lazy_exports

# Each public name and the submodule that defines it. The submodules import matplotlib;
# they are imported on first use (PEP 562), so that importing this package (to register
# ``posenc-spec plot``, say) leaves ``posenc-spec check`` free of matplotlib.
_SOURCES = {
    "TimestepSweep": "animation",
    "timestep_sweep_frame_figure": "animation",
    "difference_figure": "diagnostics",
    "error_ratio": "diagnostics",
    "table_figures": "diagnostics",
    "write_table_figures": "diagnostics",
    "learned_table_figure": "learned",
    "pick_dimensions": "learned",
    "similarity_over_positions_figure": "learned",
    "similarity_two_ways_figure": "learned",
    "single_dimensions_grid_figure": "learned",
    "formula_table_figure": "sinusoidal",
    "position_heatmap_figure": "sinusoidal",
    "position_pcolormesh_figure": "sinusoidal",
    "rope_difference_figure": "rope",
    "rope_difference_figures": "rope",
    "rope_score_figure": "rope",
    "rope_wavelength_figure": "rope",
    "write_rope_difference_figures": "rope",
    "row_profiles_figure": "sinusoidal",
    "timestep_embedding_figure": "sinusoidal",
    "DPI": "style",
    "SAVEFIG_KWARGS": "style",
    "STYLE": "style",
    "figure_style": "style",
    "save_png": "style",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _SOURCES)


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
    "rope_difference_figure",
    "rope_difference_figures",
    "rope_score_figure",
    "rope_wavelength_figure",
    "row_profiles_figure",
    "save_png",
    "similarity_over_positions_figure",
    "similarity_two_ways_figure",
    "single_dimensions_grid_figure",
    "table_figures",
    "timestep_embedding_figure",
    "timestep_sweep_frame_figure",
    "write_rope_difference_figures",
    "write_table_figures",
]
