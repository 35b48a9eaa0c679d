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
    monkeypatch.setattr(judge, "_kept", BoundedCache(budget, largest=budget // judge.KEPT_SHARE))


@pytest.fixture
def empty_keep(monkeypatch):
    _keep(monkeypatch, judge.KEPT_EXPECTATION_BYTES)


@pytest.mark.parametrize(("name", "signature"), [("paper", "module-ij"), ("bloom", "mask-heads-dtype"),
                                                 ("labml", "heads-mask")])
def test_kept_expectation_is_the_fresh_one_and_read_only(empty_keep, name, signature):
    """A kept expectation equals a fresh one array for array, is handed out again, and cannot be written."""
    conv = get_convention(name)
    for call in calls(signature, 12, conv):
        kept = judge.call_expectation(call, conv, "float16")
        fresh = expectation(call.num_heads, judge.positions_of(call, conv), conv, "float16")
        for field in ("table", "tolerance", "judged", "shifted_tolerance"):
            assert np.array_equal(getattr(kept, field), getattr(fresh, field)), (call.size, field)
            assert not getattr(kept, field).flags.writeable
        assert judge.call_expectation(call, conv, "float16") is kept
        assert judge.call_expectation(call, conv, "float32") is not kept


def test_kept_expectations_stay_within_the_budget(empty_keep, monkeypatch):
    """Past the byte budget the least recently used expectations are dropped, the newest kept."""
    conv = get_convention("paper")
    asked = [call for heads in range(1, 129) for call in calls("module-ij", heads, conv, deep=False)]
    sizes = [judge._nbytes(expectation(call.num_heads, judge.positions_of(call, conv), conv)) for call in asked]
    budget = sum(sizes) // 2
    assert max(sizes) <= budget // judge.KEPT_SHARE  # every one small enough to keep
    _keep(monkeypatch, budget)
    made = [judge.call_expectation(call, conv, "float32") for call in asked]
    kept = [exp for exp, _ in judge._kept.values.values()]
    assert 1 < len(kept) < len(made)
    assert judge._kept.used == sum(judge._nbytes(exp) for exp in kept) <= budget
    assert kept == made[-len(kept):]


def test_long_expectations_are_not_kept(empty_keep):
    """An expectation past the kept share of the budget is made for its call and not kept."""
    conv = get_convention("paper")
    longest = calls("module-ij", 128, conv)[-1]
    assert judge._nbytes(judge.call_expectation(longest, conv, "float32")) > \
        judge.KEPT_EXPECTATION_BYTES // judge.KEPT_SHARE
    assert not judge._kept.values
