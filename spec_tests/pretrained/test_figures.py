"""Seeds 001 and 004's learned-embedding figures drawn from real learned tables.

MiniLM's table (a BERT, as seed 001's title promises) is compared with baselines in
``baseline_images/`` (files ``pretrained_*.png``) under the same settings and tolerance
as every other figure (spec_tests/families/sinusoidal/test_figures.py). GPT-2's table (what both seeds load)
is drawn when the local Hugging Face cache has it; there is no baseline for it, so those
tests check what each figure shows instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from posenc_spec import figures, pretrained
from posenc_spec.tolerance import unit_roundoff
from spec_tests.figure_compare import FIGURE_COMPARE


def _compare(filename: str):
    return pytest.mark.mpl_image_compare(filename=filename, **FIGURE_COMPARE)


@pytest.fixture(scope="module")
def minilm_table():
    return pretrained.minilm_position_table()


@_compare("pretrained_minilm_table.png")
def test_minilm_table_figure(minilm_table):
    """Seed 004's matrix figure (the transpose) of MiniLM's 512 x 384 table. The colours
    span -0.05 to 0.05, not the seed's -0.2 to 0.2 for GPT-2: MiniLM's values are smaller
    (standard deviation 0.025, 99% within 0.065), and at 0.2 the picture is one flat colour."""
    return figures.learned_table_figure(minilm_table, title="MiniLM (BERT) position embedding matrix",
                                        vmin=-0.05, vmax=0.05)


@_compare("pretrained_minilm_similarity.png")
def test_minilm_similarity_figure(minilm_table):
    """Seed 001's position-wise cosine similarity (Blues, hidden spines), from a real BERT's table."""
    return figures.similarity_over_positions_figure(minilm_table)


@_compare("pretrained_minilm_similarity_two_ways.png")
def test_minilm_similarity_two_ways_figure(minilm_table):
    """Seed 004's cosine similarity over positions and across dimensions of MiniLM's table."""
    return figures.similarity_two_ways_figure(minilm_table)


@_compare("pretrained_minilm_dimensions_grid.png")
def test_minilm_dimensions_grid_figure(minilm_table):
    """Seed 004's grid of 12 embedding dimensions (seeded picks) of MiniLM's table over all 512 positions."""
    return figures.single_dimensions_grid_figure(minilm_table, seed=0)


# -- GPT-2, when cached -------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_table():
    if not pretrained.is_cached("gpt2"):
        pytest.skip(pretrained.skip_reason("gpt2", "GPT2Model"))
    return pretrained.position_table(pretrained.load_pretrained("gpt2", "GPT2Model"))


def _images(figure: Figure) -> list[np.ndarray]:
    return [np.asarray(image.get_array()) for axes in figure.axes for image in axes.get_images()]


@pytest.mark.pretrained
def test_gpt2_table_figure(gpt2_table):
    """Seed 004's matrix figure of GPT-2's ``wpe`` shows the table transposed, 768 x 1024."""
    figure = figures.learned_table_figure(gpt2_table, title="GPT-2 position embedding matrix")
    (image,) = _images(figure)
    assert np.array_equal(image, gpt2_table.T), f"image {image.shape} is not wpe transposed"


def _cosine_bound(length: int) -> float:
    """How far two float64 evaluations of a cosine of vectors of ``length`` may differ: a
    dot product of unit vectors is within ``length * u`` of exact (Higham, Thm 3.1), and
    normalising adds a few ``u``; twice that for two evaluations."""
    return 2 * (length + 4) * unit_roundoff("float64")


@pytest.mark.pretrained
def test_gpt2_similarity_figures(gpt2_table):
    """Seeds 001 and 004's similarity figures of GPT-2's ``wpe`` show the cosine similarity
    of its 1024 positions (and of its 768 dimensions, 1 on the diagonal)."""
    over_positions = _images(figures.similarity_over_positions_figure(gpt2_table))
    two_ways = _images(figures.similarity_two_ways_figure(gpt2_table))
    expected = pretrained.cosine_matrix(gpt2_table)
    bound = _cosine_bound(gpt2_table.shape[1])
    for image in (over_positions[0], two_ways[0]):
        assert image.shape == (1024, 1024), f"position similarity image {image.shape}"
        assert np.max(np.abs(image - expected)) <= bound, "the image is not the cosine similarity of positions"
    across = two_ways[1]
    assert across.shape == (768, 768), f"dimension similarity image {across.shape}"
    assert np.max(np.abs(np.diag(across) - 1)) <= _cosine_bound(gpt2_table.shape[0])


@pytest.mark.pretrained
def test_gpt2_dimensions_grid_figure(gpt2_table):
    """Seed 004's grid of GPT-2's ``wpe`` plots 12 whole columns (dimensions), each over 1024 positions."""
    figure = figures.single_dimensions_grid_figure(gpt2_table, seed=0)
    dims = figures.pick_dimensions(768, 12, 0)
    lines = [axes.get_lines()[0] for axes in figure.axes]
    for line, dim in zip(lines, dims, strict=True):
        assert np.array_equal(line.get_ydata(), gpt2_table[:, dim]), f"panel of dimension {dim}"
