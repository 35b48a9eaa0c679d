"""The 2-D sincos corpus through the real gate: every wrong entry is rejected by a failed check
that names its bug class, with the hint its tables show; every correct entry conforms. Each
entry is declared as a ``[[targets]]`` table (``entry.config_table()``: the preset, the keys
of its overridden fields, its signature) and the whole corpus goes through one
``check_many`` run, each target in a sealed child; each entry is then its own test, so that
a survivor or a false alarm is named in the test id.
"""

import pytest

from meta_tests.corpus.sincos2d_registry import BUG_CLASSES, CORRECT, ENTRIES, WRONG
from spec_tests.assertions import assert_advice_conforms, assert_hint, assert_same_hints, check_named
from spec_tests.assertions import failure_summary as _summary

MIN_WRONG, MIN_CORRECT = 25, 10
# The checks whose failure names each bug class ("non-square" says where a bug shows, not what it is).
CHECKS_OF_CLASS = {
    "axis-order": ("axis-order",),
    "token-order": ("separable", "axis-order"),
    "position-transform": ("positions",),
    "frequency": ("axis-member",),
    "layout": ("axis-member", "pair-norm"),
    "extra-tokens": ("extra-tokens", "shape"),
    "output-layout": ("shape",),
    "precision": ("formula",),
    "width": ("indivisible", "undefined"),
    "non-square": (),
}
# Why no hint names an entry's slip (a value of HINTS that is not a slip id).
NOT_A_MEMBER = "no variant of the declaration is this table"
NOT_VALUES = "the table has another shape: no check of the values runs"
LOW_PRECISION = ("angles below 2 pi in a float16 table: float16 angles next to each other give values within a few "
                 "of the output's roundings of each other, so no value tells a rounded angle from another error that "
                 "small")
WIDTH = "a width that has no value is answered: the values of the widths that have one are right"
# The slip each wrong entry's hint names, or why none does.
HINTS = {
    "meshgrid_h_w_xy": "axes-swapped",
    "mae_meshgrid_ij": "axes-swapped",
    "detr_cat_x_then_y": "axes-swapped",
    "dab_detr_temperatures_crossed": "bases-crossed",
    "rtdetr_meshgrid_ij": "flatten-transposed",
    "width_height_argument_order": "flatten-transposed",
    "flatten_after_transpose": "flatten-transposed",
    "diffusers_normalised_by_height": "normalised-by-other-axis",
    "interpolation_scale_twice": "scale-twice",
    "linspace_with_endpoint": "positions-linspace",
    "square_table_for_any_grid": NOT_VALUES,
    "sd3_crop_top_left": "crop-not-centred",
    "sd3_crop_offsets_crossed": "normalised-by-other-axis",
    "detr_x_normalised_by_height": NOT_A_MEMBER,  # x divided by the normalised y's last row (about 1)
    "deformable_offset_outside": NOT_A_MEMBER,  # an offset of -L/2: it grows with the length
    "detr_normalize_left_off": "positions-unnormalised",
    "cumsum_positions_in_mae": "positions-offset",
    "big_vision_without_the_minus_one": "denominator-quarter-dim",
    "exponent_over_full_width": "base",  # 10000 ** (-k / (D/2)) is base 100 over D/4: the same table
    "detr_dim_t_without_floor": NOT_A_MEMBER,
    "exponent_floor_division": NOT_A_MEMBER,
    "grouped_by_function": "grouping",
    "interleaved_where_concat": "layout",
    "flip_sin_to_cos_left_on": "sin-cos-swapped",
    "cls_token_without_extra_tokens": "extra-tokens-count",
    "cls_row_at_the_end": "extra-tokens-appended",
    "detr_channels_last": "output-layout",
    "detr_in_float16": LOW_PRECISION,
    "pads_indivisible_widths": WIDTH,
}


@pytest.fixture(scope="module")
def reports():
    return check_named({entry.id: entry.declaration() for entry in ENTRIES})


def test_hints_are_those_of_fail_fast(reports):
    """Every wrong entry run under --fail-fast names the slips this run named, word for word: a hint
    does not depend on the run mode."""
    assert_same_hints({entry.id: reports[entry.id] for entry in WRONG},
                      {entry.id: entry.declaration() for entry in WRONG}, fail_fast=True)


def test_each_hints_advice_applied_conforms(reports):
    """Every hint that names keys, pasted into its entry's declaration, makes every call the
    hint reads conform and fails nothing new: a hint is true or absent (and some hints here
    name keys)."""
    assert assert_advice_conforms(reports, WRONG) > 0, "no hint of the corpus names keys: nothing was replayed"


def test_the_corpus_is_large_enough_and_every_wrong_entry_has_its_hint():
    """At least 25 wrong entries and 10 correct ones, each wrong one listed in HINTS, each
    class with its checks."""
    assert len(WRONG) >= MIN_WRONG and len(CORRECT) >= MIN_CORRECT, (len(WRONG), len(CORRECT))
    assert sorted(HINTS) == sorted(entry.id for entry in WRONG)
    assert set(CHECKS_OF_CLASS) == set(BUG_CLASSES)


@pytest.mark.parametrize("entry", WRONG, ids=[entry.id for entry in WRONG])
def test_wrong_entry_fails_a_check_naming_its_bug(entry, reports):
    """A wrong entry fails, never at its import, and one of its failed checks is a check of its bug class."""
    report = reports[entry.id]
    failed = {check.name.split("[")[0] for check in report.failures()}
    assert failed and "import" not in failed, (
        f"survivor: {entry.target} passed the gate under {entry.describe()}; its bug: {entry.description}")
    naming = {check for bug_class in entry.bug_classes for check in CHECKS_OF_CLASS[bug_class]}
    assert failed & naming, (f"{entry.target} ({entry.description}) failed {sorted(failed)}, none of the checks of "
                             f"its classes {entry.bug_classes}: {sorted(naming)}")


@pytest.mark.parametrize("entry", CORRECT, ids=[entry.id for entry in CORRECT])
def test_correct_entry_conforms(entry, reports):
    """The gate accepts a correct entry written in another library's idiom."""
    report = reports[entry.id]
    assert report.conforms, (
        f"false alarm: {entry.target} ({entry.describe()}; {entry.description}) was rejected: {_summary(report)}")


@pytest.mark.parametrize("entry", WRONG, ids=[entry.id for entry in WRONG])
def test_hint_names_the_planted_slip(entry, reports):
    """The failure's hint names the slip planted in the entry, or stays silent where its
    tables are no variant of the declaration."""
    assert_hint(reports[entry.id], HINTS[entry.id], entry.description)
