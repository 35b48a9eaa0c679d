"""What each plotting function draws, read back from the Figure's artists: the right array
the right way round, the seeds' limits and colormaps, the seed fixes, and clear errors.

The pixels are compared with baselines in test_figures.py; these tests say what is wrong
when a baseline comparison fails, and hold for any table.
"""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_spec import figures
from posenc_spec.families.sinusoidal import figures as sinusoidal_figures
from posenc_spec.families.sinusoidal.properties import expectation
from posenc_spec.figures.arrays import cosine_similarity
from reference_impls import family, numpy_loop, timestep

# A small table of the formula: enough rows and columns for every figure.
TABLE = family.sinusoidal_encoding(64, 32, "vaswani")


def test_cosine_similarity_of_known_vectors():
    """Parallel rows give 1, orthogonal rows 0, and a zero row 0 with everything (as scikit-learn)."""
    vectors = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 0.0]])
    expected = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]], dtype=float)
    np.testing.assert_array_equal(cosine_similarity(vectors), expected, err_msg="cosine_similarity")


def test_picked_dimensions_are_seeded_distinct_and_sorted():
    """The grid's dimensions are the same for the same seed, 12 distinct sorted ones, another set for another seed."""
    picks = figures.pick_dimensions(768, 12, seed=0)
    assert np.array_equal(picks, figures.pick_dimensions(768, 12, seed=0)), "pick_dimensions(seed=0) changed"
    assert len(set(picks.tolist())) == 12 and np.all(np.diff(picks) > 0) and 0 <= picks.min() and picks.max() < 768, \
        f"pick_dimensions(768, 12, 0) = {picks}"
    assert not np.array_equal(picks, figures.pick_dimensions(768, 12, seed=1)), "seeds 0 and 1 pick the same dimensions"


def test_grid_panels_name_and_plot_embedding_dimensions():
    """Each of the 12 panels plots one column over all positions and its legend says 'Embedding dimension d'."""
    fig = figures.single_dimensions_grid_figure(TABLE, seed=3)
    dims = figures.pick_dimensions(TABLE.shape[1], 12, seed=3)
    assert len(fig.axes) == 12, f"{len(fig.axes)} panels"
    for ax, dim in zip(fig.axes, dims, strict=True):
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        assert labels == [f"Embedding dimension {dim}"], f"panel for dimension {dim} is labelled {labels}"
        np.testing.assert_array_equal(ax.lines[0].get_ydata(), TABLE[:, dim], err_msg=f"panel {dim}")
        assert ax.get_xlim() == (0, TABLE.shape[0]), f"panel {dim}: xlim {ax.get_xlim()}"


def test_formula_figure_shows_the_transpose_and_marks_the_traced_dimensions():
    """The image is table.T (dimensions down) from -1 to 1; each traced column has a dashed line of its colour."""
    table = numpy_loop.positional_encoding(1024, 768)
    fig = sinusoidal_figures.formula_table_figure(table)
    image_axes, trace_axes = fig.axes
    image = image_axes.images[0]
    np.testing.assert_array_equal(image.get_array(), table.T, err_msg="formula_table_figure image")
    assert image.get_clim() == (-1, 1), f"clim {image.get_clim()}"
    dims = [200, 333, 466, 600]  # the seed's linspace(200, 600, 4, dtype=int)
    marks = {int(line.get_ydata()[0]): line.get_color() for line in image_axes.lines}
    traces = {dim: line.get_color() for dim, line in zip(dims, trace_axes.lines, strict=True)}
    assert marks == traces, f"marked rows and colours {marks}, traced {traces}"
    for dim, line in zip(dims, trace_axes.lines, strict=True):
        np.testing.assert_array_equal(line.get_ydata(), table[:, dim], err_msg=f"trace of dimension {dim}")


def test_learned_table_figure_is_the_transpose_between_the_seed_limits():
    """imshow(table.T, aspect='auto', vmin=-.2, vmax=.2) on 10 x 4 inches."""
    fig = figures.learned_table_figure(TABLE, title="t")
    image = fig.axes[0].images[0]
    np.testing.assert_array_equal(image.get_array(), TABLE.T, err_msg="learned_table_figure image")
    assert (image.get_clim(), tuple(fig.get_size_inches())) == ((-0.2, 0.2), (10, 4)), \
        f"clim {image.get_clim()}, size {fig.get_size_inches()}"


def test_similarity_figures_show_both_similarities():
    """Over positions: rows' cosine similarity in Blues; two ways: rows' and columns', both from -1 to 1."""
    image = figures.similarity_over_positions_figure(TABLE).axes[0].images[0]
    np.testing.assert_array_equal(image.get_array(), cosine_similarity(TABLE), err_msg="similarity over positions")
    assert image.get_cmap().name == "Blues", image.get_cmap().name
    fig = figures.similarity_two_ways_figure(TABLE)
    over_time, across = (ax.images[0] for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>")
    np.testing.assert_array_equal(over_time.get_array(), cosine_similarity(TABLE), err_msg="S_c over time")
    np.testing.assert_array_equal(across.get_array(), cosine_similarity(TABLE.T), err_msg="S_c across embeddings")
    assert over_time.get_clim() == across.get_clim() == (-1, 1), f"{over_time.get_clim()}, {across.get_clim()}"


def test_seed000_figures_keep_the_seed_limits_and_hidden_spines():
    """Row panels: x 0..width, y -1.5..1.5, one per row; the heatmap: Blues, no spines."""
    rows = [0, 5, 63]
    fig = sinusoidal_figures.row_profiles_figure(TABLE, rows)
    for ax, row in zip(fig.axes, rows, strict=True):
        assert (ax.get_xlim(), ax.get_ylim()) == ((0, 32), (-1.5, 1.5)), f"row {row}: {ax.get_xlim()}, {ax.get_ylim()}"
        np.testing.assert_array_equal(ax.lines[-1].get_ydata(), TABLE[row], err_msg=f"row {row}")
    ax = sinusoidal_figures.position_heatmap_figure(TABLE).axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), TABLE, err_msg="position_heatmap_figure")
    assert ax.images[0].get_cmap().name == "Blues" and not any(s.get_visible() for s in ax.spines.values())


def test_seed002_pcolormesh_has_inverted_positions_and_a_colorbar():
    """Positions run down from 0 (ylim (n, 0)), depth across 0..width, viridis, a colorbar."""
    fig = sinusoidal_figures.position_pcolormesh_figure(TABLE)
    ax = fig.axes[0]
    mesh = ax.collections[0]
    np.testing.assert_array_equal(mesh.get_array().reshape(TABLE.shape), TABLE, err_msg="pcolormesh values")
    assert (ax.get_ylim(), ax.get_xlim(), mesh.get_cmap().name, len(fig.axes)) == ((64, 0), (0, 32), "viridis", 2)


def test_seed003_draws_every_50th_embedding_in_its_colormap_colour():
    """The lines below are rows 0, 50, ..., 450, each coloured by magma resampled to 500 at its row."""
    embedding = timestep.timestep_embedding(torch.arange(500), 128).numpy()
    fig = sinusoidal_figures.timestep_embedding_figure(embedding)
    heatmap_axes, lines_axes = fig.axes[:2]
    np.testing.assert_array_equal(heatmap_axes.images[0].get_array(), embedding, err_msg="seed 003 heatmap")
    colours = matplotlib.colormaps["magma"].resampled(500)
    steps = range(0, 500, 50)
    assert len(lines_axes.lines) == len(steps)
    for line, step in zip(lines_axes.lines, steps, strict=True):
        np.testing.assert_array_equal(line.get_ydata(), embedding[step], err_msg=f"line of timestep {step}")
        assert matplotlib.colors.same_color(line.get_color(), colours(step)), f"timestep {step}: {line.get_color()}"


def test_difference_figure_points_at_the_wrong_column():
    """A table wrong in column 5 only: error/tolerance above 1 there and nowhere else, in the data and the picture."""
    exp = expectation(64, 32, "vaswani", "float64")
    wrong = exp.table.copy()
    wrong[:, 5] += 1e-3
    ratio = figures.error_ratio(wrong, exp.table, exp.tolerance)
    failing_columns = np.flatnonzero((ratio > 1).any(axis=0))
    assert failing_columns.tolist() == [5], f"error_ratio: failing columns {failing_columns}"
    fig = figures.difference_figure(wrong, exp.table, exp.tolerance)
    shown = fig.axes[1].images[0].get_array()  # log10(error / tolerance); above 0 fails
    assert np.flatnonzero((shown > 0).any(axis=0)).tolist() == [5], "difference_figure marks other columns"


def test_difference_figure_shows_nan_as_failing():
    """A NaN element counts as infinitely wrong: top of the ratio scale, and error_ratio is inf."""
    exp = expectation(8, 8, "vaswani", "float32")
    wrong = exp.table.copy()
    wrong[3, 4] = np.nan
    assert np.isinf(figures.error_ratio(wrong, exp.table, exp.tolerance)[3, 4])
    shown = figures.difference_figure(wrong, exp.table, exp.tolerance).axes[1].images[0].get_array()
    assert shown[3, 4] == shown.max() > 0, f"NaN element shown as {shown[3, 4]}, max {shown.max()}"


def test_figures_leave_pyplot_and_rcparams_alone():
    """Drawing a figure registers nothing with pyplot and leaves the caller's rcParams as they were."""
    before = dict(matplotlib.rcParams)
    open_figures = plt.get_fignums()
    with matplotlib.rc_context({"lines.linewidth": 7.0}):
        fig = sinusoidal_figures.row_profiles_figure(TABLE, [0])
        assert matplotlib.rcParams["lines.linewidth"] == 7.0, "the caller's rcParams changed"
    assert fig.axes[0].lines[0].get_linewidth() == 1.5, "the figure took the caller's rcParams, not its style"
    assert plt.get_fignums() == open_figures and dict(matplotlib.rcParams) == before


@pytest.mark.parametrize(("function", "bad", "error", "match"), [
    (sinusoidal_figures.position_heatmap_figure, np.zeros(5), ValueError, r"table must be 2-D .* shape \(5,\)"),
    (figures.learned_table_figure, np.zeros((0, 4)), ValueError, "table must not be empty"),
    (figures.similarity_two_ways_figure, "abc", TypeError, "table must be a 2-D array of numbers"),
    (sinusoidal_figures.timestep_embedding_figure, np.zeros((2, 2, 2)), ValueError, "embedding must be 2-D"),
])
def test_bad_tables_are_refused(function, bad, error, match):
    """Not a non-empty 2-D numeric array: a clear error naming the argument and what it got."""
    with pytest.raises(error, match=match):
        function(bad)


def test_bad_rows_and_dims_are_refused():
    """Row or dimension indices outside the table, or not ints, are refused with the offending values."""
    with pytest.raises(ValueError, match=r"rows must be non-empty indices in 0..63, got \[0, 64\]"):
        sinusoidal_figures.row_profiles_figure(TABLE, [0, 64])
    with pytest.raises(TypeError, match="rows must be a 1-D sequence of ints"):
        sinusoidal_figures.row_profiles_figure(TABLE, [0.5])
    with pytest.raises(ValueError, match="dims must be 12 dimensions in 0..31"):
        figures.single_dimensions_grid_figure(TABLE, dims=[1, 2])
    with pytest.raises(ValueError, match="count must be at most the table's 32 dimensions"):
        figures.pick_dimensions(32, 40)
