"""The pictures of ``posenc-spec plot`` and ``check --plots`` (:mod:`posenc_spec.families.sinusoidal.diagnostics`)
and of a regression check (:mod:`posenc_spec.figures.regression`).

Each is compared with its baseline in ``baseline_images/`` (pytest-mpl, the tolerance of
spec_tests/figure_compare.py), drawn from the oracle's table with a seeded perturbation
and from seeded ULP distances. The other tests read the Figure objects, so that a missing
title, colorbar or legend fails even after someone regenerates the baselines.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from matplotlib.colors import LogNorm, same_color

from posenc_spec.families.sinusoidal.diagnostics import (
    profile_rows,
    table_figures,
    table_heatmap_figure,
    table_row_profiles_figure,
    table_similarity_figure,
    write_table_figures,
)
from posenc_spec.families.sinusoidal.properties import expectation
from posenc_spec.figures.arrays import cosine_similarity
from posenc_spec.figures.difference import error_ratio
from posenc_spec.figures.regression import IDENTICAL_COLOUR, INFINITE_COLOUR, MAX_SHOWN, block_maxima, ulp_figure
from posenc_spec.figures.style import HEADING_CHARS_PER_INCH, heading
from posenc_spec.regression.ulp import INFINITE_ULP
from reference_impls import family
from spec_tests.figure_compare import figure_comparison

TARGET = "mypkg.encoding:sinusoidal_table"
CONVENTION, DTYPE = "vaswani", "float32"
TITLE = f"{TARGET} under {CONVENTION}, {DTYPE}"  # what posenc-spec plot passes
NUM_POSITIONS, WIDTH = 64, 48

# The wrong table: this share of the elements moved by seeded normal noise of this size,
# far above float32's tolerance (below 1e-5 here) and large enough to see.
PERTURBATION_SEED, MOVED_SHARE, NOISE_SCALE = 20, 0.05, 0.3

# The ULP distances: log-uniform up to 2**20 ULPs, with these shares identical and infinite.
DISTANCE_SEED, LARGEST_LOG2_ULP, IDENTICAL_SHARE, INFINITE_SHARE = 30, 20, 0.4, 0.02

COLORBAR_LABELS = {
    "heatmap": ["Value"],
    "row_profiles": [],
    "similarity": ["Cosine similarity"],  # one colorbar for both panels
    "difference": ["table - expected (value)", "log10(error / tolerance); above 0 fails"],
}


@functools.cache
def expected():
    return expectation(NUM_POSITIONS, WIDTH, CONVENTION, DTYPE)


def correct_table() -> np.ndarray:
    """The oracle's table rounded to float32, as a correct float32 target returns it."""
    return family.sinusoidal_encoding(NUM_POSITIONS, WIDTH, CONVENTION, np.float32).astype(np.float64)


def wrong_table() -> np.ndarray:
    """The correct table with a seeded share of its elements moved by seeded noise."""
    generator = np.random.default_rng(PERTURBATION_SEED)
    table = correct_table()
    moved = generator.random(table.shape) < MOVED_SHARE
    table[moved] += generator.normal(0.0, NOISE_SCALE, int(moved.sum()))
    return table


def seeded_distances(shape=(NUM_POSITIONS, WIDTH)) -> np.ndarray:
    """ULP distances as ulp_distance returns them: uint64, some 0, some INFINITE_ULP."""
    generator = np.random.default_rng(DISTANCE_SEED)
    distances = np.exp2(generator.uniform(0, LARGEST_LOG2_ULP, shape)).astype(np.uint64)
    distances[generator.random(shape) < IDENTICAL_SHARE] = 0
    distances[generator.random(shape) < INFINITE_SHARE] = INFINITE_ULP
    return distances


def ulp_title() -> str:
    return f"{TARGET} at 300x512 under {CONVENTION}, {DTYPE}"


def one_row_of_distances() -> np.ndarray:
    """The first row of seeded_distances() that holds an infinite distance (and so all three kinds)."""
    distances = seeded_distances()
    return distances[np.flatnonzero((distances == INFINITE_ULP).any(axis=1))[0]]


# -- compared with baselines -------------------------------------------------------------


@figure_comparison
def test_plot_heatmap_of_a_wrong_table():
    """heatmap.png of the perturbed table: its values on a -1..1 colorbar, titled and labelled."""
    return table_heatmap_figure(wrong_table(), expected(), title=TITLE)


@figure_comparison
def test_plot_row_profiles_of_a_wrong_table():
    """row_profiles.png: rows 0, 1, 2, 10, 50, 63 solid, the expected dashed, the moved elements red."""
    return table_row_profiles_figure(wrong_table(), expected(), title=TITLE)


@figure_comparison
def test_plot_similarity_of_a_wrong_table():
    """similarity.png: the perturbed table's cosine similarity beside the expected table's."""
    return table_similarity_figure(wrong_table(), expected(), title=TITLE)


@figure_comparison
def test_ulp_figure_of_seeded_distances():
    """ULP distances of a 64 x 48 output on a log scale, white where identical, red where infinite."""
    return ulp_figure(seeded_distances(), title=ulp_title(), dtype=DTYPE)


@figure_comparison
def test_ulp_figure_of_a_one_dimensional_output():
    """A 1-D output's distances drawn as one row."""
    return ulp_figure(one_row_of_distances(), title=ulp_title(), dtype=DTYPE)


# -- what the pictures hold ------------------------------------------------------------------


def colorbar_labels(figure) -> list[str]:
    """The label of each colorbar, in drawing order."""
    return [axes.get_ylabel() for axes in figure.axes if axes.get_label() == "<colorbar>"]


def panels(figure) -> list:
    """The axes that are not colorbars."""
    return [axes for axes in figure.axes if axes.get_label() != "<colorbar>"]


@pytest.fixture(scope="module")
def pictures() -> dict:
    """The four pictures of plot and check --plots of the wrong table (drawn once: they are only read)."""
    return table_figures(wrong_table(), expected(), title=TITLE)


def test_every_picture_names_target_convention_and_dtype(pictures):
    """The four pictures of plot and check --plots, and the ULP picture, are headed by their title."""
    ulp = ulp_figure(seeded_distances(), title=ulp_title(), dtype=DTYPE)
    for name, figure in {**pictures, "ulp": ulp}.items():
        suptitle = figure.get_suptitle()
        assert TARGET in suptitle and f"under {CONVENTION}, {DTYPE}" in suptitle, f"{name}: heading {suptitle!r}"


def test_every_image_has_its_labelled_colorbar_and_every_axis_a_label(pictures):
    """Heatmap: values; similarity: cosine similarity (one for both panels); difference: both panels; axes
    name the rows (positions) and the embedding dimensions; the row profiles name the values."""
    for name, figure in pictures.items():
        assert colorbar_labels(figure) == COLORBAR_LABELS[name], f"{name}: colorbars {colorbar_labels(figure)}"
    for name in ("heatmap", "difference"):
        for axes in panels(pictures[name]):
            assert (axes.get_xlabel(), axes.get_ylabel()) == ("Embedding dimension", "Position"), \
                f"{name}: axes labelled {axes.get_xlabel()!r}, {axes.get_ylabel()!r}"
    for axes in panels(pictures["similarity"]):
        assert (axes.get_xlabel(), axes.get_ylabel()) == ("Position", "Position"), "similarity axes"
    profiles = pictures["row_profiles"]
    assert profiles.axes[-1].get_xlabel() == "Embedding dimension" and profiles.get_supylabel() == "Value", \
        f"row profiles: x {profiles.axes[-1].get_xlabel()!r}, y {profiles.get_supylabel()!r}"


def test_row_profiles_show_each_row_beside_its_expected_values():
    """Each panel's legend names its position; its solid line is the table's row, its dashed line
    the expected row, and its red dots are exactly the row's elements out of bound."""
    table, exp = wrong_table(), expected()
    figure = table_row_profiles_figure(table, exp, title=TITLE)
    out_of_bound = error_ratio(table, exp.table, exp.tolerance) > 1
    rows = profile_rows(NUM_POSITIONS)
    assert len(figure.axes) == len(rows), f"{len(figure.axes)} panels for rows {rows}"
    for axes, row in zip(figure.axes, rows, strict=True):
        wrong = np.flatnonzero(out_of_bound[row])
        legend = [text.get_text() for text in axes.get_legend().get_texts()]
        assert legend == [f"position {row}", "expected"] + ([f"{wrong.size} out of bound"] if wrong.size else []), \
            f"row {row}: legend {legend}"
        target, reference, *marks = axes.lines
        np.testing.assert_array_equal(target.get_ydata(), table[row], err_msg=f"row {row}: the solid line")
        np.testing.assert_array_equal(reference.get_ydata(), exp.table[row], err_msg=f"row {row}: the dashed line")
        assert (target.get_linestyle(), reference.get_linestyle()) == ("-", "--"), f"row {row}: line styles"
        marked = marks[0].get_xdata() if marks else np.array([], dtype=int)
        np.testing.assert_array_equal(marked, wrong, err_msg=f"row {row}: red dots not on the elements out of bound")
        assert not marks or same_color(marks[0].get_color(), "red"), f"row {row}: marks in {marks[0].get_color()}"
    assert out_of_bound[rows].any(), f"wrong_table(): rows {rows} show nothing out of bound"


def test_heatmap_and_similarity_draw_the_table_and_the_expected_one():
    """The heatmap is the table, its colours spanning -1..1 (a correct table) or the values beyond;
    the similarity panels are the table's and the expected table's, both on their one colorbar."""
    table, exp = wrong_table(), expected()
    image = table_heatmap_figure(table, exp, title=TITLE).axes[0].images[0]
    np.testing.assert_array_equal(image.get_array(), table, err_msg="heatmap")
    assert table.min() < -1 and table.max() > 1, "wrong_table() stays within -1..1: the widening goes untested"
    assert image.get_clim() == (table.min(), table.max()), f"heatmap clim {image.get_clim()}"
    correct = table_heatmap_figure(correct_table(), exp, title=TITLE).axes[0].images[0]
    assert correct.get_clim() == (-1.0, 1.0), f"heatmap clim {correct.get_clim()} for a correct table"
    figure = table_similarity_figure(table, exp, title=TITLE)
    drawn, beside = (axes.images[0] for axes in panels(figure))
    np.testing.assert_allclose(drawn.get_array(), cosine_similarity(table), err_msg="similarity of the table")
    np.testing.assert_allclose(beside.get_array(), cosine_similarity(exp.table), err_msg="similarity of the expected")
    (colorbar,) = {image.colorbar for image in (drawn, beside)} - {None}
    for image in (drawn, beside):
        assert (image.get_clim(), image.get_cmap()) == ((-1, 1), colorbar.cmap), f"{image.get_clim()} {image.cmap}"


def test_long_title_keeps_the_function_and_the_convention_on_two_lines():
    """A target path too long for the figure: two title lines, each fitting, the first ending with the
    function, the second the convention and dtype; a short title stays one line."""
    target = "/home/user/" + "nested_folder/" * 20 + "model.py:sinusoidal_table"
    title = f"{target} under {CONVENTION}, {DTYPE}"
    figure = table_heatmap_figure(correct_table(), expected(), title=title)
    lines = figure.get_suptitle().splitlines()
    limit = int(figure.get_figwidth() * HEADING_CHARS_PER_INCH)
    assert len(lines) == 3 and all(len(line) <= limit for line in lines[:2]), f"heading {lines} (limit {limit})"
    assert lines[0].endswith("model.py:sinusoidal_table") and lines[1] == f"under {CONVENTION}, {DTYPE}", lines
    assert heading(TITLE, "what", 7).splitlines() == [TITLE, "what"]


def test_timestep_rows_are_named_by_their_timesteps(tmp_path):
    """Rows at timesteps that are not 0..n-1 are labelled Timestep, ticks and legends give their values;
    row_kind overrides the guess; a bad row_kind is refused."""
    steps = np.arange(12) * 90.0
    exp = expectation(steps, 16, "concat", DTYPE)
    table = family.sinusoidal_encoding(steps, 16, "concat", np.float32)
    axis = table_heatmap_figure(table, exp, title=TITLE).axes[0].yaxis
    assert axis.get_label_text() == "Timestep", axis.get_label_text()
    assert axis.get_major_formatter()(3, 0) == "270", "row 3 is not labelled with its timestep"
    profiles = table_row_profiles_figure(table, exp, title=TITLE)
    legend = [axes.get_legend().get_texts()[0].get_text() for axes in profiles.axes]
    assert legend == [f"timestep {steps[row]:g}" for row in profile_rows(12)], legend
    figure = table_heatmap_figure(table, exp, title=TITLE, row_kind="position")
    assert figure.axes[0].get_ylabel() == "Position"
    with pytest.raises(ValueError, match="row_kind must be one of position, timestep or None, got 'step'"):
        write_table_figures(table, exp, tmp_path, title=TITLE, row_kind="step")


def test_tables_that_do_not_fit_their_expectation_are_refused():
    """A table of another shape, or an expectation that is not one: a clear error naming both."""
    with pytest.raises(ValueError, match=r"table shape \(64, 40\) differs from the expected \(64, 48\)"):
        table_heatmap_figure(correct_table()[:, :40], expected(), title=TITLE)
    with pytest.raises(TypeError, match="exp must be an Expectation"):
        table_similarity_figure(correct_table(), correct_table(), title=TITLE)


# -- the ULP picture ---------------------------------------------------------------------


def test_ulp_figure_draws_identical_white_infinite_red_and_the_rest_on_a_log_scale():
    """Zeros are masked (white, "identical"); infinite distances lie above the scale's top (red, the
    colorbar's extension); the rest are the distances on a log scale named in ULPs of the dtype."""
    distances = seeded_distances()
    figure = ulp_figure(distances, title=ulp_title(), dtype=DTYPE)
    image = figure.axes[0].images[0]
    shown = image.get_array()
    identical, infinite = distances == 0, distances == INFINITE_ULP
    assert identical.any() and infinite.any(), "seeded_distances() lacks zeros or infinities"
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), identical, err_msg="masked (white) cells")
    moved = ~identical & ~infinite
    np.testing.assert_array_equal(shown[moved], distances[moved].astype(np.float64), err_msg="finite distances")
    norm = image.norm
    assert isinstance(norm, LogNorm) and norm.vmax == distances[moved].max(), f"norm {norm}, vmax {norm.vmax}"
    assert np.all(shown[infinite] > norm.vmax), "infinite distances are not above the colour scale"
    colours = image.to_rgba(shown)  # through the norm and the colormap, as drawn
    for colour, cells in ((IDENTICAL_COLOUR, identical), (INFINITE_COLOUR, infinite)):
        assert all(same_color(rgba, colour) for rgba in colours[cells]), f"cells drawn other than {colour}"
        assert not any(same_color(rgba, colour) for rgba in colours[moved]), f"moved cells drawn {colour}"
    assert image.colorbar.extend == "max" and image.colorbar.ax.get_ylabel().startswith(f"ULPs of {DTYPE}"), \
        f"colorbar extend {image.colorbar.extend}, label {image.colorbar.ax.get_ylabel()!r}"
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert any("identical" in text for text in legend) and any("infinite" in text for text in legend), legend
    assert (figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel()) == ("Feature (column)", "Position (row)")
    summary = (f"{np.count_nonzero(distances)} of {distances.size} elements moved; largest finite distance "
               f"{distances[moved].max()} ULP; {np.count_nonzero(infinite)} infinite")
    assert summary in figure.get_suptitle(), f"heading {figure.get_suptitle()!r}, expected {summary!r}"


def test_ulp_figure_of_a_one_dimensional_output_is_one_row():
    """A 1-D output is one row of cells along an axis of elements, its distances in order."""
    distances = one_row_of_distances()
    axes = ulp_figure(distances, title=ulp_title(), dtype=DTYPE).axes[0]
    shown = axes.images[0].get_array()
    assert shown.shape == (1, distances.size), f"1-D output drawn as {shown.shape}"
    moved = (distances != 0) & (distances != INFINITE_ULP)
    np.testing.assert_array_equal(shown[0][moved], distances[moved].astype(np.float64), err_msg="1-D distances")
    assert axes.get_xlabel() == "Element", axes.get_xlabel()


def test_block_maxima_are_the_largest_distance_of_each_block():
    """Against a loop over the blocks, on a seeded output that needs padding both ways (small
    limits, so that the loop stays short)."""
    limits = (4, 5)
    distances = seeded_distances((limits[0] * 2 + 3, limits[1] * 3 + 1))
    maxima, (row_step, column_step) = block_maxima(distances, limits)
    for size, step, limit, blocks in zip(distances.shape, (row_step, column_step), limits, maxima.shape, strict=True):
        # the smallest step that leaves at most `limit` blocks; a step of 1 less would leave more
        assert blocks == -(-size // step) <= limit < -(-size // (step - 1)), \
            f"{size} elements in {blocks} blocks of {step} (limit {limit})"
    for (i, j), value in np.ndenumerate(maxima):
        block = distances[i * row_step:(i + 1) * row_step, j * column_step:(j + 1) * column_step]
        assert value == block.max(), f"block ({i}, {j}): {value}, expected {block.max()}"


def test_one_moved_element_of_a_large_output_stays_visible():
    """One element 3 ULPs off and one infinite in a 1120 x 1440 output, drawn as 160 x 480 blocks: both
    are drawn, and the heading gives the blocks' size."""
    distances = np.zeros((MAX_SHOWN[0] * 7, MAX_SHOWN[1] * 3), dtype=np.uint64)
    distances[100, 200], distances[-1, -1] = 3, INFINITE_ULP
    figure = ulp_figure(distances, title=ulp_title(), dtype="float64")
    shown = figure.axes[0].images[0].get_array()
    assert np.ma.count(shown) == 2 and shown.max() > 3 and 3 in shown.compressed(), f"drawn {shown.compressed()}"
    assert "each cell the largest of a block of 7 x 3 elements" in figure.get_suptitle(), figure.get_suptitle()


@pytest.mark.parametrize(("distances", "options", "error", "match"), [
    (np.uint64(3), {}, ValueError, r"distances must be 1-D or 2-D \(positions x features\), got shape \(\)"),
    (np.zeros((2, 2, 2), np.uint64), {}, ValueError, r"distances must be 1-D or 2-D .* shape \(2, 2, 2\)"),
    (np.zeros((0, 4), np.uint64), {}, ValueError, r"distances must not be empty, got shape \(0, 4\)"),
    (np.zeros(4, np.int64), {}, TypeError, "distances must be unsigned integers .* got int64"),
    (np.zeros(4), {}, TypeError, "distances must be unsigned integers .* got float64"),
    (np.zeros(4, np.uint64), {"dtype": "float8"}, ValueError, "dtype must be one of .* got 'float8'"),
    (np.zeros(4, np.uint64), {"title": None}, TypeError, "title must be a str, got NoneType"),
])
def test_ulp_figure_refuses_bad_input(distances, options, error, match):
    """Wrong ndim, empty, not unsigned integers, an unknown dtype, no title: an error naming the argument."""
    with pytest.raises(error, match=match):
        ulp_figure(distances, **{"title": ulp_title(), "dtype": DTYPE, **options})
