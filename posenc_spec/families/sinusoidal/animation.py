"""Seed 003's animation: a line sweeps the timestep heatmap, the current embedding below.

:class:`TimestepSweep` holds the figure and draws any frame on request, so a single
frame can be saved and compared as an image; :meth:`TimestepSweep.animation` wraps it in
a :class:`~matplotlib.animation.FuncAnimation` of one frame per timestep for
``to_jshtml()`` or a GIF (``PillowWriter``).
"""

from __future__ import annotations

import numpy as np
from matplotlib.animation import FuncAnimation
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from posenc_spec.figures.arrays import as_table
from posenc_spec.figures.style import DPI, figure_style, new_figure


class _SavingCanvas(FigureCanvasAgg):
    """An Agg canvas that draws when a frame is rendered, not on ``draw_idle``.

    ``Animation.save`` (and so ``to_jshtml``) requests an idle redraw after each frame's
    update and then renders the frame, which draws it again; with no screen to refresh,
    the first draw is wasted and saving takes twice as long.
    """

    def draw_idle(self, *args, **kwargs):
        pass


class TimestepSweep:
    """Seed 003's animated figure for ``embedding`` (timesteps x dimensions) on 20 x 10
    inches: the ``magma`` heatmap with a white line at the current timestep, a shared
    colorbar, and below it the current timestep's embedding on fixed limits (x from 0 to
    the width, y from the table's minimum to its maximum).

    The seed's heatmap extent put row 0 at the top of an axis whose 0 is at the bottom,
    so its line swept upward while the rows it marked went downward; here the line sits
    on the row it names.
    """

    def __init__(self, embedding, *, cmap: str = "magma", dpi: float = DPI):
        self.embedding = as_table(embedding, "embedding")
        num_steps, width = self.embedding.shape
        self._x = np.arange(width)
        with figure_style():
            self.figure: Figure = new_figure((20, 10), dpi)
            _SavingCanvas(self.figure)
            heatmap_axes, line_axes = self.figure.subplots(2, 1, gridspec_kw={"height_ratios": [3, 1]})
            image = heatmap_axes.imshow(self.embedding, aspect="auto", cmap=cmap)
            colorbar = self.figure.colorbar(image, ax=[heatmap_axes, line_axes], location="right", pad=0.05)
            colorbar.set_label("Embedding values")
            heatmap_axes.set(xlabel="Embedding dimensions", ylabel="Timesteps", title="Embeddings Visualization")
            self.sweep_line = heatmap_axes.axhline(0, color="white", linewidth=2)
            (self.embedding_line,) = line_axes.plot([], [], lw=2)
            line_axes.set_xlim(0, width)
            line_axes.set_ylim(float(self.embedding.min()), float(self.embedding.max()))
            line_axes.set(xlabel="Embedding dimensions", ylabel="Embedding value",
                          title="Embedding Vector for Current Timestep")

    @property
    def num_frames(self) -> int:
        """One frame per timestep."""
        return self.embedding.shape[0]

    def draw_frame(self, frame: int):
        """Move the sweep to timestep ``frame`` and show its embedding; returns the changed artists."""
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)) or not 0 <= frame < self.num_frames:
            raise ValueError(f"frame must be an int in 0..{self.num_frames - 1}, got {frame!r}")
        self.sweep_line.set_ydata([frame, frame])
        self.embedding_line.set_data(self._x, self.embedding[frame])
        return self.sweep_line, self.embedding_line

    def animation(self, interval: int = 100) -> FuncAnimation:
        """Every timestep once, ``interval`` ms apart, not repeating (as the seed)."""
        return FuncAnimation(self.figure, self.draw_frame, frames=np.arange(self.num_frames), blit=True,
                             interval=interval, repeat=False, cache_frame_data=False)


def timestep_sweep_frame_figure(embedding, frame: int, *, cmap: str = "magma", dpi: float = DPI) -> Figure:
    """The animation's figure as it stands at ``frame``."""
    sweep = TimestepSweep(embedding, cmap=cmap, dpi=dpi)
    sweep.draw_frame(frame)
    return sweep.figure
