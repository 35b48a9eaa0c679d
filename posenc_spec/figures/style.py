"""One rendering setup for every figure: matplotlib's default style, DejaVu Sans, a fixed dpi,
and one way to head a figure (:func:`heading`, at :data:`HEADING_SIZE`).

Every plotting function builds its figure inside :func:`figure_style`, and everything
that saves a figure (the ``plot`` command, the figure tests through pytest-mpl's
``style=``) saves it inside the same style: some rcParams (tick sizes, for one) are read
only when the figure is drawn. DejaVu Sans and the mathtext DejaVu fonts ship with
matplotlib, so no system font enters a picture.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import matplotlib
import matplotlib.style
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# The seeds were drawn in notebooks with matplotlib's default style; keep it, and pin the
# few settings a local matplotlibrc could otherwise change.
STYLE = [
    "default",
    {
        "font.family": ["DejaVu Sans"],
        "mathtext.fontset": "dejavusans",
        "savefig.dpi": "figure",
        "savefig.bbox": None,
        "savefig.facecolor": "white",
        "savefig.transparent": False,
        "svg.hashsalt": "posenc-spec",
    },
]

# Pictures are for reading on a screen and live in the repository as baselines: 72 dpi
# keeps a 512-column row profile one pixel per value while the PNGs stay small.
DPI = 72

HEADING_SIZE = 10  # points
# Lower-case names and paths in DejaVu Sans take about 0.55 em a character (digits 0.64,
# capitals up to 0.8): at 0.6 em, a title line of this many characters per inch of figure
# width fits its figure unless it is mostly digits or capitals.
HEADING_CHARS_PER_INCH = 72 / (0.6 * HEADING_SIZE)

# No "Software" entry (it names the matplotlib version), so a PNG depends on its pixels only.
SAVEFIG_KWARGS = {"metadata": {"Software": None}}


@contextlib.contextmanager
def figure_style():
    """rcParams reset to matplotlib's defaults, then :data:`STYLE`, for the duration, and
    NumPy's floating-point warnings off (:func:`quiet_floats`)."""
    with matplotlib.style.context(STYLE, after_reset=True), quiet_floats():
        yield


def quiet_floats():
    """NumPy's floating-point warnings off, for drawing tables under test: a table may hold
    values near the largest float, Inf or NaN, and the arithmetic of a picture (a range of
    2e308, a colour scale's steps) overflows where the picture already shows what it should
    (a value at the end of its scale, NaN left blank). Such a warning tells a reader nothing."""
    return np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore")


def new_figure(figsize, dpi) -> Figure:
    """A Figure on an Agg canvas, outside pyplot: nothing global keeps it alive."""
    figure = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(figure)
    return figure


def png_bytes(figure: Figure) -> bytes:
    """``figure`` as a PNG drawn under :data:`STYLE`, without version metadata."""
    buffer = io.BytesIO()
    with figure_style():
        figure.savefig(buffer, format="png", **SAVEFIG_KWARGS)
    return buffer.getvalue()


def save_png(figure: Figure, path) -> Path:
    """Save ``figure`` as a PNG (:func:`png_bytes`) at ``path``."""
    path = Path(path)
    path.write_bytes(png_bytes(figure))
    return path


def heading(title: str, description: str, width: float) -> str:
    """``title`` over ``description`` for a figure ``width`` inches wide. A title longer than
    a line becomes two: what stands before its last ``" under "`` (the target, its size)
    keeps its end, where the function's name is; the convention and dtype go on the second
    line. A line still too long keeps its two ends."""
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    limit = int(width * HEADING_CHARS_PER_INCH)
    target, under, convention = title.rpartition(" under ")
    if len(title) <= limit:
        lines = [title]
    elif under:
        lines = [_keep_end(target, limit), _keep_ends(f"under {convention}", limit)]
    else:
        lines = [_keep_ends(title, limit)]
    return "\n".join([*lines, description])


def _keep_end(text: str, limit: int) -> str:
    return text if len(text) <= limit else "\N{HORIZONTAL ELLIPSIS}" + text[len(text) - limit + 1:]


def _keep_ends(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    start = (limit - 1) // 2
    return text[:start] + "\N{HORIZONTAL ELLIPSIS}" + text[len(text) - (limit - 1 - start):]


def hide_spines(axes) -> None:
    """No frame around ``axes`` (the seed notebooks' tables and heatmaps have none)."""
    for side in ("top", "right", "bottom", "left"):
        axes.spines[side].set_visible(False)
