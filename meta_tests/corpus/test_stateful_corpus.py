"""The gate's power on the stateful corpus: each wrong entry fails the check of the call
sequence that exposes it, every correct one, written in the same idioms, conforms.

The wrong entries run in full, so that a sequence's check is judged even behind an earlier
failure of the grid; the correct ones under ``--fail-fast`` (a conforming target makes every
call either way). Each entry is then a test of its own, named by its id.
"""

import pytest

from meta_tests.corpus.stateful_registry import STATEFUL_CORRECT, STATEFUL_WRONG
from posenc_spec.gate.engine import sequence_probes
from spec_tests.assertions import check_named, failure_summary


def test_a_sample_fails_its_sequences_checks_and_conforms_where_correct():
    """Every 9th wrong entry fails the check of its sequence, in full, and every 5th correct
    one conforms under --fail-fast, each group gated in one run (the whole corpus's tests are
    the slow tier)."""
    wrong, correct = STATEFUL_WRONG[::9], STATEFUL_CORRECT[::5]
    for entry, report in zip(wrong, check_named({entry.id: entry.declaration() for entry in wrong}).values(),
                             strict=True):
        _assert_fails_its_sequence(entry, report)
    conforming = check_named({entry.id: entry.declaration() for entry in correct}, fail_fast=True)
    for entry, report in zip(correct, conforming.values(), strict=True):
        _assert_conforms(entry, report)


@pytest.fixture(scope="module")
def reports():
    wrong = check_named({entry.id: entry.declaration() for entry in STATEFUL_WRONG})
    return {**wrong, **check_named({entry.id: entry.declaration() for entry in STATEFUL_CORRECT}, fail_fast=True)}


@pytest.mark.parametrize("entry", STATEFUL_WRONG, ids=[entry.id for entry in STATEFUL_WRONG])
def test_wrong_entry_fails_the_check_of_its_sequence(entry, reports):
    """The check of the sequence the entry names fails (``decode[d=64]``, ``aliasing`` ...),
    and its message names the call that showed it."""
    _assert_fails_its_sequence(entry, reports[entry.id])


def _assert_fails_its_sequence(entry, report) -> None:
    failed = [check for check in report.failures() if entry.exposed_by(check.name)]
    assert failed, (f"{entry.target} ({entry.description}) did not fail {entry.sequence}: "
                    f"{failure_summary(report) or 'it conforms'}")
    message = failed[0].message
    if entry.sequence == "aliasing":
        assert message.startswith("the call for ") and " changed " in message, message
    else:
        notes = [probe.note for probe in sequence_probes(report.declaration) if probe.check_id == failed[0].name]
        assert any(note in message for note in notes), f"{message!r} names none of the calls {notes}"


@pytest.mark.parametrize("entry", STATEFUL_CORRECT, ids=[entry.id for entry in STATEFUL_CORRECT])
def test_correct_stateful_entry_conforms(entry, reports):
    """A correct stateful implementation passes every check, the sequences' included."""
    _assert_conforms(entry, reports[entry.id])


def _assert_conforms(entry, report) -> None:
    assert report.conforms, f"false alarm: {entry.target} ({entry.description}): {failure_summary(report)}"
