"""Values a hostile caller hands the Python API: objects whose ``__repr__``, ``__str__``,
``__eq__``, ``__float__`` or ``__index__`` raise or lie, subclasses of int, float and str
that override them, and an int past Python's text conversion. Each is refused with one
:class:`UsageError` naming the key, or read as its built-in value; none raises the object's
own exception out of ``check``, and nothing is forked for a refused declaration."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import posenc_spec
from posenc_spec.gate.child import frameworks
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import SHOWN_CHARACTERS


class _Raises(Exception):
    """What a hostile object raises: never to come out of ``check``."""


class Lying:
    """Every protocol the gate might ask raises."""

    def _raise(self, *args):
        raise _Raises("asked")

    __repr__ = __str__ = __eq__ = __ne__ = __hash__ = __float__ = __int__ = __index__ = __bool__ = _raise
    __lt__ = __len__ = __iter__ = __fspath__ = _raise


class LyingInt(int):
    """An int whose text conversion raises and whose index is another number."""

    def __index__(self):
        return 10**400

    def __int__(self):
        return 10**400

    def __repr__(self):
        raise _Raises("repr")


class LyingStr(str):
    """A str equal to everything, whose text raises."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

    def __repr__(self):
        raise _Raises("repr")

    def __str__(self):
        raise _Raises("str")


def _table(num_positions, dim):
    return np.zeros((num_positions, dim), np.float32)


KEYS = ("convention", "layout", "first", "freq_shift", "base", "offset", "scale", "odd", "max_positions", "t_max",
        "timeout", "call", "signature", "init", "method", "kwargs", "x_layout", "framework", "xfails", "jobs",
        "max_memory", "max_processes", "max_file_size", "preload", "api")


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("wrap", [lambda o: o, lambda o: [o], lambda o: {"x": o}], ids=["alone", "list", "table"])
def test_an_object_that_raises_is_refused_in_one_line(key, wrap):
    """A key given an object whose every protocol raises is a UsageError of one line."""
    with pytest.raises(UsageError) as refused:
        posenc_spec.check(_table, **{key: wrap(Lying())})
    assert len(str(refused.value).splitlines()) == 1


@pytest.mark.parametrize(("keys", "named"), [
    ({"kwargs": {"x": 10**5000}}, "kwargs.x must be a finite number, got an integer of"),
    ({"base": -(10**5000)}, "base must be a finite number, got an integer of"),
    ({"max_positions": LyingInt(64), "convention": LyingStr("nonsense")}, "convention must be one of"),
    ({"kwargs": {"x": "y" * 100_000}, "api": "nonsense"}, "api must be one of"),
])
def test_a_value_is_read_as_its_built_in_type(keys, named):
    """An int past text conversion is named by its size; a subclass is its built-in value
    (a str subclass equal to everything is no convention)."""
    with pytest.raises(UsageError, match=named) as refused:
        posenc_spec.check(_table, **keys)
    assert len(str(refused.value)) < 2 * SHOWN_CHARACTERS + 300


def test_a_subclassed_size_is_its_own_value():
    """An int subclass whose __index__ and __int__ lie declares the value it holds, as an int."""
    declared = declare({"target": "pkg.mod:table", "max_positions": LyingInt(64)}).max_positions
    assert type(declared) is int and declared == 64


@pytest.mark.parametrize("key", ["framework", "keras_backend"])
def test_an_object_that_raises_is_refused_after_jax_started(key, monkeypatch):
    """In a caller that has started JAX's backend (the API then asks the framework first),
    the object is still refused in one line."""
    monkeypatch.setitem(sys.modules, "jax", types.ModuleType("jax"))
    monkeypatch.setattr(frameworks, "started_threads", lambda: 1)
    with pytest.raises(UsageError) as refused:
        posenc_spec.check(_table, **{key: Lying()})
    assert len(str(refused.value).splitlines()) == 1
