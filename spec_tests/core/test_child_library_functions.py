"""Library functions as global state, read in this process
(``posenc_spec/gate/child/library_functions.py``): a rebound, removed or hidden attribute is
named and put back, with the dictionaries' version tags and without them (an interpreter
that keeps none copies every namespace at each reading); an added attribute is no change."""

from __future__ import annotations

import math

import numpy as np
import pytest

from posenc_spec.gate.child import library_functions

torch = pytest.importorskip("torch")


@pytest.fixture(params=["version tags", "copies"])
def readings(request, monkeypatch):
    """Readings made with the version tags, or copying every namespace each time."""
    if request.param == "copies":
        monkeypatch.setattr(library_functions, "_VERSION_OFFSET", None)
        monkeypatch.setattr(library_functions, "_FUNCTION_OFFSETS", None)
    return library_functions.Reading


@pytest.mark.parametrize(("owner", "name", "stand_in", "described"), [
    (math, "sqrt", math.exp, "math.sqrt replaced"),
    (np, "sin", np.cos, "numpy.sin replaced"),
    (torch.Tensor, "__pow__", torch.Tensor.__rpow__, "torch.Tensor.__pow__ replaced"),
    (torch.Tensor, "sin", torch.Tensor.cos, "torch.Tensor.sin added over its base's"),
])
def test_a_changed_library_function_is_named_and_put_back(readings, owner, name, stand_in, described):
    """The change is named, and after ``restore`` the library is as it was."""
    before, original = readings(), vars(owner).get(name)
    setattr(owner, name, stand_in)
    try:
        assert before != readings()
        assert before.difference(readings()) == described
        library_functions.restore(before)
        assert before == readings()
        assert vars(owner).get(name) is original
    finally:  # this process's library as it was, whatever failed
        if original is not None:
            setattr(owner, name, original)
        elif name in vars(owner):
            delattr(owner, name)


def test_a_removed_function_is_named(readings, monkeypatch):
    """Deleting an attribute is a change: the next use would raise."""
    before = readings()
    monkeypatch.delattr(np, "cos")
    assert before.difference(readings()) == "numpy.cos removed"
    library_functions.restore(before)
    assert np.cos(0.0) == 1.0


def test_names_swapped_in_a_rebuilt_dictionary_are_named(readings):
    """A module's dictionary rebuilt with the same objects in the same order, two names
    swapped, is seen (names are compared, not only the objects' order)."""
    before, table = readings(), vars(np)
    items, swapped = list(table.items()), {"sin": "cos", "cos": "sin"}
    table.clear()
    table.update((swapped.get(name, name), value) for name, value in items)
    try:
        assert set(before.difference(readings()).split(", ")) == {"numpy.sin replaced", "numpy.cos replaced"}
        library_functions.restore(before)
        assert np.sin(0.0) == 0.0
    finally:  # this process's NumPy as it was, whatever failed
        table.clear()
        table.update(items)


def test_an_added_attribute_changes_nothing(readings, monkeypatch):
    """An attribute added that hides nothing (as a lazily imported submodule is) is no change."""
    before = readings()
    monkeypatch.setattr(np, "posenc_spec_helper", len, raising=False)
    monkeypatch.setattr(torch.Tensor, "posenc_spec_helper", len, raising=False)
    assert before == readings()


def test_the_default_dtypes_storage_alias_is_the_default_dtypes_change(readings, monkeypatch):
    """``torch.set_default_dtype`` rebinds ``torch.Storage`` to its storage class: the default
    dtype names that change, the library functions do not name it twice."""
    before = readings()
    monkeypatch.setattr(torch, "Storage", torch.DoubleStorage)
    assert before.difference(readings()) == ""
