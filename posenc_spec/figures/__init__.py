"""Plotting in one fixed style, from given arrays: the difference of a table from the one it
should be (:mod:`.difference`), learned position tables (:mod:`.learned`), the pictures of
a gate run (:mod:`.gate_plots`) and the style itself (:mod:`.style`).

Every function takes arrays and returns a :class:`matplotlib.figure.Figure`; none of them
loads or computes a table. Each family's own figures (its seed figures, the pictures
``posenc-spec plot`` draws of its targets) live in its package,
``posenc_spec.families.<name>.figures``, and draw in this style.
"""

from __future__ import annotations

from posenc_spec.lazy import lazy_exports

# Each public name and the submodule that defines it. The submodules import matplotlib;
# they are imported on first use (PEP 562), so that importing this package (to register
# ``posenc-spec plot``, say) leaves ``posenc-spec check`` free of matplotlib.
_SOURCES = {
    "Rows": "difference",
    "difference_figure": "difference",
    "error_ratio": "difference",
    "learned_table_figure": "learned",
    "pick_dimensions": "learned",
    "similarity_over_positions_figure": "learned",
    "similarity_two_ways_figure": "learned",
    "single_dimensions_grid_figure": "learned",
    "DPI": "style",
    "SAVEFIG_KWARGS": "style",
    "STYLE": "style",
    "figure_style": "style",
    "hide_spines": "style",
    "save_png": "style",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _SOURCES)


__all__ = sorted(_SOURCES)
