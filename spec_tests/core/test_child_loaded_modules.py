"""``sys.modules`` as global state, read in this process
(``posenc_spec/gate/child/loaded_modules.py``): a reading keeps an earlier one when a package
attribute that was unbound is bound since (an import ends by binding it), not when one that
was bound is rebound. Each test runs with the dictionaries' version tags (a reading with
every tag unchanged is the last one again) and without (every reading copies)."""

from __future__ import annotations

import sys
import types

import pytest

from posenc_spec.gate.child import loaded_modules


@pytest.fixture(autouse=True, params=["version tags", "copies"])
def tags(request, monkeypatch):
    if request.param == "copies":
        monkeypatch.setattr(loaded_modules, "_VERSION_OFFSET", None)


def test_a_submodule_bound_since_keeps_the_earlier_reading(monkeypatch):
    """Unbound in one reading, bound to its submodule in the next: the earlier reading is
    kept; rebinding the attribute afterwards is a change."""
    package, submodule = types.ModuleType("posenc_probe_pkg"), types.ModuleType("posenc_probe_pkg.sub")
    monkeypatch.setitem(sys.modules, "posenc_probe_pkg", package)
    monkeypatch.setitem(sys.modules, "posenc_probe_pkg.sub", submodule)
    unbound = loaded_modules.Reading()
    package.sub = submodule
    bound = loaded_modules.Reading()
    assert unbound.kept_in_place(bound) and unbound == bound
    package.sub = types.ModuleType("a stand-in")
    assert not bound.kept_in_place(loaded_modules.Reading())
    assert bound != loaded_modules.Reading()


def test_a_package_replaced_in_place_is_read_from_its_new_dictionary(monkeypatch):
    """A package whose entry is replaced by another module (transformers puts a lazy module
    of its own in its place) is read from the new module's dictionary, the names unchanged:
    its submodule, bound to the old one only, is no longer its attribute."""
    package, submodule = types.ModuleType("posenc_probe_lazy"), types.ModuleType("posenc_probe_lazy.sub")
    package.sub = submodule
    monkeypatch.setitem(sys.modules, "posenc_probe_lazy", package)
    monkeypatch.setitem(sys.modules, "posenc_probe_lazy.sub", submodule)
    before = loaded_modules.Reading()
    sys.modules["posenc_probe_lazy"] = types.ModuleType("posenc_probe_lazy")
    after = loaded_modules.Reading()
    assert before.bound()["posenc_probe_lazy.sub"] is submodule
    assert "posenc_probe_lazy.sub" not in after.bound()
    assert "posenc_probe_lazy replaced" in before.difference(after)


def test_a_change_after_unchanged_readings_is_seen(monkeypatch):
    """Readings with nothing changed between them are equal; a package attribute rebound
    after them, an entry replaced, and ``sys.modules`` rebound to a changed copy are each
    seen by the next reading."""
    package, submodule = types.ModuleType("posenc_probe_same"), types.ModuleType("posenc_probe_same.sub")
    package.sub = submodule
    monkeypatch.setitem(sys.modules, "posenc_probe_same", package)
    monkeypatch.setitem(sys.modules, "posenc_probe_same.sub", submodule)
    first, second = loaded_modules.Reading(), loaded_modules.Reading()
    assert first == second
    package.sub = types.ModuleType("a stand-in")
    assert "posenc_probe_same.sub no longer its package's attribute" in second.difference(loaded_modules.Reading())
    package.sub = submodule
    assert second == loaded_modules.Reading()
    sys.modules["posenc_probe_same.sub"] = types.ModuleType("posenc_probe_same.sub")
    assert "posenc_probe_same.sub replaced" in second.difference(loaded_modules.Reading())
    sys.modules["posenc_probe_same.sub"] = submodule
    unchanged = loaded_modules.Reading()
    monkeypatch.setattr(sys, "modules", {**sys.modules, "posenc_probe_same": types.ModuleType("posenc_probe_same")})
    assert "posenc_probe_same replaced" in unchanged.difference(loaded_modules.Reading())
