"""The picture of a regression check: how far each element of one output moved, in ULPs.

:func:`ulp_figure` draws the distances :func:`posenc_spec.regression.ulp.ulp_distance`
returns for one output of a recorded call (uint64, with
:data:`~posenc_spec.regression.ulp.INFINITE_ULP` where a NaN or an infinity meets another
value) as a heatmap on a log colour scale. An element that did not move is white
("identical"); an infinite distance is red, above the top of the colorbar.

A picture has fewer pixels than a large output has elements, and shrinking an image
averages or drops elements: one moved element among four million would vanish. So an
output larger than :data:`MAX_SHOWN` cells is drawn as the largest distance of each block
of elements (:func:`block_maxima`), and the heading says how large the blocks are.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..regression.ulp import DTYPES, INFINITE_ULP, format_ulp
from .style import DPI, HEADING_SIZE, figure_style, heading, new_figure

# The most rows and columns of cells drawn: fewer than the heatmap has pixels on a 9 x 5
# inch figure at the default dpi, so that every cell keeps at least a pixel.
MAX_SHOWN = (160, 480)
FIGSIZE = (9, 5)
IDENTICAL_COLOUR = "white"
INFINITE_COLOUR = "red"
# The colour scale spans at least this many ULPs, so that small distances keep a readable colorbar.
SMALLEST_SCALE_TOP = 10


def block_maxima(distances: np.ndarray, limits=MAX_SHOWN) -> tuple[np.ndarray, tuple[int, int]]:
    """The largest distance of each block of ``step`` rows by columns of the 2-D
    ``distances``, with ``step`` the smallest that leaves at most ``limits`` blocks each
    way (the last blocks padded with zeros); returns the maxima and ``step``."""
    steps = tuple(-(-size // limit) for size, limit in zip(distances.shape, limits, strict=True))
    if steps == (1, 1):
        return distances, steps
    (num_rows, num_columns), (row_step, column_step) = distances.shape, steps
    padded = np.zeros((-(-num_rows // row_step) * row_step, -(-num_columns // column_step) * column_step),
                      dtype=distances.dtype)
    padded[:num_rows, :num_columns] = distances
    blocks = padded.reshape(padded.shape[0] // row_step, row_step, padded.shape[1] // column_step, column_step)
    return blocks.max(axis=(1, 3)), steps


def _checked(distances, title, dtype) -> np.ndarray:
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    array = np.asarray(distances)
    if array.dtype.kind != "u":
        raise TypeError(f"distances must be unsigned integers (ulp_distance's uint64), got {array.dtype}")
    if array.ndim not in (1, 2):
        raise ValueError(f"distances must be 1-D or 2-D (positions x features), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"distances must not be empty, got shape {array.shape}")
    return array.astype(np.uint64, copy=False)


def _summary(distances: np.ndarray) -> str:
    infinite = distances == INFINITE_ULP
    moved = np.count_nonzero(distances)
    if not moved:
        return f"all {distances.size} elements identical"
    summary = f"{moved} of {distances.size} elements moved"
    if moved > np.count_nonzero(infinite):
        summary += f"; largest finite distance {format_ulp(distances[~infinite].max())} ULP"
    if infinite.any():
        summary += f"; {np.count_nonzero(infinite)} infinite (NaN or infinity against another value)"
    return summary


def ulp_figure(distances: np.ndarray, *, title: str, dtype: str, dpi: float = DPI) -> Figure:
    """The ULP distance of each element of one output (positions down, features across; a
    1-D output as one row) on 9 x 5 inches: ``viridis`` on a log scale from 1 ULP to the
    largest finite distance, 0 in white ("identical"), infinite in red (above the
    colorbar's top, and in the legend). ``title`` heads a summary line: how many elements
    moved, the largest finite distance, how many are infinite. ``dtype`` (the output's, one
    of :data:`~posenc_spec.regression.ulp.DTYPES`) names the colorbar's unit."""
    distances = _checked(distances, title, dtype)
    one_row = distances.ndim == 1
    grid = distances.reshape(1, -1) if one_row else distances
    shown, (row_step, column_step) = block_maxima(grid)
    infinite = shown == INFINITE_ULP
    finite_top = float(shown[~infinite].max(initial=0))
    norm = LogNorm(vmin=1, vmax=max(finite_top, SMALLEST_SCALE_TOP))
    values = np.ma.masked_equal(shown.astype(np.float64), 0.0)  # masked: drawn in the "bad" colour
    # Above the scale's top: drawn in the "over" colour (an actual inf would be masked as invalid).
    values[infinite] = 2 * norm.vmax
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=IDENTICAL_COLOUR, over=INFINITE_COLOUR)
    description = _summary(distances)
    if (row_step, column_step) != (1, 1):
        description += f"\neach cell the largest of a block of {row_step} x {column_step} elements"
    num_rows, num_columns = grid.shape
    extent = (-0.5, shown.shape[1] * column_step - 0.5, shown.shape[0] * row_step - 0.5, -0.5)
    with figure_style():
        figure = new_figure(FIGSIZE, dpi)
        figure.set_layout_engine("constrained")
        axes = figure.add_subplot()
        image = axes.imshow(values, cmap=cmap, norm=norm, aspect="auto", extent=extent, interpolation="nearest",
                            interpolation_stage="rgba")
        axes.set(xlim=(-0.5, num_columns - 0.5), ylim=(num_rows - 0.5, -0.5))
        if one_row:
            axes.set(xlabel="Element", yticks=[])
        else:
            axes.set(xlabel="Feature (column)", ylabel="Position (row)")
        figure.colorbar(image, ax=axes, extend="max", label=f"ULPs of {dtype} (log scale; red above: infinite)")
        axes.legend(handles=[Patch(facecolor=IDENTICAL_COLOUR, edgecolor="black", label="0 ULP: identical"),
                             Patch(facecolor=INFINITE_COLOUR, edgecolor="black",
                                   label="infinite: NaN or infinity against another value")],
                    loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, fontsize=9, frameon=False)
        figure.suptitle(heading(title, description, FIGSIZE[0]), fontsize=HEADING_SIZE)
    return figure
