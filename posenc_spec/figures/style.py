"""One rendering setup for every figure: matplotlib's default style, DejaVu Sans, a fixed dpi.

Every plotting function builds its figure inside :func:`figure_style`, and everything
that saves a figure (the ``plot`` command, the figure tests through pytest-mpl's
``style=``) saves it inside the same style: some rcParams (tick sizes, for one) are read
only when the figure is drawn. DejaVu Sans and the mathtext DejaVu fonts ship with
matplotlib, so no system font enters a picture.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib
import matplotlib.style
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

# No "Software" entry (it names the matplotlib version), so a PNG depends on its pixels only.
SAVEFIG_KWARGS = {"metadata": {"Software": None}}


@contextlib.contextmanager
def figure_style():
    """rcParams reset to matplotlib's defaults, then :data:`STYLE`, for the duration."""
    with matplotlib.style.context(STYLE, after_reset=True):
        yield


def new_figure(figsize, dpi) -> Figure:
    """A Figure on an Agg canvas, outside pyplot: nothing global keeps it alive."""
    figure = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(figure)
    return figure


def save_png(figure: Figure, path) -> Path:
    """Save ``figure`` as a PNG under :data:`STYLE` without version metadata."""
    path = Path(path)
    with figure_style():
        figure.savefig(path, format="png", **SAVEFIG_KWARGS)
    return path
