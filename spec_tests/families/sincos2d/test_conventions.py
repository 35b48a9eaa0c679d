"""The 2-D sincos conventions: every column's source written out, the layouts' round trips,
and the validation of every key (one-line errors naming the key and the value)."""

import numpy as np
import pytest

from posenc_spec.families.sincos2d import grid
from posenc_spec.families.sincos2d.conventions import PRESETS, Sincos2d, get_convention
from posenc_spec.families.sinusoidal.conventions import UndefinedWidthError


def test_columns_written_out_for_width_8():
    """MAE puts [sin col | cos col | sin row | cos row]; DETR [sin row, cos row interleaved | the
    same for col]; by-function [sin A | sin B | cos A | cos B]."""
    mae = PRESETS["mae"].columns(8)
    assert mae.axis.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    assert mae.pair.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert mae.is_sin.tolist() == [True, True, False, False] * 2
    detr = PRESETS["detr"].columns(8)
    assert detr.axis.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert detr.pair.tolist() == [0, 0, 1, 1] * 2 and detr.is_sin.tolist() == [True, False] * 4
    grouped = Sincos2d(grouping="by-function").columns(8)
    assert grouped.axis.tolist() == [1, 1, 0, 0, 1, 1, 0, 0]
    assert grouped.pair.tolist() == [0, 1] * 4 and grouped.is_sin.tolist() == [True] * 4 + [False] * 4
    assert grouped.of_axis(0).tolist() == [2, 3, 6, 7]


def test_cos_first_columns_written_out_for_width_8():
    """Cos first puts [cos col | sin col | cos row | sin row]; interleaved cos0 sin0 ...; by
    function [cos A | cos B | sin A | sin B]: the same frequencies, each pair's functions swapped."""
    concat = Sincos2d(first_function="cos").columns(8)
    assert concat.axis.tolist() == [1, 1, 1, 1, 0, 0, 0, 0] and concat.pair.tolist() == [0, 1, 0, 1] * 2
    assert concat.is_sin.tolist() == [False, False, True, True] * 2
    interleaved = Sincos2d(pairing="interleaved", first_function="cos").columns(8)
    assert interleaved.pair.tolist() == [0, 0, 1, 1] * 2 and interleaved.is_sin.tolist() == [False, True] * 4
    grouped = Sincos2d(grouping="by-function", first_function="cos").columns(8)
    assert grouped.pair.tolist() == [0, 1] * 4 and grouped.is_sin.tolist() == [False] * 4 + [True] * 4


def test_positions_of_each_transform():
    """Each transform's positions for a 3-long axis, written out."""
    np.testing.assert_allclose(Sincos2d(offset=1.0, scale=0.5).positions(3), [0.5, 1.0, 1.5])
    np.testing.assert_allclose(PRESETS["diffusers"].positions(4), [0, 4, 8, 12])  # i * 16 / 4
    np.testing.assert_allclose(PRESETS["sd3"].positions(2), [95 * 64 / 192, 96 * 64 / 192])  # top = 95
    np.testing.assert_allclose(PRESETS["detr"].positions(2), [2 * np.pi / (2 + 1e-6), 4 * np.pi / (2 + 1e-6)])
    np.testing.assert_allclose(PRESETS["deformable-detr"].positions(1), [np.pi / (1 + 1e-6)])


@pytest.mark.parametrize("name", PRESETS)
def test_layout_round_trips_and_tokens_follow_the_order(name):
    """``arrange`` then ``ungrid`` gives the cells back (with a batch axis of 1 too); a token's
    row and column follow the declared order."""
    conv = PRESETS[name]
    cells = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    table = conv.arrange(cells)
    assert table.shape == conv.shape(2, 3, 4)
    back, extra = conv.ungrid(table[None], 2, 3)
    np.testing.assert_array_equal(back, cells)
    assert extra.shape == (conv.extra_tokens, 4) and not extra.any()
    rows, cols = conv.token_cells(2, 3)
    row_major = ([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2])
    column_major = ([0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2])
    assert (rows.tolist(), cols.tolist()) == (row_major if conv.token_order == "row-major" else column_major)


def test_ungrid_refuses_another_shape():
    """A transposed grid or a missing extra row is a shape error naming both shapes."""
    with pytest.raises(ValueError, match=r"shape \(6, 8\) is not the declared tokens shape \(7, 8\)"):
        PRESETS["mae-cls"].ungrid(np.zeros((6, 8)), 2, 3)
    with pytest.raises(ValueError, match="channels-first shape"):
        PRESETS["detr"].ungrid(np.zeros((1, 8, 3, 2)), 2, 3)
    with pytest.raises(ValueError, match="is not the declared"):
        PRESETS["mae"].ungrid(np.zeros(5), 1, 5)


def test_widths_without_a_value():
    """Widths not divisible by 4 have no value in any convention; width 4 has none under freq_shift 1."""
    for width in grid.INDIVISIBLE_WIDTHS:
        with pytest.raises(UndefinedWidthError, match=f"width {width} is not a multiple of 4"):
            PRESETS["mae"].check_width(width)
    assert PRESETS["mae"].check_width(4) == 4
    with pytest.raises(UndefinedWidthError, match="width 4 under freq_shift=1 .* at least 8"):
        PRESETS["big-vision"].check_width(4)


@pytest.mark.parametrize("keys, error, message", [
    ({"first_axis": "x"}, ValueError, "first_axis must be one of row, col, got 'x'"),
    ({"grouping": "by-pair"}, ValueError, "grouping must be one of by-axis, by-function"),
    ({"pairing": "interleaved", "grouping": "by-function"}, ValueError, "grouping 'by-function' takes pairing"),
    ({"freq_shift": 2}, ValueError, "freq_shift must be 0 or 1, got 2"),
    ({"freq_shift": True}, ValueError, "freq_shift must be 0 or 1, got True"),
    ({"base": 1.0}, ValueError, "row_base must be greater than 1, got 1.0"),
    ({"col_base": float("nan")}, ValueError, "col_base must be a finite number, got nan"),
    ({"row_base": "10000"}, TypeError, "row_base must be a real number, got '10000'"),
    ({"position": "absolute"}, ValueError, "position must be one of index, relative, crop, normalized"),
    ({"position": "crop"}, ValueError, "position 'crop' needs max_size"),
    ({"base_size": 16.0}, ValueError, "base_size is not a parameter of position 'index' .*offset, scale"),
    ({"position": "relative", "interpolation_scale": 0.0}, ValueError, "interpolation_scale must be greater than 0"),
    ({"scale": 0.0}, ValueError, "scale must not be 0"),
    ({"position": "normalized", "eps": -1.0}, ValueError, "eps must be >= 0"),
    ({"position": "crop", "max_size": 2.5}, TypeError, "max_size must be an int, got 2.5"),
    ({"extra_tokens": -1}, ValueError, "extra_tokens must be an int from 0 to 64, got -1"),
    ({"extra_tokens": 1, "output_layout": "grid"}, ValueError, "extra_tokens needs output_layout 'tokens'"),
    ({"token_order": "snake"}, ValueError, "token_order must be one of row-major, column-major"),
    ({"temperature": 20}, ValueError, "unknown 2-D sincos key.s. temperature; known: base,"),
])
def test_bad_keys_are_one_line_errors(keys, error, message):
    """Each bad key or value raises one line naming the key and the value."""
    with pytest.raises(error, match=message) as raised:
        get_convention("mae", **keys)
    assert "\n" not in str(raised.value)


def test_get_convention_base_and_unknown_preset():
    """``base`` sets both axes; changing the transform drops the old one's parameters; an unknown
    preset names the known ones."""
    conv = get_convention("detr", base=20)
    assert (conv.row_base, conv.col_base) == (20.0, 20.0) and conv == PRESETS["dab-detr"]
    assert conv.name() == "dab-detr"
    moved = PRESETS["deformable-detr"].replace(position="relative")
    assert moved.offset is None and moved.base_size == 16.0
    assert "relative(base_size=16,interpolation_scale=1)" in moved.name()
    with pytest.raises(ValueError, match="unknown 2-D sincos convention 'vit'; known: mae, mae-cls"):
        get_convention("vit")


def test_grids_out_of_range():
    """Grid sides are ints of at least 1, at most max_size under crop."""
    with pytest.raises(ValueError, match="height must be an int from 1 to 192, got 193"):
        PRESETS["sd3"].check_grid(193, 2)
    with pytest.raises(ValueError, match="grid width must be an int from 1 to 4096, got 0"):
        PRESETS["mae"].check_grid(2, 0)
    with pytest.raises(TypeError, match="height must be an int, got 2.0"):
        PRESETS["mae"].check_grid(2.0, 2)
