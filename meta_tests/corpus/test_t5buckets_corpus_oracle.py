"""The T5-bucket corpus against the family's oracle and band: every wrong entry is wrong
somewhere on its declaration's grid, at the smallest input listed in :data:`SMALLEST`, and
every correct entry fails no check of its grid (at ``-2**(b-1)``, which no caller passes, the
copies of transformers' code are noted, never failed).

Each entry is called as its declaration says (:func:`meta_tests.corpus.t5buckets_registry.call`,
through the family's :mod:`~posenc_spec.families.t5buckets.grid`), in-process, and judged by
:mod:`~posenc_spec.families.t5buckets.judge`. ``int-min[D]`` is never a failure: nearly every
real implementation gets it wrong too (``spec_tests/families/t5buckets/test_real_code.py``),
so a slip must show elsewhere.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from meta_tests.corpus.t5buckets_registry import T5_BUG_CLASSES, T5_CORRECT, T5_WRONG, call, t5_correct, t5_wrong
from posenc_spec.families.t5buckets import judge, tolerance

# Per wrong entry, the smallest input that shows it: (slot, relative position, bucket returned).
SMALLEST = {
    "halving_forgotten": ("int64", 1, 33),
    "max_exact_before_halving": ("int64", -9, 9),
    "halving_in_both_directions": ("int64", -9, 8),
    "sign_flipped": ("int64", -1, 17),
    "zero_in_upper_half": ("int64", 0, 16),
    "causal_flag_inverted": ("int64", 1, 17),
    "causal_future_by_distance": ("int64", 1, 1),
    "causal_clamps_the_past": ("int64", -1, 0),
    "exact_region_a_quarter": ("int64", -10, 9),
    "log_buckets_miscounted": ("int64", -17, 9),
    "log_of_distance_not_ratio": ("int64", -8, 11),
    "missing_clamp": ("int64", -128, 16),
    "clamp_to_full_count": ("int64", -128, 16),
    "rounded_not_truncated": ("int64", -10, 9),
    "ceil_from_deberta": ("int64", -9, 9),
    "log_in_bfloat16": ("int64", -90, 15),
    "log_in_float16": ("int64", -169, 106),
    "integer_division_before_log": ("int64", -12, 8),
    "int32_wraparound": ("extremes:int64", -(2**31), -(2**31)),
    "max_distance_hard_coded": ("int64", -19, 17),
    "module_ignores_max_distance": ("int64", -19, 17),
    "bucket_count_hard_coded": ("5x9", 1, 17),
    "table_keys_from_one": ("5x9", -1, 0),
    "table_queries_at_start": ("9x5", 0, 4),
}


@functools.cache
def _verdicts(entry) -> tuple[list[str], tuple | None]:
    """The failed check ids of ``entry``'s grid, and its smallest out-of-band input outside
    ``int-min[D]``: ``(slot, relative position, bucket)``. A call that raises at
    ``-2**(b-1)``, which no caller passes, is noted by the gate, not failed: skipped here."""
    convention = entry.convention()
    failed, smallest, first = [], None, {}
    for probe in entry.probes():
        try:
            buckets = call(entry, probe)
        except Exception:
            if probe.role == "int-min":
                continue
            raise
        if probe.role == "repeat":
            failed += [result.name for result in [judge.judge_repeat(first[probe.slot], buckets)] if not result.passed]
            continue
        first[probe.slot] = buckets
        failed += [result.name for result in judge.judge_call(probe, buckets, convention) if result.status == "failed"]
        relative = probe.relative_positions(convention)
        values = np.asarray(buckets)
        if probe.role == "int-min" or values.shape != relative.shape:
            continue
        low, high = tolerance.bucket_band(relative, convention)
        outside = np.flatnonzero((values < low) | (values > high))
        if outside.size:
            flat = int(outside[np.argmin(np.abs(relative.flat[outside].astype(np.float64)))])
            found = (probe.slot, int(relative.flat[flat]), int(values.flat[flat]))
            if smallest is None or abs(found[1]) < abs(smallest[1]):
                smallest = found
    return failed, smallest


@pytest.mark.parametrize("entry", T5_WRONG, ids=[entry.id for entry in T5_WRONG])
def test_wrong_entry_is_wrong_at_its_smallest_input(entry):
    """A wrong entry fails a check beyond ``int-min[D]``, and the smallest relative position
    outside the band is the one :data:`SMALLEST` names."""
    failed, smallest = _verdicts(entry)
    beyond = [name for name in failed if not name.startswith("int-min[")]
    assert beyond, f"survivor: {entry.target} passed its grid; its bug: {entry.description}"
    assert smallest == SMALLEST[entry.id], f"{entry.id}: smallest input {smallest}, failed {beyond[:4]}"


@pytest.mark.parametrize("entry", T5_CORRECT, ids=[entry.id for entry in T5_CORRECT])
def test_correct_entry_passes_every_check(entry):
    """A correct entry in another idiom fails no check of its grid."""
    failed, smallest = _verdicts(entry)
    assert failed == [] and smallest is None, f"false alarm: {entry.target} ({entry.description}) failed {failed}"


def test_corpus_size_and_coverage():
    """At least 20 wrong entries, each seen in public code or a thread, covering every bug
    class; at least 8 correct ones; SMALLEST lists exactly the wrong ones."""
    assert len(T5_WRONG) >= 20 and len(T5_CORRECT) >= 8, (len(T5_WRONG), len(T5_CORRECT))
    assert all(entry.seen_in for entry in T5_WRONG)
    assert {name for entry in T5_WRONG for name in entry.bug_classes} == set(T5_BUG_CLASSES)
    assert set(SMALLEST) == {entry.id for entry in T5_WRONG}


@pytest.mark.parametrize("register, keys, message", [
    (t5_correct, {"idiom": "x", "bucket_preset": "t5_decoder"}, "did you mean 't5-decoder'"),
    (t5_correct, {"idiom": "x", "max_distance": 4}, "max_distance must exceed max_exact = 8"),
    (t5_correct, {"idiom": "x", "signature": "module"}, "signature must be one of static, method, table, bias"),
    (t5_correct, {"idiom": "x", "bucket_args": {"distance": "n"}}, "bucket_args name unknown role(s) distance"),
    (t5_correct, {"idiom": "x", "layout": "half"}, "unknown key(s) layout"),
    (t5_wrong, {"bug": "x", "classes": ("sign",), "seen": ""}, "needs its bug classes and where it was seen"),
    (t5_wrong, {"bug": "x", "classes": ("signs",), "seen": "y"}, "classes must be a tuple of halving"),
])
def test_registration_refuses_a_bad_declaration(register, keys, message):
    """A bad declaration is refused at registration, naming the function."""
    def bad_entry(relative_position):
        return relative_position

    with pytest.raises(ValueError, match=r"^bad_entry: ") as raised:
        register(**keys)(bad_entry)
    assert message in str(raised.value), str(raised.value)
