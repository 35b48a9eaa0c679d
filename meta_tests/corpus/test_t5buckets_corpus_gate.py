"""The T5-bucket corpus through the real gate: every entry declared as a user declares it
(``T5_ENTRIES``, what the benchmarks read too), checked
in sealed children by one ``check_many`` run. Every wrong entry fails the check that shows its
slip (:data:`EXPECTED`) and gets the hint that names it; every correct entry conforms, with no
xfails file (the copies of transformers' code noted for ``int-min[D]`` alone).
"""

from __future__ import annotations

import pytest

from meta_tests.corpus.t5buckets_registry import T5_CORRECT, T5_ENTRIES, T5_WRONG
from spec_tests.assertions import assert_advice_conforms, assert_hint, assert_same_hints, check_named
from spec_tests.assertions import failure_summary as _summary

# Per wrong entry: a check that fails (the one whose message shows the slip) and the hint.
EXPECTED = {
    "halving_forgotten": ("range[int64]", "t5-halving-forgotten"),
    "max_exact_before_halving": ("formula[int64]", "t5-max-exact-before-halving"),
    "halving_in_both_directions": ("saturation[int64]", "t5-halved-causal"),
    "sign_flipped": ("halves[int64]", "t5-sign-flipped"),
    "zero_in_upper_half": ("monotone[int64]", "t5-query-in-upper-half"),
    "causal_flag_inverted": ("halves[int64]", "t5-direction"),
    "causal_future_by_distance": ("halves[int64]", "t5-causal-future-by-distance"),
    "causal_clamps_the_past": ("halves[int64]", "t5-sign-flipped"),
    "exact_region_a_quarter": ("exact-small[int64]", "t5-exact-region"),
    "log_buckets_miscounted": ("formula[int64]", "t5-log-steps"),
    "log_of_distance_not_ratio": ("formula[int64]", "t5-log-of-distance"),
    "missing_clamp": ("range[int64]", "t5-missing-clamp"),
    "clamp_to_full_count": ("range[int64]", "t5-clamp-full-count"),
    "rounded_not_truncated": ("formula[int64]", "t5-rounding"),
    "ceil_from_deberta": ("formula[int64]", "t5-rounding"),
    "log_in_bfloat16": ("formula[int64]", "t5-log-bfloat16"),
    "log_in_float16": ("formula[int64]", "t5-log-float16"),
    "integer_division_before_log": ("formula[int64]", "t5-integer-division"),
    "int32_wraparound": ("formula[extremes:int64]", "t5-int32-overflow"),
    "max_distance_hard_coded": ("formula[int64]", "t5-settings"),
    "module_ignores_max_distance": ("formula[int64]", "t5-settings"),
    "bucket_count_hard_coded": ("halves[5x9]", "t5-settings"),
    "table_keys_from_one": ("exact-small[5x9]", "positions-offset"),
    "table_queries_at_start": ("monotone[9x5]", "t5-query-offset"),
}


@pytest.fixture(scope="module")
def reports():
    return check_named({entry.id: entry.declaration() for entry in T5_ENTRIES})


@pytest.mark.parametrize("entry", T5_WRONG, ids=[entry.id for entry in T5_WRONG])
def test_wrong_bucket_function_fails_the_check_that_shows_it(entry, reports):
    """A wrong entry imports, and fails the check whose values show its slip."""
    report = reports[entry.id]
    failed = [check.name for check in report.failures()]
    check_id, _ = EXPECTED[entry.id]
    assert "import" not in failed and check_id in failed, (
        f"{entry.target} ({entry.description}): expected {check_id} to fail; {_summary(report)}")


@pytest.mark.parametrize("entry", T5_WRONG, ids=[entry.id for entry in T5_WRONG])
def test_hint_names_the_planted_slip(entry, reports):
    """The hint names the slip planted in the entry, or stays silent where no slip explains it."""
    assert_hint(reports[entry.id], EXPECTED[entry.id][1], entry.description)


@pytest.mark.parametrize("entry", T5_CORRECT, ids=[entry.id for entry in T5_CORRECT])
def test_correct_bucket_function_conforms(entry, reports):
    """A correct entry in another idiom conforms on the whole grid; nothing but -2**(b-1) is ever noted."""
    report = reports[entry.id]
    assert report.conforms, f"false alarm: {entry.target} ({entry.description}): {_summary(report)}"
    noted = [check.name for check in report.checks if check.status == "noted"]
    assert all(name.startswith(("int-min[", "call[int-min:")) for name in noted), noted


def test_the_corpus_list_is_every_entry_declared():
    """Every entry is declared once, with the api and its own target, and every wrong one has its
    expected check here."""
    assert sorted(entry.id for entry in T5_ENTRIES) == sorted(entry.id for entry in (*T5_WRONG, *T5_CORRECT))
    assert set(EXPECTED) == {entry.id for entry in T5_WRONG}
    assert all(keys["api"] == "t5-buckets" and keys["target"].endswith(f":{entry.id}")
               for entry in T5_ENTRIES for keys in [entry.config_table()])


@pytest.mark.parametrize(("entry_id", "noted"), [
    ("transformers_copy_encoder", ["int-min[int32]", "int-min[int64]"]),
    ("transformers_copy_decoder", ["int-min[int32]", "int-min[int64]"]),
    ("transformers_copy_guarded", ["call[int-min:int32]", "call[int-min:int64]"]),
])
def test_copies_of_transformers_code_are_noted_at_int_min_alone(entry_id, noted, reports):
    """abs() wrapping at -2**(b-1), or a guard raising there, is noted with the input and never fails."""
    report = reports[entry_id]
    assert report.conforms, _summary(report)
    found = [check for check in report.checks if check.status == "noted"]
    assert [check.name for check in found] == noted
    assert all("is no difference of two int" in check.message for check in found), [c.message for c in found]


def test_each_hints_advice_applied_conforms(reports):
    """Every hint that names keys, pasted into its entry's declaration, makes every call the
    hint reads conform and fails nothing new: a hint is true or absent."""
    assert assert_advice_conforms(reports, T5_WRONG) > 0, "no hint of the corpus names keys: nothing was replayed"


def test_hints_are_those_of_fail_fast(reports):
    """Every wrong entry run under ``--fail-fast`` gets the hints of the full run, word for word:
    a hint does not depend on the run mode."""
    assert_same_hints({entry.id: reports[entry.id] for entry in T5_WRONG},
                      {entry.id: entry.declaration() for entry in T5_WRONG}, fail_fast=True)
