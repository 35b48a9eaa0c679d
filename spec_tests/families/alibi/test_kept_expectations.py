"""The expectations the judge keeps between calls and targets: the same numbers a fresh
:func:`~posenc_spec.families.alibi.properties.expectation` gives, read-only, and no more bytes
than the budget."""

import numpy as np
import pytest

from posenc_spec.caching import BoundedCache
from posenc_spec.families.alibi import judge
from posenc_spec.families.alibi.conventions import get_convention
from posenc_spec.families.alibi.grid import calls
from posenc_spec.families.alibi.properties import expectation


def _keep(monkeypatch, budget):
    monkeypatch.setattr(judge, "_kept", BoundedCache(budget))
    monkeypatch.setattr(judge, "_kept_long", BoundedCache(budget))


@pytest.fixture
def empty_keep(monkeypatch):
    _keep(monkeypatch, judge.KEPT_EXPECTATION_BYTES)


@pytest.mark.parametrize(("name", "signature"), [("paper", "module-ij"), ("bloom", "mask-heads-dtype"),
                                                 ("labml", "heads-mask")])
def test_kept_expectation_is_the_fresh_one_and_read_only(empty_keep, name, signature):
    """A kept expectation equals a fresh one array for array (what the checks derive from it
    too), is handed out again, and cannot be written."""
    conv = get_convention(name)
    for call in calls(signature, 12, conv):
        kept = judge.call_expectation(call, conv, "float16")
        fresh = expectation(call.num_heads, judge.positions_of(call, conv), conv, "float16")
        for index, (held, made) in enumerate(zip(kept.derived(), fresh.derived(), strict=True)):
            assert np.array_equal(held, made), (call.size, index)
            assert not held.flags.writeable
        assert judge.call_expectation(call, conv, "float16") is kept
        assert judge.call_expectation(call, conv, "float32") is not kept


def test_kept_expectations_stay_within_the_budget(empty_keep, monkeypatch):
    """Past the byte budget the least recently used expectations are dropped, the newest kept."""
    conv = get_convention("paper")
    asked = [call for heads in range(1, 129) for call in calls("module-ij", heads, conv, deep=False)]
    sizes = [judge._nbytes(expectation(call.num_heads, judge.positions_of(call, conv), conv)) for call in asked]
    budget = sum(sizes) // 2
    assert all(call.num_heads * call.q_len * call.k_len <= judge.LONG_ELEMENTS for call in asked)
    _keep(monkeypatch, budget)
    made = [judge.call_expectation(call, conv, "float32") for call in asked]
    kept = [exp for exp, _ in judge._kept.values.values()]
    assert 1 < len(kept) < len(made)
    assert judge._kept.used == sum(judge._nbytes(exp) for exp in kept) <= budget
    assert kept == made[-len(kept):]


def test_long_expectations_are_kept_apart(empty_keep):
    """A long call's expectation is kept in a keep of its own: it never pushes out a small one."""
    conv = get_convention("paper")
    small, *_, longest = calls("module-ij", 128, conv)
    assert small.num_heads * small.q_len * small.k_len <= judge.LONG_ELEMENTS \
        < longest.num_heads * longest.q_len * longest.k_len
    kept = judge.call_expectation(small, conv, "float32")
    judge._kept.budget = judge._nbytes(kept)  # room for the small one alone (the fixture's keep)
    long_kept = judge.call_expectation(longest, conv, "float32")
    assert judge.call_expectation(longest, conv, "float32") is long_kept
    assert judge.call_expectation(small, conv, "float32") is kept
    assert len(judge._kept.values) == len(judge._kept_long.values) == 1


def test_kept_bytes_count_what_the_checks_derive(empty_keep):
    """An expectation's bytes in the keep count the arrays its checks derive, each buffer once."""
    conv = get_convention("paper")
    call = max(calls("module-ij", 12, conv), key=lambda call: call.q_len * call.k_len)  # rows and keys
    exp = judge.call_expectation(call, conv, "float32")
    steps, bounds = exp.key_step_expectation
    base = exp.table.nbytes + exp.tolerance.nbytes + exp.shifted_tolerance.nbytes + exp.judged.nbytes
    assert judge._nbytes(exp) >= base + steps.nbytes + bounds.nbytes + exp.diagonal_bound.nbytes
    assert judge._kept_long.used + judge._kept.used == judge._nbytes(exp)
