"""The figure tests can fail: a changed colormap, a transposed or otherwise different array
makes the comparison with the baseline fail, invisible changes pass, and the default
pytest run compares at all.

Each changed figure is drawn with the same functions, data and rendering as its test in
spec_tests/families/sinusoidal/test_figures.py, test_figures_plot.py or test_figures_rope.py, saved as pytest-mpl saves
it, and compared with the real baseline by matplotlib's ``compare_images`` (what
pytest-mpl calls). One end-to-end run of pytest in a subprocess shows pytest-mpl itself
failing a changed figure under the project's default options.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.style
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.testing.compare import compare_images
from PIL import Image

from posenc_spec import figures
from posenc_spec.families.rope import figures as rope
from posenc_spec.families.sinusoidal import animation, diagnostics
from posenc_spec.families.sinusoidal import figures as sinusoidal_figures
from posenc_spec.families.sinusoidal.properties import expectation
from posenc_spec.figures import regression
from posenc_spec.regression.ulp import INFINITE_ULP
from reference_impls import family
from spec_tests.families.rope import test_figures as rope_tests
from spec_tests.families.sinusoidal import test_figures as figure_tests
from spec_tests.families.sinusoidal import test_figures_plot as plot_tests
from spec_tests.figure_compare import FIGURE_COMPARE, IMAGE_TOLERANCE_RMS

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "baseline_images"
TOLERANCE = IMAGE_TOLERANCE_RMS
GRID_XLABEL = "<-- present     ...     past -->"


@dataclass(frozen=True)
class ChangedFigure:
    baseline: str  # the figure test (and baseline file) it is compared with
    change: str
    draw: Callable[[], Figure]

    def __str__(self):
        return f"{self.baseline}: {self.change}"


def formula(convention: str, num_positions: int, width: int, **overrides) -> np.ndarray:
    return family.sinusoidal_encoding(num_positions, width, convention, **overrides)


def correct_float32_difference() -> Figure:
    exp = expectation(50, 64, "vaswani", "float32")
    table = exp.table.astype(np.float32).astype(np.float64)
    return figures.difference_figure(table, exp.table, exp.tolerance, title="ln(10000) hard-coded as 9.21")


def plot_figure(function, table) -> Figure:
    """A picture of ``posenc-spec plot`` as test_figures_plot.py draws it, of another table."""
    return function(table, plot_tests.expected(), title=plot_tests.TITLE)


def ulp_figure_of(distances) -> Figure:
    return regression.ulp_figure(distances, title=plot_tests.ulp_title(), dtype=plot_tests.DTYPE)


def infinite_shown_as_identical(distances: np.ndarray) -> np.ndarray:
    return np.where(distances == INFINITE_ULP, np.uint64(0), distances)


def llama3_never_scaled() -> Figure:
    """The wavelengths with llama3's curve the default one (its scaling never applied: bug 28 of
    docs/families/rope-reference.md)."""
    frequencies = rope_tests.scaling_frequencies()
    return rope_tests.wavelength_figure({**frequencies, "llama3": frequencies["default"]})


def scores_figure(scores) -> Figure:
    return rope.rope_score_figure(scores, title=rope_tests.SCORE_TITLE)


# At least one change for every baseline of test_figures.py, test_figures_plot.py and
# test_figures_rope.py, among
# them each kind the issue names: another colormap, a transposed array, another array.
CHANGED_FIGURES = [
    ChangedFigure("test_seed000_heatmap", "viridis instead of Blues",
                  lambda: sinusoidal_figures.position_heatmap_figure(figure_tests.seed000_table(), cmap="viridis")),
    ChangedFigure("test_seed000_heatmap", "the table transposed",
                  lambda: sinusoidal_figures.position_heatmap_figure(figure_tests.seed000_table().T)),
    ChangedFigure("test_seed000_row_profiles", "the concat layout",
                  lambda: sinusoidal_figures.row_profiles_figure(formula("concat", 300, 512))),
    ChangedFigure("test_seed000_similarity", "tensor2tensor's frequencies (shift 1)",
                  lambda: figures.similarity_over_positions_figure(formula("tensor2tensor", 300, 512), title=None,
                                                                   figsize=(6, 4))),
    ChangedFigure("test_seed002_pcolormesh", "magma instead of viridis",
                  lambda: sinusoidal_figures.position_pcolormesh_figure(figure_tests.seed002_table(), cmap="magma")),
    ChangedFigure("test_seed003_timestep_heatmap", "interleaved instead of concat",
                  lambda: sinusoidal_figures.timestep_embedding_figure(formula("vaswani", 500, 128),
                                                                       dpi=figure_tests.LARGE_FIGURE_DPI)),
    ChangedFigure("test_seed003_animation_first_frame", "frame 1",
                  lambda: animation.timestep_sweep_frame_figure(figure_tests.seed003_embedding(100, 64), 1)),
    ChangedFigure("test_seed003_animation_middle_frame", "frame 51",
                  lambda: animation.timestep_sweep_frame_figure(figure_tests.seed003_embedding(100, 64), 51)),
    ChangedFigure("test_seed003_animation_last_frame", "frame 98",
                  lambda: animation.timestep_sweep_frame_figure(figure_tests.seed003_embedding(100, 64), 98)),
    ChangedFigure("test_seed004_formula_table", "the table transposed",
                  lambda: sinusoidal_figures.formula_table_figure(figure_tests.seed004_table().T)),
    ChangedFigure("test_seed004_formula_dimensions_grid", "dimensions picked with seed 1",
                  lambda: figures.single_dimensions_grid_figure(figure_tests.seed004_table(), seed=1,
                                                                xlabel=GRID_XLABEL)),
    ChangedFigure("test_seed004_learned_table_figure_on_formula", "magma instead of viridis",
                  lambda: figures.learned_table_figure(figure_tests.seed004_table(), cmap="magma",
                                                       title="Sinusoidal table at GPT-2's shape")),
    ChangedFigure("test_seed004_similarity_two_ways_on_formula", "the table transposed",
                  lambda: figures.similarity_two_ways_figure(figure_tests.seed004_table().T)),
    ChangedFigure("test_seed001_similarity_on_formula", "Greens instead of Blues",
                  lambda: figures.similarity_over_positions_figure(figure_tests.seed004_table(), cmap="Greens")),
    ChangedFigure("test_difference_figure_of_a_wrong_table", "a correct table instead",
                  correct_float32_difference),
    ChangedFigure("test_plot_heatmap_of_a_wrong_table", "the correct table instead",
                  lambda: plot_figure(diagnostics.table_heatmap_figure, plot_tests.correct_table())),
    ChangedFigure("test_plot_row_profiles_of_a_wrong_table", "the correct table instead",
                  lambda: plot_figure(diagnostics.table_row_profiles_figure, plot_tests.correct_table())),
    ChangedFigure("test_plot_similarity_of_a_wrong_table", "the correct table instead",
                  lambda: plot_figure(diagnostics.table_similarity_figure, plot_tests.correct_table())),
    ChangedFigure("test_ulp_figure_of_seeded_distances", "the infinite distances shown as identical",
                  lambda: ulp_figure_of(infinite_shown_as_identical(plot_tests.seeded_distances()))),
    ChangedFigure("test_ulp_figure_of_a_one_dimensional_output", "the infinite distances shown as identical",
                  lambda: ulp_figure_of(infinite_shown_as_identical(plot_tests.one_row_of_distances()))),
    ChangedFigure("test_rope_wavelengths_of_the_scaling_types", "llama3 scaling never applied", llama3_never_scaled),
    ChangedFigure("test_rope_wavelengths_of_the_scaling_types", "original_max_position_embeddings drawn at 4096",
                  lambda: rope_tests.wavelength_figure(original_length=rope_tests.ORIGINAL_LENGTH // 2)),
    ChangedFigure("test_rope_scores_of_a_seeded_pair", "k rotated in the interleaved layout",
                  lambda: scores_figure(rope_tests.score_matrix("interleaved"))),
    ChangedFigure("test_rope_scores_of_a_seeded_pair", "the matrix transposed (k(m) . q(n))",
                  lambda: scores_figure(rope_tests.score_matrix().T)),
]

# Changes nobody can see, which must pass: the figure as its test draws it, and the same
# table rounded to float16 (the tolerance's reason).
UNCHANGED_FIGURES = [
    ChangedFigure("test_seed000_heatmap", "as drawn by its test", figure_tests.test_seed000_heatmap),
    ChangedFigure("test_seed000_heatmap", "the table rounded to float16",
                  lambda: sinusoidal_figures.position_heatmap_figure(figure_tests.seed000_table().astype(np.float16))),
]


def rms_against_baseline(case: ChangedFigure, tmp_path: Path) -> float:
    """Save ``case``'s figure as pytest-mpl does (its style and savefig options, no
    metadata) and return the RMS difference from the baseline; 0 when identical."""
    result = tmp_path / f"{case.baseline}.png"
    with matplotlib.style.context(FIGURE_COMPARE["style"], after_reset=True):
        case.draw().savefig(result, **FIGURE_COMPARE["savefig_kwargs"])
    baseline = BASELINES / f"{case.baseline}.png"
    with Image.open(baseline) as expected, Image.open(result) as actual:
        if expected.size != actual.size:
            return float("inf")  # pytest-mpl fails a size mismatch before comparing pixels
    comparison = compare_images(str(baseline), str(result), tol=0, in_decorator=True)
    return 0.0 if comparison is None else float(comparison["rms"])


@pytest.mark.parametrize("case", CHANGED_FIGURES, ids=str)
def test_changed_figure_fails_its_comparison(case, tmp_path):
    """Each deliberate change to a plotted array or colormap differs from the baseline by more than the tolerance."""
    rms = rms_against_baseline(case, tmp_path)
    print(f"{case}: RMS {rms:.3g} (tolerance {TOLERANCE})")
    assert rms > TOLERANCE, f"{case}: RMS {rms:.3g} is within the tolerance {TOLERANCE}; the comparison would pass"


@pytest.mark.parametrize("case", UNCHANGED_FIGURES, ids=str)
def test_invisible_change_passes_its_comparison(case, tmp_path):
    """The figure as its test draws it, or from a float16-rounded table, is within the tolerance."""
    rms = rms_against_baseline(case, tmp_path)
    print(f"{case}: RMS {rms:.3g} (tolerance {TOLERANCE})")
    assert rms <= TOLERANCE, f"{case}: RMS {rms:.3g} exceeds the tolerance {TOLERANCE}"


def test_every_figure_test_has_a_changed_version():
    """No figure test is left without a deliberate change that must fail it."""
    compared = {name for module in (figure_tests, plot_tests, rope_tests) for name, value in vars(module).items()
                if name.startswith("test_") and any(mark.name == "mpl_image_compare"
                                                    for mark in getattr(value, "pytestmark", []))}
    changed = {case.baseline for case in CHANGED_FIGURES}
    assert compared and compared <= changed, f"figure tests with no changed version: {sorted(compared - changed)}"


def test_every_figure_test_has_a_metadata_free_baseline():
    """Each compared figure has its PNG in baseline_images/, without a Software (version) entry."""
    for case in CHANGED_FIGURES:
        path = BASELINES / f"{case.baseline}.png"
        assert path.is_file(), f"{case.baseline}: no baseline at {path}"
        with Image.open(path) as image:
            assert "Software" not in image.info, f"{path} names its software: {image.info['Software']}"


def test_default_run_compares_figures(pytestconfig):
    """pyproject's addopts turn on pytest-mpl's comparison with baseline_images/ (without --mpl it checks nothing)."""
    addopts = pytestconfig.getini("addopts")
    assert "--mpl" in addopts and "--mpl-baseline-path=baseline_images" in addopts, f"addopts = {addopts}"
    assert pytestconfig.getoption("--mpl"), "this run does not compare figures (--mpl is off)"


END_TO_END = '''
import pytest

from posenc_spec import figures
from posenc_spec.families.sinusoidal import figures as sinusoidal_figures
from reference_impls import numpy_vectorized

COMPARE = dict(style=figures.STYLE, savefig_kwargs=figures.SAVEFIG_KWARGS, deterministic=True,
               tolerance={tolerance!r}, filename="test_seed002_pcolormesh.png")


def table():
    return numpy_vectorized.positional_encoding(50, 512)


@pytest.mark.mpl_image_compare(**COMPARE)
def test_unchanged():
    return sinusoidal_figures.position_pcolormesh_figure(table())


@pytest.mark.mpl_image_compare(**COMPARE)
def test_other_colormap():
    return sinusoidal_figures.position_pcolormesh_figure(table(), cmap="magma")


@pytest.mark.mpl_image_compare(**COMPARE)
def test_transposed():
    return sinusoidal_figures.position_pcolormesh_figure(table().T)
'''


def test_pytest_mpl_fails_changed_figures_under_the_default_options(tmp_path):
    """pytest with only the project's own options: seed 002's figure passes, in magma or transposed it fails."""
    test_file = tmp_path / "test_changed_seed002.py"
    test_file.write_text(textwrap.dedent(END_TO_END.format(tolerance=TOLERANCE)))
    report = tmp_path / "report.xml"
    python_path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": python_path}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), f"--mpl-results-path={tmp_path / 'results'}",
         f"--junitxml={report}", str(test_file)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    output = run.stdout + run.stderr
    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        failure = case.find("failure")
        outcomes[case.get("name")] = "passed" if failure is None else failure.get("message", "") + (failure.text or "")
    assert run.returncode == 1, f"pytest exit {run.returncode}, expected 1 (some tests failed)\n{output}"
    assert outcomes.get("test_unchanged") == "passed", f"the unchanged figure: {outcomes.get('test_unchanged')}"
    for name in ("test_other_colormap", "test_transposed"):
        assert "Image files did not match" in outcomes.get(name, ""), f"{name}: {outcomes.get(name)}\n{output}"
