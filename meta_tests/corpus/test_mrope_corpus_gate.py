"""The multi-axis rotary corpus through the real gate: every entry declared as a user declares it,
checked in sealed children by one ``check_many`` run. Every wrong entry fails the check that shows
its slip (:data:`EXPECTED`) and gets the hint that names it, or none where its caches are no slip
the hints know; every correct entry conforms."""

from __future__ import annotations

import pytest

from meta_tests.corpus.mrope_registry import MROPE_BUG_CLASSES, MROPE_CORRECT, MROPE_ENTRIES, MROPE_WRONG
from spec_tests.assertions import assert_advice_conforms, assert_hint, assert_same_hints, check_named
from spec_tests.assertions import failure_summary as _summary

# Why an entry gets no hint: no variant of the convention gives its caches (a false hint is a false alarm).
SECOND_HALF_T = "the second half's slots all take t: no section split of the three axes gives one axis twice"
TOKENS_REORDERED = "the grid's tokens walked in another order, not its axes' slots: no convention variant moves tokens"
OTHER_SLOT_ORDER = "slots dealt to the axes over another range: neither the contiguous nor Qwen3's interleaved order"
FREQUENCIES_TWICE = "a quarter-head of frequencies listed twice: no theta and no frequency rule gives a list repeated"
LOW_PRECISION = "positions or angles rounded in a narrow type: too many ways to round to recognise reliably"

# Per wrong entry: a check that fails (one whose message shows the slip) and the hint.
EXPECTED = {
    "sections_swapped": ("formula[grid:1x6x10]", "mrope-sections"),
    "section_not_doubled": ("formula[grid:1x6x10]", SECOND_HALF_T),
    "WanSplitSwapped": ("formula[grid:1x6x10]", "mrope-sections"),
    "cogvideox_shares_exchanged": ("formula[grid:1x6x10]", "mrope-sections"),
    "axes_reversed": ("formula[grid:1x6x10]", "mrope-axis-order"),
    "qwen3_offsets_exchanged": ("formula[grid:1x6x10]", "mrope-axis-order"),
    "hunyuan_dit_rows_first": ("formula[grid:1x6x10]", "mrope-axis-order"),
    "VideoGridXY": ("formula[grid:3x5x7]", TOKENS_REORDERED),
    "qwen3_contiguous": ("formula[grid:1x6x10]", "mrope-interleaved"),
    "qwen3_interleave_range": ("formula[grid:1x6x10]", OTHER_SLOT_ORDER),
    "theta_ten_thousand": ("formula[text:64]", "mrope-theta"),
    "hunyuan_theta": ("formula[text:64]", "mrope-theta"),
    "per_axis_for_shared": ("formula[text:64]", "mrope-frequencies"),
    "shared_for_per_axis": ("formula[text:64]", "mrope-frequencies"),
    "exponent_over_half_axis": ("formula[text:64]", "mrope-theta"),
    "half_head_inv_freq": ("formula[text:64]", FREQUENCIES_TWICE),
    "pixtral_halves_for_strided": ("formula[text:64]", "mrope-frequencies"),
    "cosmos_ntk_factor_dropped": ("formula[text:64]", "mrope-theta"),
    "flux_rotate_half": ("formula[text:64]", "mrope-layout"),
    "qwen2_interleaved_pairs": ("formula[text:64]", "mrope-layout"),
    "sin_cos_swapped": ("identity[text:64]", "sin-cos-swapped"),
    "positions_from_one": ("identity[text:64]", "positions-offset"),
    "flux_bfloat16_ids": ("formula[long]", LOW_PRECISION),
    "angles_in_float16": ("norm[text:64]", LOW_PRECISION),
    "crop_end_scaled": ("formula[crop:2x4x6]", "mrope-crop"),
    "crop_ignored": ("formula[crop:2x4x6]", "mrope-crop"),
    "text_after_spatial_extent": ("formula[video:2x1x1]", "mrope-text-after-vision"),
    "text_after_image_skips_one": ("formula[image:1x1x1]", "mrope-text-after-vision"),
    "text_after_image_overlaps": ("formula[image:1x1x1]", "mrope-text-after-vision"),
    "merge_forgotten_in_advance": ("formula[image:1x4x6]", "mrope-text-after-vision"),
    "temporal_step_truncated": ("formula[video:4x2x3]", "mrope-temporal-step"),
    "apply_rotate_half_on_interleaved": ("formula[long:float32]", "apply-pairing-mixed"),
    "apply_sign_flipped": ("formula[text:64:float32]", "angle-sign"),
}


@pytest.fixture(scope="module")
def reports():
    return check_named({entry.id: entry.declaration() for entry in MROPE_ENTRIES})


@pytest.mark.parametrize("entry", MROPE_WRONG, ids=[entry.id for entry in MROPE_WRONG])
def test_wrong_implementation_fails_the_check_that_shows_it(entry, reports):
    """A wrong entry imports, and fails the check whose values show its slip."""
    failed = [check.name for check in reports[entry.id].failures()]
    check_id, _ = EXPECTED[entry.id]
    assert "import" not in failed and check_id in failed, (
        f"{entry.target} ({entry.description}): expected {check_id} to fail; {_summary(reports[entry.id])}")


@pytest.mark.parametrize("entry", MROPE_WRONG, ids=[entry.id for entry in MROPE_WRONG])
def test_hint_names_the_planted_slip(entry, reports):
    """The hint names the slip planted in the entry, or stays silent where no slip explains it."""
    assert_hint(reports[entry.id], EXPECTED[entry.id][1], entry.description)


@pytest.mark.parametrize("entry", MROPE_CORRECT, ids=[entry.id for entry in MROPE_CORRECT])
def test_correct_implementation_conforms(entry, reports):
    """A correct entry in another idiom conforms on the whole grid (no false alarm)."""
    report = reports[entry.id]
    assert report.conforms, f"false alarm: {entry.target} ({entry.description}): {_summary(report)}"


def test_the_corpus_is_large_enough_and_every_wrong_entry_is_expected():
    """At least 10 correct entries and 25 mutants, each mutant with its expected check and a known bug class."""
    assert len(MROPE_CORRECT) >= 10 and len(MROPE_WRONG) >= 25
    assert set(EXPECTED) == {entry.id for entry in MROPE_WRONG}
    assert all(entry.bug_classes and set(entry.bug_classes) <= set(MROPE_BUG_CLASSES) for entry in MROPE_WRONG)


def test_each_hints_advice_applied_conforms(reports):
    """Every hint that names keys, pasted into its entry's declaration, makes every call the
    hint reads conform and fails nothing new: a hint is true or absent."""
    assert assert_advice_conforms(reports, MROPE_WRONG) > 0, "no hint of the corpus names keys: nothing was replayed"


def test_hints_are_those_of_fail_fast(reports):
    """Every wrong entry run under ``--fail-fast`` gets the hints of the full run, word for word:
    a hint does not depend on the run mode."""
    assert_same_hints({entry.id: reports[entry.id] for entry in MROPE_WRONG},
                      {entry.id: entry.declaration() for entry in MROPE_WRONG}, fail_fast=True)
