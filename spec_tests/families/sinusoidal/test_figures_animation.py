"""Seed 003's animation: one frame per timestep, saved as HTML and GIF, the line on the right row.

Its frames' pixels are compared with baselines in test_figures.py (first, middle, last).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from matplotlib.animation import PillowWriter
from matplotlib.testing.decorators import remove_ticks_and_titles
from matplotlib.ticker import NullLocator
from PIL import Image

from posenc_spec.families.sinusoidal.animation import TimestepSweep
from reference_impls import timestep

NUM_STEPS, WIDTH = 100, 64

# Saving renders every frame: at 10 dpi, without text and ticks (most of a frame's drawing
# cost) the 100 frames take about a second; the frames' content is what test_figures.py
# compares.
SAVING_DPI = 10


@pytest.fixture(scope="module")
def embedding() -> np.ndarray:
    return timestep.timestep_embedding(torch.arange(NUM_STEPS), WIDTH).numpy()


def saving_sweep(embedding) -> TimestepSweep:
    """The animation's figure at SAVING_DPI with its text and ticks removed."""
    sweep = TimestepSweep(embedding, dpi=SAVING_DPI)
    remove_ticks_and_titles(sweep.figure)
    for ax in sweep.figure.axes:
        ax.set(xlabel="", ylabel="")
        ax.xaxis.set_major_locator(NullLocator())
        ax.yaxis.set_major_locator(NullLocator())
    return sweep


def test_html_holds_one_frame_per_timestep(embedding):
    """to_jshtml() embeds exactly 100 frames for 100 timesteps."""
    html = saving_sweep(embedding).animation().to_jshtml()
    frames = re.findall(r'frames\[(\d+)\] = "data:image/png;base64,', html)
    assert [int(i) for i in frames] == list(range(NUM_STEPS)), \
        f"TimestepSweep.animation().to_jshtml(): frames {frames[:3]}...{frames[-3:]} ({len(frames)}), " \
        f"expected 0..{NUM_STEPS - 1}"


def test_gif_holds_one_frame_per_timestep(embedding, tmp_path):
    """A GIF written by PillowWriter holds 100 frames of the figure's size."""
    sweep = saving_sweep(embedding)
    path = tmp_path / "sweep.gif"
    sweep.animation().save(path, writer=PillowWriter(fps=10))
    with Image.open(path) as gif:
        expected_size = tuple(round(inches * SAVING_DPI) for inches in sweep.figure.get_size_inches())
        assert (gif.n_frames, gif.size) == (NUM_STEPS, expected_size), \
            f"TimestepSweep GIF: {gif.n_frames} frames of {gif.size}, expected {NUM_STEPS} of {expected_size}"


@pytest.mark.parametrize("frame", [0, 37, NUM_STEPS - 1])
def test_frame_marks_its_own_row(embedding, frame):
    """At frame t the line sits on the heatmap row of timestep t and the curve below is that row."""
    sweep = TimestepSweep(embedding)
    sweep.draw_frame(frame)
    image = sweep.figure.axes[0].images[0]
    left, right, bottom, top = image.get_extent()
    # Row r spans [r - 0.5, r + 0.5] with row 0 at the top: the line at y = t crosses row t.
    assert (left, right, bottom, top) == (-0.5, WIDTH - 0.5, NUM_STEPS - 0.5, -0.5), \
        f"TimestepSweep heatmap extent {(left, right, bottom, top)}"
    line_rows = list(sweep.sweep_line.get_ydata())
    assert line_rows == [frame, frame], f"frame {frame}: line at {line_rows}"
    np.testing.assert_array_equal(sweep.embedding_line.get_ydata(), embedding[frame],
                                  err_msg=f"frame {frame}: the curve below is not timestep {frame}'s embedding")


@pytest.mark.parametrize("frame", [-1, NUM_STEPS, 2.0, True])
def test_frame_out_of_range_is_refused(embedding, frame):
    """A frame outside 0..99 (or not an int) is a ValueError naming the frame."""
    with pytest.raises(ValueError, match="frame must be an int in 0..99"):
        TimestepSweep(embedding).draw_frame(frame)
