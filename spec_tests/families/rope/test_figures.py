"""The RoPE figures (:mod:`posenc_spec.families.rope.figures`), drawn from the oracle's values.

Two are compared with baselines in ``baseline_images/`` (pytest-mpl, the tolerance of
spec_tests/figure_compare.py): the wavelengths of every scaling type at a Llama-3-like
base, and the ``q(m) . k(n)`` scores of one seeded pair of vectors. The other tests read
the Figure objects, so that a missing title, label, colorbar or legend entry fails even
after someone regenerates the baselines, and check that the scores drawn are constant
along each diagonal within the rounding bound derived in :func:`score_bound`.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from posenc_spec.families.rope import oracle, tolerance
from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.figures import (
    COLUMN_LABELS,
    MARKERS,
    ORIGINAL_LENGTH_COLOUR,
    rope_difference_figure,
    rope_score_figure,
    rope_wavelength_figure,
    write_rope_difference_figures,
)
from posenc_spec.tolerance import unit_roundoff
from spec_tests.figure_compare import figure_comparison

# The wavelengths: a Llama 3.1-like model (head 128, theta 500000, L0 8192, factor 8), and
# the length at which the length-dependent types (dynamic, longrope) are evaluated.
HEAD_DIM, THETA, ORIGINAL_LENGTH, FACTOR = 128, 500000.0, 8192, 8.0
LONG_LENGTH = 8 * ORIGINAL_LENGTH
LLAMA3 = {"factor": FACTOR, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": ORIGINAL_LENGTH}
PROPORTIONAL_PARTIAL = 0.25  # Gemma 4's share of rotated pairs
WAVELENGTH_TITLE = f"RoPE wavelengths per scaling type: head_dim {HEAD_DIM}, theta {THETA:g}"

# The scores: one seeded q and k of a 64-wide head at the classic base, positions 0..63.
SCORE_HEAD_DIM, SCORE_POSITIONS, SCORE_SEED = 64, 64, 11
SCORE_TITLE = f"q(m) . k(n) of one seeded pair: head_dim {SCORE_HEAD_DIM}, theta 10000, half pairs"


def longrope_factors(pairs: int) -> dict:
    """Phi-3-like lists: ``short_factor`` all 1, ``long_factor`` rising geometrically from 1 to ``FACTOR``."""
    return {"short_factor": [1.0] * pairs, "long_factor": [FACTOR ** (i / (pairs - 1)) for i in range(pairs)],
            "original_max_position_embeddings": ORIGINAL_LENGTH, "factor": FACTOR}


def scaling_conventions() -> dict[str, tuple[RopeConvention, int | None]]:
    """Each scaling type's convention at the Llama-3-like base, and the length it is evaluated at."""
    def conv(rope_type, params=(), **fields):
        return RopeConvention(rope_type=rope_type, theta=THETA, params=dict(params), **fields)

    yarn = {"factor": FACTOR, "original_max_position_embeddings": ORIGINAL_LENGTH}
    return {
        "default": (conv("default"), None),
        f"linear (factor {FACTOR:g})": (conv("linear", {"factor": FACTOR}), None),
        f"dynamic at L = {LONG_LENGTH}": (conv("dynamic", yarn), LONG_LENGTH),
        "yarn": (conv("yarn", yarn), None),
        "llama3": (conv("llama3", LLAMA3), None),
        f"longrope at L = {LONG_LENGTH}": (conv("longrope", longrope_factors(HEAD_DIM // 2)), LONG_LENGTH),
        f"proportional (partial {PROPORTIONAL_PARTIAL:g})": (
            conv("proportional", partial_rotary_factor=PROPORTIONAL_PARTIAL), None),
    }


@functools.cache
def scaling_frequencies() -> dict[str, np.ndarray]:
    """``f'`` of every scaling type from the exact (mpmath) oracle."""
    return {label: oracle.exact_frequencies(conv, HEAD_DIM, length)[0]
            for label, (conv, length) in scaling_conventions().items()}


def score_inputs(layout_of_k: str = "half"):
    """``(q rotated, k rotated, their float64 bounds)``: one seeded q and k at every position
    0..63, rotated by the float64 oracle (k in ``layout_of_k``)."""
    conv = RopeConvention()
    generator = np.random.default_rng(SCORE_SEED)
    positions = np.arange(SCORE_POSITIONS)
    q, k = (np.tile(generator.standard_normal(SCORE_HEAD_DIM), (SCORE_POSITIONS, 1)) for _ in range(2))
    rotated, bounds = [], []
    for x, layout in ((q, "half"), (k, layout_of_k)):
        rotated.append(oracle.apply(x, positions, conv, SCORE_HEAD_DIM, layout))
        bounds.append(tolerance.rope_apply_tolerance(x, positions, conv, SCORE_HEAD_DIM, layout, "float64", "float64",
                                                     angle_dtype="float64"))
    return (*rotated, *bounds)


def score_matrix(layout_of_k: str = "half") -> np.ndarray:
    """``scores[m, n] = q(m) . k(n)``."""
    q, k, _, _ = score_inputs(layout_of_k)
    return q @ k.T


def score_bound() -> np.ndarray:
    """How far each computed ``q(m) . k(n)`` may be from the exact score.

    With the exactly rotated vectors ``q*`` and ``k*``, each element of the computed ones is
    within ``t_q`` and ``t_k`` (:func:`posenc_spec.families.rope.tolerance.rope_apply_tolerance` with every
    dtype float64: the float64 oracle's own bound), so
    ``|q . k - q* . k*| <= |q| . t_k + t_q . |k| + t_q . t_k``; forming the dot product of
    ``d`` terms in float64 adds at most ``gamma_d |q| . |k|`` with
    ``gamma_d = d u / (1 - d u)``, ``u`` float64's unit roundoff (Higham, Accuracy and
    Stability of Numerical Algorithms, 3.1). Two scores on one diagonal share the exact
    value, so they differ by at most the sum of their bounds.
    """
    q, k, t_q, t_k = score_inputs()
    u = unit_roundoff("float64")
    gamma = SCORE_HEAD_DIM * u / (1 - SCORE_HEAD_DIM * u)
    return np.abs(q) @ t_k.T + t_q @ np.abs(k).T + t_q @ t_k.T + gamma * (np.abs(q) @ np.abs(k).T)


def wavelength_figure(frequencies=None, original_length=ORIGINAL_LENGTH):
    return rope_wavelength_figure(scaling_frequencies() if frequencies is None else frequencies,
                                  original_length=original_length, title=WAVELENGTH_TITLE)


# -- compared with baselines -------------------------------------------------------------


@figure_comparison
def test_rope_wavelengths_of_the_scaling_types():
    """Seven scaling types' wavelengths at a Llama-3-like base, with L0 = 8192 across."""
    return wavelength_figure()


@figure_comparison
def test_rope_scores_of_a_seeded_pair():
    """q(m) . k(n) for m, n in 0..63: constant along each diagonal."""
    return rope_score_figure(score_matrix(), title=SCORE_TITLE)


# -- what the pictures hold ------------------------------------------------------------------


def curves(figure) -> dict:
    """The lines of the figure's one plot, by their legend label."""
    return {line.get_label(): line for line in figure.axes[0].lines}


def colorbar_labels(figure) -> list[str]:
    return [axes.get_ylabel() for axes in figure.axes if axes.get_label() == "<colorbar>"]


def panels(figure) -> list:
    return [axes for axes in figure.axes if axes.get_label() != "<colorbar>"]


def test_wavelength_figure_draws_two_pi_over_each_frequency():
    """One curve per scaling type, in order, each with its own marker: 2 pi / f' at pairs 0..63, the
    unrotated pairs (f' = 0) left out and counted in the legend; log scale; axes and title named."""
    frequencies = scaling_frequencies()
    figure = wavelength_figure()
    axes = figure.axes[0]
    drawn = axes.lines[:len(frequencies)]
    assert [line.get_marker() for line in drawn] == list(MARKERS[:len(frequencies)]), "markers"
    for (label, f), line in zip(frequencies.items(), drawn, strict=True):
        unrotated = np.count_nonzero(f == 0)
        assert line.get_label() == label + (f" ({unrotated} pairs not rotated: f' = 0)" if unrotated else ""), \
            f"{label}: legend {line.get_label()!r}"
        np.testing.assert_array_equal(line.get_xdata(), np.arange(HEAD_DIM // 2), err_msg=f"{label}: pairs")
        rotated = f > 0
        np.testing.assert_allclose(line.get_ydata()[rotated], 2 * np.pi / f[rotated], rtol=0, atol=0,
                                   err_msg=f"{label}: wavelengths")
        assert np.all(np.isnan(line.get_ydata()[~rotated])), f"{label}: unrotated pairs drawn"
    proportional = next(label for label in frequencies if label.startswith("proportional"))
    assert np.count_nonzero(frequencies[proportional] == 0) == HEAD_DIM // 2 - int(PROPORTIONAL_PARTIAL * HEAD_DIM // 2)
    assert axes.get_yscale() == "log" and axes.get_xlabel() == "Pair i", (axes.get_yscale(), axes.get_xlabel())
    assert axes.get_ylabel().startswith("Wavelength") and "positions, log scale" in axes.get_ylabel()
    assert figure.get_suptitle().startswith(WAVELENGTH_TITLE), figure.get_suptitle()
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend == [line.get_label() for line in axes.lines], f"legend {legend}"


def test_original_length_line_crosses_the_llama3_and_yarn_ramps():
    """L0 is a dashed black line at 8192 named in the legend; llama3's and yarn's ramps (the pairs
    strictly between the default and the linear wavelengths) run from below the line to above it."""
    frequencies = scaling_frequencies()
    lines = curves(wavelength_figure())
    line = lines[f"original_max_position_embeddings = {ORIGINAL_LENGTH}"]
    assert set(line.get_ydata()) == {ORIGINAL_LENGTH}, f"L0 line at {set(line.get_ydata())}"
    assert line.get_linestyle() == "--" and line.get_color() == ORIGINAL_LENGTH_COLOUR, "L0 line style"
    default = lines["default"].get_ydata()
    linear = lines[f"linear (factor {FACTOR:g})"].get_ydata()
    for name in ("llama3", "yarn"):
        wavelength = lines[name].get_ydata()
        assert np.array_equal(wavelength, 2 * np.pi / frequencies[name]), name
        ramp = wavelength[(wavelength > default) & (wavelength < linear)]
        assert ramp.size and ramp.min() < ORIGINAL_LENGTH < ramp.max(), \
            f"{name}: ramp wavelengths {ramp} do not straddle L0 = {ORIGINAL_LENGTH}"


def test_scores_drawn_are_constant_along_each_diagonal():
    """The image is q(m) . k(n); each diagonal is constant within score_bound(), while rows are not (the
    matrix is not a constant), and k rotated in the other layout breaks the diagonals."""
    scores, bound = score_matrix(), score_bound()
    figure = rope_score_figure(scores, title=SCORE_TITLE)
    image = panels(figure)[0].images[0]
    shown = np.asarray(image.get_array())
    np.testing.assert_array_equal(shown, scores, err_msg="rope_score_figure image")
    along_diagonal = np.abs(shown[1:, 1:] - shown[:-1, :-1])
    allowed = bound[1:, 1:] + bound[:-1, :-1]
    worst = np.unravel_index(np.argmax(along_diagonal / allowed), allowed.shape)
    assert np.all(along_diagonal <= allowed), (
        f"q(m).k(n) moves along the diagonal at (m, n) = {tuple(int(i) for i in worst)}: "
        f"{along_diagonal[worst]:.3g} > bound {allowed[worst]:.3g}")
    assert np.any(np.abs(np.diff(shown, axis=1)) > bound[:, 1:] + bound[:, :-1]), "the scores are constant along rows"
    mixed = score_matrix("interleaved")
    assert np.any(np.abs(mixed[1:, 1:] - mixed[:-1, :-1]) > allowed), "q half, k interleaved: still constant"


def test_score_figure_has_its_colorbar_labels_and_title():
    """RdBu_r symmetric about 0 on a colorbar named q(m) . k(n); axes name query and key positions."""
    scores = score_matrix()
    figure = rope_score_figure(scores, title=SCORE_TITLE)
    image = panels(figure)[0].images[0]
    limit = np.abs(scores).max()
    assert (image.get_cmap().name, image.get_clim()) == ("RdBu_r", (-limit, limit)), image.get_clim()
    assert colorbar_labels(figure) == ["q(m) \N{MIDDLE DOT} k(n)"], colorbar_labels(figure)
    axes = panels(figure)[0]
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("Key position n", "Query position m")
    assert figure.get_suptitle().startswith(SCORE_TITLE) and "constant along each diagonal" in figure.get_suptitle()


def test_difference_figures_name_pairs_positions_and_columns(tmp_path):
    """inv_freq is one unnamed row over 'Pair i'; a cache's rows are named by their positions and its
    columns as given; write_rope_difference_figures writes difference_NAME.png, titled with NAME."""
    conv = RopeConvention()
    expected, _ = conv.frequencies(SCORE_HEAD_DIM)
    bound = tolerance.rope_frequency_tolerance(conv, SCORE_HEAD_DIM)
    figure = rope_difference_figure(expected, expected, bound, title="t", columns=COLUMN_LABELS["inv_freq"])
    for axes in panels(figure):
        assert (axes.get_xlabel(), axes.get_ylabel(), list(axes.get_yticks())) == ("Pair i", "", []), "inv_freq axes"
        assert axes.images[0].get_array().shape == (1, SCORE_HEAD_DIM // 2), "inv_freq not drawn as one row"
    positions = np.array([0, 1, 127, 128, 4096])
    cos, sin = oracle.cache(positions, conv, SCORE_HEAD_DIM)
    cache_bound = tolerance.rope_cache_tolerance(positions, conv, SCORE_HEAD_DIM, "float32")
    parts = {"cos": (cos, cos, cache_bound), "sin": (sin + cache_bound * 2, sin, cache_bound)}
    paths = write_rope_difference_figures(parts, tmp_path, title="target under c", columns="Cache column",
                                          positions=positions)
    assert {name: path.name for name, path in paths.items()} == {"cos": "difference_cos.png",
                                                                  "sin": "difference_sin.png"}
    assert all(path.stat().st_size > 0 for path in paths.values())
    figure = rope_difference_figure(*parts["sin"], title="target under c: sin", columns="Cache column",
                                    positions=positions)
    axes = panels(figure)[1]
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("Cache column", "Position"), "cache axes"
    assert axes.yaxis.get_major_formatter()(4, 0) == "4096", "row 4 not labelled with its position"
    assert "sin" in figure.get_suptitle() and f"{sin.size} of {sin.size} elements out of bound" in \
        figure.get_suptitle(), figure.get_suptitle()


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: rope_wavelength_figure({}, original_length=8, title="t"), TypeError, "frequencies must be a non-empty"),
    (lambda: rope_wavelength_figure({"a": np.ones((2, 2))}, original_length=8, title="t"), ValueError,
     r"frequencies\['a'\] must be a non-empty 1-D array .* shape \(2, 2\)"),
    (lambda: rope_wavelength_figure({"a": [1.0, -1.0]}, original_length=8, title="t"), ValueError,
     r"frequencies\['a'\] must be finite and >= 0, got \[-1.\]"),
    (lambda: rope_wavelength_figure({"a": [1.0]}, original_length=0, title="t"), ValueError,
     "original_length must be an int >= 1 .* got 0"),
    (lambda: rope_wavelength_figure({"a": [1.0]}, original_length=8, title=None), TypeError,
     "title must be a str, got NoneType"),
    (lambda: rope_score_figure(np.ones(3), title="t"), ValueError, r"scores must be 2-D .* shape \(3,\)"),
    (lambda: rope_score_figure(np.full((2, 2), np.nan), title="t"), ValueError, "scores must be finite, got 4 NaN"),
    (lambda: rope_difference_figure(np.ones(2), np.ones(2), np.ones(2), title="t", columns="c", positions=[0, 1]),
     ValueError, "positions must be None for a 1-D array"),
    (lambda: rope_difference_figure(np.ones(2), np.ones(2), np.ones(2), title="t", columns=None), TypeError,
     "columns must be a str"),
])
def test_bad_input_is_refused(call, error, match):
    """Empty, wrongly shaped or negative frequencies, a bad L0 or title, bad scores or difference
    arguments: an error naming the argument and the value."""
    with pytest.raises(error, match=match):
        call()
