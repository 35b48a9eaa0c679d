"""The gate's power, measured on the corpus: every wrong implementation is rejected, every
correct one accepted, each under the convention it declares.

The whole corpus goes through one ``check_many`` call (each target in a sealed child of its
own, the corpus modules imported once; expected tables shared between targets of the same
convention) under ``--fail-fast``: a target fails if and only if one of its checks fails, so
stopping a wrong one at its first failure gives the verdict of the full run at a fraction of
its calls (:func:`test_fail_fast_gives_the_full_runs_verdicts` holds a sample to that). Each
entry is then its own test, so a survivor or a false alarm is named in the test id.
"""

import pytest

from meta_tests.corpus import CORRECT, ENTRIES, WRONG
from meta_tests.corpus.hints import SINUSOIDAL as HINTS
from spec_tests.assertions import (
    assert_advice_conforms,
    assert_fail_fast_agrees,
    assert_hint,
    assert_same_hints,
    check_named,
    failure_summary,
)


def test_a_sample_gets_the_verdicts_and_hints_of_the_whole_corpus():
    """Every 20th wrong entry is rejected with the hint of its slip and every 10th correct
    one accepted, gated in one fail-fast run (the whole corpus's tests are the slow tier)."""
    wrong, correct = WRONG[::20], CORRECT[::10]
    reports = check_named({entry.id: entry.declaration() for entry in (*wrong, *correct)}, fail_fast=True)
    for entry in wrong:
        _assert_rejected(entry, reports[entry.id])
        assert_hint(reports[entry.id], HINTS[entry.id], entry.description)
    for entry in correct:
        _assert_accepted(entry, reports[entry.id])


@pytest.fixture(scope="module")
def reports():
    return check_named({entry.id: entry.declaration() for entry in ENTRIES}, fail_fast=True)


def test_fail_fast_gives_the_full_runs_verdicts(reports):
    """A sample of wrong and correct entries, run in full: the same verdicts, and every check
    the fail-fast run failed fails in the full run too."""
    assert_fail_fast_agrees(reports, {entry.id: entry.declaration() for entry in [*WRONG[::20], *CORRECT[::10]]})


def test_hints_are_those_of_a_full_run(reports):
    """Every wrong entry run in full names the slips this run named, word for word: a hint
    does not depend on the run mode."""
    assert_same_hints({entry.id: reports[entry.id] for entry in WRONG},
                      {entry.id: entry.declaration() for entry in WRONG}, fail_fast=False)


def test_each_hints_advice_applied_conforms(reports):
    """Every hint that names keys, pasted into its entry's declaration, makes every call the
    hint reads conform and fails nothing new: a hint is true or absent (and some hints here
    name keys)."""
    assert assert_advice_conforms(reports, WRONG) > 0, "no hint of the corpus names keys: nothing was replayed"


@pytest.mark.parametrize("entry", WRONG, ids=[entry.id for entry in WRONG])
def test_wrong_implementation_is_rejected(entry, reports):
    """The gate rejects a wrong implementation, through a failed check rather than an import error."""
    _assert_rejected(entry, reports[entry.id])


def _assert_rejected(entry, report) -> None:
    assert report.status != "error", f"{entry.target} did not import: {failure_summary(report)}"
    assert not report.conforms, (
        f"survivor: {entry.target} passed the gate under {entry.describe()}; "
        f"its bug: {entry.description}")


@pytest.mark.parametrize("entry", CORRECT, ids=[entry.id for entry in CORRECT])
def test_correct_implementation_is_accepted(entry, reports):
    """The gate accepts a correct implementation written in another library's idiom."""
    _assert_accepted(entry, reports[entry.id])


def _assert_accepted(entry, report) -> None:
    assert report.conforms, (
        f"false alarm: {entry.target} ({entry.describe()}; {entry.description}) "
        f"was rejected: {failure_summary(report)}")


@pytest.mark.parametrize("entry", WRONG, ids=[entry.id for entry in WRONG])
def test_hint_names_the_planted_slip(entry, reports):
    """The failure's hint names the slip planted in the entry, or stays silent where the tables
    cannot show it."""
    assert_hint(reports[entry.id], HINTS[entry.id], entry.description)
