"""``sys.modules`` as global state, read in this process
(``posenc_spec/gate/child/loaded_modules.py``): a layout built on an earlier one, whatever
names the import system moved or took away meanwhile, is the layout built afresh; a reading
keeps an earlier one when a package attribute that was unbound is bound since."""

from __future__ import annotations

import random
import sys
import types

import pytest

from posenc_spec.gate.child import loaded_modules


def _table(names) -> dict:
    return {name: types.ModuleType(name) for name in names}


@pytest.mark.parametrize("seed", range(20))
def test_a_layout_built_on_an_earlier_one_is_the_fresh_layout(seed):
    """Names appended, moved to the end (a finished import) or removed (a failed one) between
    two layouts: the second, built on the first, has the positions, submodules, package
    dictionaries and last names of one built from nothing."""
    chooser = random.Random(seed)
    table = _table(["pkg", "pkg.a", "pkg.a.b", "other", "pkg.c", "other.d", "solo", "pkg.e"])
    earlier = loaded_modules._Layout(tuple(table), table)
    for _ in range(chooser.randint(1, 4)):
        name = chooser.choice(list(table))
        if chooser.random() < 0.5:
            table[name] = table.pop(name)  # moved to the end
        elif name not in ("pkg", "other"):
            del table[name]
    table.update(_table([f"pkg.new{seed}", f"other.new{seed}"]))
    built_on, fresh = loaded_modules._Layout(tuple(table), table, earlier), loaded_modules._Layout(tuple(table), table)
    for field in ("positions", "submodules", "last_names"):
        assert getattr(built_on, field) == getattr(fresh, field), field
    assert all(mine is theirs for mine, theirs in zip(built_on.dictionaries, fresh.dictionaries, strict=True))


def test_a_submodule_bound_since_keeps_the_earlier_reading(monkeypatch):
    """A package attribute unbound in one reading and bound to its submodule in the next (an
    import ends by binding it): the earlier reading is kept; rebinding one that was bound is not."""
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
