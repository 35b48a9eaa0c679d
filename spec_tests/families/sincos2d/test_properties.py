"""Each 2-D property passes on correct tables of every preset and fails on the table of a slip
it is there to catch; the call grid lists its check ids."""

import numpy as np
import pytest

from posenc_spec.families.sincos2d import grid, oracle, properties
from posenc_spec.families.sincos2d.conventions import PRESETS

GRID = (3, 5, 16)  # non-square, every side above 1


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("grid", [GRID, (1, 1, 8), (1, 7, 12), (7, 1, 8)], ids=["3x5", "1x1", "1x7", "7x1"])
def test_every_property_holds_on_a_correct_float32_table(name, grid):
    """The oracle's table rounded to float32 passes (or skips, where the grid has nothing to
    tell) every check."""
    conv = PRESETS[name]
    table = oracle.table(*grid, conv).astype(np.float32)[None]  # a batch axis of 1, as modules return
    results = properties.run_all(table, properties.expectation(*grid, conv, "float32"))
    bad = {check: result.message for check, result in results.items() if result.status == "failed"}
    assert not bad, f"{name} at {grid}: {bad}"


def broken(name: str, **changes):
    """The table of ``PRESETS[name]`` changed by ``changes``, on GRID, in float32."""
    return oracle.table(*GRID, PRESETS[name].replace(**changes)).astype(np.float32)


def swap_halves(table):
    half = table.shape[-1] // 2
    return np.concatenate([table[:, half:], table[:, :half]], axis=1)


# slip -> (preset, the table, the checks that must fail, words of the failing message)
SLIPS = {
    "swapped axes": ("mae", lambda: swap_halves(oracle.table(*GRID, PRESETS["mae"])),
                     {"formula", "axis-order", "axis-member", "positions"}, "the axes are swapped"),
    "transposed flatten": ("mae", lambda: broken("mae", token_order="column-major"),
                           {"formula", "separable", "axis-order"}, "constant along neither"),
    "cls row of ones": ("mae-cls", lambda: np.concatenate([np.ones((1, 16)), oracle.table(*GRID, PRESETS["mae"])]),
                        {"formula", "extra-tokens"}, "extra row"),
    "cls row missing": ("mae-cls", lambda: oracle.table(*GRID, PRESETS["mae"]), {"shape"}, "(16, 16)"),
    "normalised by the other length": ("diffusers", lambda: broken("diffusers", base_size=16 * 5 / 3),
                                       {"formula", "axis-member", "positions"}, "positions read from pair 0"),
    "interpolation scale twice": ("diffusers", lambda: broken("diffusers", interpolation_scale=1 / 2),
                                  {"formula", "positions"}, "relative transform"),
    "concat where interleaved": ("detr", lambda: broken("detr", pairing="concat"),
                                 {"formula", "axis-member", "positions"}, "interleaved 1-D table"),
    "sin squared": ("mae", lambda: np.sign(oracle.table(*GRID, PRESETS["mae"])) * oracle.table(*GRID, PRESETS["mae"])
                    ** 2, {"formula", "pair-norm"}, "sin^2 + cos^2"),
    "channels last": ("detr", lambda: oracle.table(*GRID, PRESETS["detr"]).transpose(1, 2, 0), {"shape"},
                      "channels-first"),
    "NaN": ("big-vision", lambda: np.full(GRID[:2] + (GRID[2],), np.nan).reshape(-1, GRID[2]), {"finite", "formula"},
            "NaN"),
}


@pytest.mark.parametrize("slip", SLIPS)
def test_each_slip_fails_the_checks_that_catch_it(slip):
    """The broken table fails exactly where expected (a superset is allowed only of formula-like
    checks listed), and one of the failures says why in words."""
    name, make, must_fail, words = SLIPS[slip]
    results = properties.run_all(make(), properties.expectation(*GRID, PRESETS[name], "float32"))
    failed = {check for check, result in results.items() if result.status == "failed"}
    assert must_fail <= failed, f"{slip}: failed {sorted(failed)}, expected at least {sorted(must_fail)}"
    messages = " | ".join(results[check].message for check in failed)
    assert words in messages, f"{slip}: {words!r} not in {messages}"


def test_separable_and_axis_order_skip_where_the_grid_cannot_tell():
    """A 1x7 grid: every half is a function of the column; a 1x1 grid has no axis to tell."""
    conv = PRESETS["mae"]
    for size, check in (((1, 7, 8), properties.check_separable), ((1, 1, 8), properties.check_axis_order)):
        result = check(oracle.table(*size, conv), properties.expectation(*size, conv, "float64"))
        assert result.status == "skipped", result


def test_the_call_grid_and_its_check_ids():
    """Non-square, degenerate and prime grids at four widths, width 4 and three widths not
    divisible by 4; a square-only signature gets square grids; crop caps the sides."""
    ids = grid.plan_ids(grid.calls(PRESETS["mae"]))
    assert ids[0] == "import" and ids[-3:] == ["determinism", "aliasing", "global-state"]
    for check_id in ("axis-order[13x32:d=768]", "formula[1x1:d=8]", "positions[7x11:d=12]", "formula[2x3:d=4]",
                     "indivisible[d=6]", "indivisible[d=766]"):
        assert check_id in ids, check_id
    assert "undefined[d=4]" in grid.plan_ids(grid.calls(PRESETS["big-vision"]))
    square = grid.calls(PRESETS["mae"], "dim-size")
    assert {(call.height, call.width) for call in square} == {(1, 1), (2, 2), (7, 7), (16, 16)}
    capped = grid.calls(PRESETS["mae"].replace(position="crop", max_size=12), "h-w-dim")
    assert max(max(call.height, call.width) for call in capped) == 12
    with pytest.raises(ValueError, match="signature must be one of h-w-dim"):
        grid.calls(PRESETS["mae"], "fn(d)")


@pytest.mark.parametrize(("signature", "wide"), [("h-w-dim", (13, 32)), ("dim-size", (16, 16))])
def test_the_model_width_is_called_at_the_last_grid_only(signature, wide):
    """Width 768 (ViT-Base), a wide table's cost, is called once: at 13x32, or 16x16 for a
    square-only signature."""
    made = grid.calls(PRESETS["mae"], signature)
    assert [(call.height, call.width) for call in made if call.dim == grid.WIDE] == [wide]
