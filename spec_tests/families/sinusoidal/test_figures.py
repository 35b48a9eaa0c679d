"""Every seed figure, drawn by :mod:`posenc_spec.figures` from the reference implementations
and compared with its baseline in ``baseline_images/`` by pytest-mpl.

The default run compares (pyproject's ``addopts`` has ``--mpl``). To review a change,
``tox -e figures`` writes pytest-mpl's HTML summary (baseline, result, difference) to
``results/``; ``tox -e figures-regenerate`` renders every figure into
``baseline_images_new/``, from which reviewed images are copied by hand.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from posenc_spec import figures
from posenc_spec.families.sinusoidal import animation
from posenc_spec.families.sinusoidal import figures as sinusoidal_figures
from posenc_spec.families.sinusoidal.properties import expectation
from reference_impls import family, numpy_loop, numpy_vectorized, timestep, torch_impl
from spec_tests.figure_compare import figure_comparison

# Seed 003's 20 x 10 inch heatmap of 500 timesteps at a lower dpi than the rest: its
# baseline stays small. (The animation's 100 rows are enlarged at the default dpi, which
# compresses well; at 50 dpi they would be shrunk and smoothed, and the PNGs triple.)
LARGE_FIGURE_DPI = 50


# -- the tables each seed draws ---------------------------------------------------------


@functools.cache
def seed000_table() -> np.ndarray:
    """PE(300, 512) from the torch reference (float32): t5-small's generation length and width."""
    return torch_impl.positional_encoding(300, 512).numpy()


@functools.cache
def seed002_table() -> np.ndarray:
    """PE(50, 512), vectorised NumPy."""
    return numpy_vectorized.positional_encoding(50, 512)


@functools.cache
def seed003_embedding(num_steps: int, dim: int) -> np.ndarray:
    """Diffusion timestep embeddings of steps 0 .. num_steps - 1 (sin half, then cos half)."""
    return timestep.timestep_embedding(torch.arange(num_steps), dim).numpy()


@functools.cache
def seed004_table() -> np.ndarray:
    """The paper's formula at GPT-2's shape, 1024 x 768, by the loop over pairs."""
    return numpy_loop.positional_encoding(1024, 768)


# -- seed 000 -------------------------------------------------------------------------


@figure_comparison
def test_seed000_row_profiles():
    """Rows 0, 1, 2, 10, ..., 299 of PE(300, 512), one thin blue panel each, y in [-1.5, 1.5]."""
    return sinusoidal_figures.row_profiles_figure(seed000_table())


@figure_comparison
def test_seed000_heatmap():
    """PE(300, 512) in Blues with hidden spines."""
    return sinusoidal_figures.position_heatmap_figure(seed000_table())


@figure_comparison
def test_seed000_similarity():
    """Cosine similarity of every pair of positions of PE(300, 512), Blues, no title."""
    return figures.similarity_over_positions_figure(seed000_table(), title=None, figsize=(6, 4))


# -- seed 002 -------------------------------------------------------------------------


@figure_comparison
def test_seed002_pcolormesh():
    """PE(50, 512) as a viridis pcolormesh, position axis inverted, with a colorbar."""
    return sinusoidal_figures.position_pcolormesh_figure(seed002_table())


# -- seed 003 -------------------------------------------------------------------------


@figure_comparison
def test_seed003_timestep_heatmap():
    """500 timestep embeddings of width 128 in magma, every 50th drawn below in its colour."""
    return sinusoidal_figures.timestep_embedding_figure(seed003_embedding(500, 128), dpi=LARGE_FIGURE_DPI)


@figure_comparison
def test_seed003_animation_first_frame():
    """The animation of 100 timesteps of width 64 at timestep 0."""
    return animation.timestep_sweep_frame_figure(seed003_embedding(100, 64), 0)


@figure_comparison
def test_seed003_animation_middle_frame():
    """The animation at timestep 50: the line crosses the middle of the heatmap."""
    return animation.timestep_sweep_frame_figure(seed003_embedding(100, 64), 50)


@figure_comparison
def test_seed003_animation_last_frame():
    """The animation at timestep 99, its last frame."""
    return animation.timestep_sweep_frame_figure(seed003_embedding(100, 64), 99)


# -- seed 004 -------------------------------------------------------------------------


@figure_comparison
def test_seed004_formula_table():
    """The formula table at 1024 x 768 transposed, dimensions 200, 333, 466, 600 traced and marked."""
    return sinusoidal_figures.formula_table_figure(seed004_table())


@figure_comparison
def test_seed004_formula_dimensions_grid():
    """Twelve seeded embedding dimensions of the formula table, one panel each."""
    return figures.single_dimensions_grid_figure(seed004_table(), seed=0, xlabel="<-- present     ...     past -->")


@figure_comparison
def test_seed004_learned_table_figure_on_formula():
    """The learned-table figure (imshow of the transpose, -0.2 to 0.2) drawn from the formula table."""
    return figures.learned_table_figure(seed004_table(), title="Sinusoidal table at GPT-2's shape")


@figure_comparison
def test_seed004_similarity_two_ways_on_formula():
    """Cosine similarity over positions and across dimensions of the formula table, with colorbars."""
    return figures.similarity_two_ways_figure(seed004_table())


@figure_comparison
def test_seed001_similarity_on_formula():
    """Seed 001's titled similarity figure (Blues, hidden spines) drawn from the formula table."""
    return figures.similarity_over_positions_figure(seed004_table())


# -- the plot command's difference figure ---------------------------------------------


def wrong_table() -> np.ndarray:
    """A float32 PE(50, 64) whose ln(10000) is hard-coded as 9.21."""
    positions = np.arange(50)[:, None]
    angles = positions * np.exp(np.arange(0, 64, 2) * -(9.21 / 64))
    table = np.empty((50, 64))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table.astype(np.float32).astype(np.float64)


@figure_comparison
def test_difference_figure_of_a_wrong_table():
    """The error/tolerance picture of a table with ln(10000) = 9.21: red wherever it is out of bound."""
    exp = expectation(50, 64, "vaswani", "float32")
    return figures.difference_figure(wrong_table(), exp.table, exp.tolerance, title="ln(10000) hard-coded as 9.21")


def test_wrong_table_is_wrong():
    """The difference figure's example table really is out of tolerance (else its picture shows nothing)."""
    exp = expectation(50, 64, "vaswani", "float32")
    assert not np.array_equal(wrong_table(), family.sinusoidal_encoding(50, 64, "vaswani", np.float32))
    ratio = figures.error_ratio(wrong_table(), exp.table, exp.tolerance)
    assert ratio.max() > 1, f"wrong_table(): max error/tolerance {ratio.max():.3g}, expected above 1"
