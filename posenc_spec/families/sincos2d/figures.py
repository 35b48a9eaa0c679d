"""Figures of 2-D sincos tables, each drawn from given arrays (nothing here computes a value).

- :func:`halves_figure`: the first sine column of each half over the ``H x W`` grid, the
  target's beside the expected: a half that encodes the row varies down the picture and is
  constant across it; swapped axes, a transposed token order or positions normalised by the
  wrong length show at a glance on a non-square grid.
- the difference picture of ``posenc-spec plot`` is the core's
  :func:`~posenc_spec.figures.difference.difference_figure` of the tokens x features table.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from posenc_spec.figures.style import DPI, figure_style, heading, new_figure

HALVES_FIGSIZE = (9, 7)
HALVES_FILE = "halves.png"
DIFFERENCE_FILE = "difference.png"


def halves_figure(actual: np.ndarray, expected: np.ndarray, columns: tuple[int, int], names: tuple[str, str], *,
                  title: str, dpi: float = DPI) -> Figure:
    """Four panels: column ``columns[h]`` of the ``(H, W, D)`` grids ``actual`` (top) and
    ``expected`` (bottom), for each half ``h`` (``names[h]``: what the half is declared to encode)."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape or actual.ndim != 3:
        raise ValueError(f"actual and expected must be (H, W, D) grids of one shape, got {actual.shape} and "
                         f"{expected.shape}")
    with figure_style():
        figure = new_figure(HALVES_FIGSIZE, dpi)
        panels = figure.subplots(2, 2, squeeze=False)
        for row, (grid, whose) in enumerate(((actual, "target"), (expected, "expected"))):
            for half, (column, name) in enumerate(zip(columns, names, strict=True)):
                axes = panels[row][half]
                image = axes.imshow(grid[:, :, column], cmap="RdBu_r", vmin=-1, vmax=1, aspect="equal",
                                    interpolation="nearest")
                axes.set_title(f"{whose}: column {column} ({name})", fontsize=9)
                axes.set_xlabel("grid column")
                axes.set_ylabel("grid row")
        figure.colorbar(image, ax=panels.ravel().tolist(), shrink=0.8)
        figure.suptitle(heading(title, "the first sine column of each half over the grid", HALVES_FIGSIZE[0]),
                        fontsize=10)
    return figure
