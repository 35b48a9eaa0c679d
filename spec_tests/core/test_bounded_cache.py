"""The byte-bounded cache the families keep expected tables in: least recently used dropped
first, nothing kept past the budget, and one value made once when two lanes ask at once."""

import threading

import pytest

from posenc_spec.caching import BoundedCache


def _made(value, size, calls):
    def make():
        calls.append(value)
        return value, size
    return make


def test_least_recently_used_dropped_first():
    """Past the budget the value asked for longest ago goes; one asked again stays."""
    cache, calls = BoundedCache(30), []
    for key in "abc":
        cache.get(key, _made(key, 10, calls))
    cache.get("a", _made("a", 10, calls))  # a is now the most recently used
    cache.get("d", _made("d", 10, calls))
    assert list(cache.values) == ["c", "a", "d"] and cache.used == 30
    assert calls == ["a", "b", "c", "d"]


def test_value_past_the_budget_is_made_not_kept():
    """A value larger than the whole budget is handed to its caller and made again next time."""
    cache, calls = BoundedCache(10), []
    assert cache.get("big", _made("big", 11, calls)) == "big"
    assert cache.get("big", _made("big", 11, calls)) == "big"
    assert calls == ["big", "big"] and not cache.values


def test_value_asked_while_being_made_is_made_once():
    """A second thread asking for a value another thread is making waits for it."""
    cache, calls, answers = BoundedCache(100), [], []

    def second():
        answers.append(cache.get("k", _made("second", 1, calls)))

    def first_make():
        other = threading.Thread(target=second)
        other.start()
        other.join(timeout=0.2)  # a cache that does not wait lets it make its own at once
        calls.append("first")
        answers.append(other)
        return "first", 1

    assert cache.get("k", first_make) == "first"
    answers.pop(0).join()
    assert calls == ["first"] and answers == ["first"] and not cache.making


def test_failed_make_lets_the_next_caller_make_it():
    """A maker that raises leaves nothing behind: the next caller makes the value itself."""
    cache, calls = BoundedCache(100), []

    def broken():
        raise RuntimeError("no table")

    with pytest.raises(RuntimeError):
        cache.get("k", broken)
    assert cache.get("k", _made("v", 1, calls)) == "v" and calls == ["v"] and not cache.making
