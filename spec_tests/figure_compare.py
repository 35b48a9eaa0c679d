"""How every figure test compares with its baseline: one tolerance, one style, no metadata;
and what every written picture must be (:func:`assert_png`)."""

import pytest
from PIL import Image

from posenc_spec import figures

# The four pictures of a table (posenc_spec.families.sinusoidal.diagnostics.table_figures), by file stem,
# in the order plot and check --plots write them.
FIGURE_NAMES = ("heatmap", "row_profiles", "similarity", "difference")
# A written figure is at least this many pixels on each side: a drawn picture, not an empty
# or collapsed canvas (the smallest, plot's 40x16 table, is hundreds of pixels each way).
MIN_PNG_SIDE = 100

# How far a figure may differ from its baseline: pytest-mpl's RMS over all pixels and
# channels, in 0-255 levels. One matplotlib build renders these figures bit for bit (RMS 0:
# Agg, the bundled FreeType and DejaVu fonts, no version metadata), so the allowance is for
# changes nobody could see: the same tables rounded to float16 measure at most 0.08. The
# smallest deliberate changes measured are about 0.33 (the seed 000 similarity matrix
# under tensor2tensor's frequencies; one column of the row profiles raised by 0.05), a
# colormap swap 19 or more, a transposed array 45 or more;
# meta_tests/test_figure_tests.py checks both sides. A matplotlib upgrade moves text
# pixels by more than this: re-render with tox -e figures-regenerate and review.
IMAGE_TOLERANCE_RMS = 0.2

FIGURE_COMPARE = {
    "style": figures.STYLE,
    "tolerance": IMAGE_TOLERANCE_RMS,
    "savefig_kwargs": figures.SAVEFIG_KWARGS,
    "deterministic": True,
}
figure_comparison = pytest.mark.mpl_image_compare(**FIGURE_COMPARE)


def assert_png(path) -> None:
    """``path`` is a PNG file of a drawn figure: it opens as PNG, more than MIN_PNG_SIDE pixels each way."""
    with Image.open(path) as image:
        assert image.format == "PNG" and min(image.size) > MIN_PNG_SIDE, (
            f"{path}: {image.format} {image.size}, expected a PNG over {MIN_PNG_SIDE} pixels each way")
