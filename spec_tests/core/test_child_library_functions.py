"""Library functions as global state, read in this process
(``posenc_spec/gate/child/library_functions.py``): a rebound, removed or hidden attribute,
or a function's part changed in place, is named and put back, with the words gathered from
memory and without them (an interpreter where the probes fail copies every namespace and
reads every function at each reading); an added attribute is no change; the libraries a
target's module refers to are watched too."""

from __future__ import annotations

import math
import sys
import types

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


def _stack_with_keywords(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return arrays


@pytest.mark.parametrize(("part", "stand_in"), [
    ("__code__", _stack_with_keywords.__code__),
    ("__defaults__", (1, None)),
    ("__kwdefaults__", {"dtype": np.float16, "casting": "same_kind"}),
])
def test_a_function_changed_in_place_is_named_and_put_back(readings, part, stand_in):
    """Replacing a part of a watched function (``numpy.stack``'s implementation), no
    attribute rebound, is named; ``restore`` puts the original part back."""
    function = np.stack._implementation
    before, original = readings(), getattr(function, part)
    setattr(function, part, stand_in)
    try:
        assert before.difference(readings()) == f"numpy.stack.{part} replaced in place"
        library_functions.restore(before)
        assert getattr(function, part) is original
        assert before == readings()
    finally:  # this process's NumPy as it was, whatever failed
        setattr(function, part, original)


def test_a_changed_keyword_default_is_named_and_put_back(readings):
    """An entry of a function's keyword defaults changed, the dictionary kept, is named and put back."""
    keywords = np.stack._implementation.__kwdefaults__
    before, original = readings(), keywords["dtype"]
    keywords["dtype"] = np.float16
    try:
        assert before.difference(readings()) == "numpy.stack.__kwdefaults__['dtype'] replaced"
        library_functions.restore(before)
        assert keywords["dtype"] is original
    finally:
        keywords["dtype"] = original


def test_a_module_class_of_torch_nn_is_watched(readings, monkeypatch):
    """A subclass of ``torch.nn.Module`` that ``torch.nn`` binds is watched as ``torch.nn.Module`` is."""
    before, original = readings(), torch.nn.Linear.forward
    monkeypatch.setattr(torch.nn.Linear, "forward", lambda self, values: values)
    assert before.difference(readings()) == "torch.nn.Linear.forward replaced"
    library_functions.restore(before)
    assert vars(torch.nn.Linear)["forward"] is original


@pytest.fixture
def own_watch(monkeypatch):
    """A watch of this test's own: the libraries it adds are watched until the test ends."""
    monkeypatch.setattr(library_functions, "_WATCHED", None)


def test_the_libraries_a_targets_module_refers_to_are_watched(readings, own_watch, monkeypatch):
    """A target's module that imports mpmath has it watched, and the modules of mpmath it
    refers to (``mpmath.libmp.gammazeta``): an entry of a public dictionary of theirs
    replaced is named and put back; a key added is no change; a reading of before the
    target's module was watched is compared on what it watched."""
    mpmath = pytest.importorskip("mpmath")
    from mpmath.libmp import gammazeta

    module = types.ModuleType("posenc_spec_test_target")
    module.mpmath = mpmath
    unwatched = readings()
    library_functions.watch_libraries_of(module)
    before, rounding = readings(), gammazeta.reciprocal_rnd
    original = rounding["n"]
    monkeypatch.setitem(rounding, "posenc_spec", original)
    assert before == readings()
    monkeypatch.setitem(rounding, "n", "u")
    assert unwatched == readings()
    assert before.difference(readings()) == "mpmath.libmp.gammazeta.reciprocal_rnd['n'] replaced"
    library_functions.restore(before)
    assert rounding["n"] is original


def test_the_classes_of_a_module_a_target_refers_to_are_watched(readings, own_watch, monkeypatch):
    """A target's module that holds a class (mpmath's ``MPContext``) has the classes of that
    class's module watched: a method replaced is named."""
    mpmath = pytest.importorskip("mpmath")

    module = types.ModuleType("posenc_spec_test_target")
    module.MPContext = mpmath.ctx_mp.MPContext
    library_functions.watch_libraries_of(module)
    before = readings()
    monkeypatch.setattr(mpmath.ctx_mp.MPContext, "isnan", lambda context, value: False)
    assert before.difference(readings()) == "mpmath.ctx_mp.MPContext.isnan replaced"


def test_a_module_whose_globals_changed_since_is_looked_through_again(readings, own_watch, monkeypatch):
    """Watching a module's libraries a second time with its globals unchanged (a child
    forked from the template that watched them) adds nothing; a library bound since is
    watched at the next look."""
    mpmath = pytest.importorskip("mpmath")
    from mpmath.libmp import gammazeta

    module = types.ModuleType("posenc_spec_test_target")
    library_functions.watch_libraries_of(module)
    module.mpmath = mpmath  # bound after the first look: seen at the second
    library_functions.watch_libraries_of(module)
    before = readings()
    monkeypatch.setitem(gammazeta.reciprocal_rnd, "n", "u")
    assert before.difference(readings()) == "mpmath.libmp.gammazeta.reciprocal_rnd['n'] replaced"


def test_the_standard_library_a_target_refers_to_is_not_watched_again(readings, own_watch, monkeypatch):
    """The standard library's modules are not a target's libraries: their public globals are
    the process's state (``sys.modules``, watched as the loaded modules; ``json.decoder``'s
    tables), watched as such or not at all."""
    import json.decoder

    module = types.ModuleType("posenc_spec_test_target")
    module.json, module.sys = json, sys
    library_functions.watch_libraries_of(module)
    before = readings()
    monkeypatch.setitem(json.decoder.BACKSLASH, "n", "\\n")
    assert before == readings()
