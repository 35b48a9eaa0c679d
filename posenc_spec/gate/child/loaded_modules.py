"""``sys.modules`` as global state (an entry of :mod:`.state`): the module each name stands
for, and each submodule as its package's attribute (``torch.nn.functional`` as the
attribute ``functional`` of ``torch.nn``).

A target that puts a fake in place of a loaded module (``sys.modules["numpy"] = fake``),
removes one, or rebinds a package's attribute that held its submodule changes what every
later ``import`` and ``torch.nn.functional.x`` of the caller's program finds. Imports add
entries and bind new attributes: those are no change. So a reading equals a later one when
the later keeps every entry of the earlier one, the same object, and every binding the
earlier one had.

Read after every call and wherever an import changes hands (:mod:`.attribution`), a
reading is copies made at C speed: the table itself, and the attribute of each package named
like each submodule, through a layout of the table's names kept while the names and the
packages' module objects stay the same. Nothing of a
target's object is called: a package's attributes are read from its dictionary, and two
readings are compared by the addresses of their objects, as bytes (:func:`addresses`).
Where dictionaries keep version tags (:mod:`.memory_words`), a reading whose table and
packages' dictionaries all hold the tags the last reading found is that reading again, not
copied (a call that imports nothing and rebinds nothing: every call of most targets).
"""

from __future__ import annotations

import ctypes
import itertools
import operator
import sys
import types

import numpy as np

from .memory_words import VERSION_OFFSET, Words, version_tag

_MODULE_DICT = types.ModuleType.__dict__["__dict__"].__get__  # a module's own dictionary, no __getattr__
_NO_ATTRIBUTES: dict = {}
_MISSING = object()
_readings = itertools.count()
_ITEMS = tuple.__basicsize__  # where a tuple's item pointers (its items' ids) start in its memory
_NONE = id(None)  # an unbound package attribute, as its address


def addresses(items: tuple) -> bytes:
    """The ids of a tuple's items, as bytes: its pointer array, copied at once. Two such
    copies are equal when the items are the same objects (while a reading holds them no id
    is used again), whatever a target's object says it equals."""
    return ctypes.string_at(id(items) + _ITEMS, len(items) * tuple.__itemsize__)


def _attributes(value) -> dict:
    return _MODULE_DICT(value) if isinstance(value, types.ModuleType) else _NO_ATTRIBUTES


class _Layout:
    """The names of ``sys.modules`` at one moment, and for each submodule (``a.b``) its
    package's name and dictionary and its own last name, in the same order. Imports append
    names: a layout whose names begin with an earlier one's extends it, while the earlier
    one's packages are the same module objects (transformers puts a module of its own in
    place of its package while imported: its dictionary is another)."""

    def __init__(self, names: tuple[str, ...], table: dict, earlier: _Layout | None = None):
        self.names = names
        start = 0
        if earlier is not None and names[:len(earlier.names)] == earlier.names and earlier.same_packages(table):
            start = len(earlier.names)
        split = [(name, *name.rsplit(".", 1)) for name in names[start:] if "." in name]
        self.submodules = (earlier.submodules if start else ()) + tuple(name for name, _, _ in split)
        self.packages = (earlier.packages if start else ()) + tuple(package for _, package, _ in split)
        package_modules = tuple(map(table.get, self.packages))
        self.package_addresses = addresses(package_modules)
        self.dictionaries = tuple(map(_attributes, package_modules))
        self.last_names = (earlier.last_names if start else ()) + tuple(last for _, _, last in split)
        self.modules = b""  # the addresses of the modules of the last reading through this layout
        # The packages' dictionaries' version tags (each dictionary once), where kept.
        unique = {id(dictionary): dictionary for dictionary in self.dictionaries if dictionary is not _NO_ATTRIBUTES}
        self.package_tags = Words([place + _VERSION_OFFSET for place in unique] if _VERSION_OFFSET is not None else [])

    def same_packages(self, table: dict) -> bool:
        """Whether each package of this layout is the same module object in ``table``."""
        return addresses(tuple(map(table.get, self.packages))) == self.package_addresses


_layout: _Layout | None = None
_last: Reading | None = None  # the last reading, which the next is while every tag is the same
_VERSION_OFFSET = VERSION_OFFSET  # None: each reading copies the table (tests set it so)


def _current_layout(table: dict, modules: bytes) -> _Layout:
    """The layout of ``table``, whose modules' addresses are ``modules``: the last one while
    the names and the modules are the same (then so are the packages)."""
    global _layout
    names = tuple(table)
    if _layout is None or _layout.names != names or (_layout.modules != modules and not _layout.same_packages(table)):
        _layout = _Layout(names, table, _layout)
    _layout.modules = modules
    return _layout


class Reading:
    """``sys.modules`` as read once (see the module docstring). Compared with ``==``, the
    earlier of two readings must be kept by the later."""

    __hash__ = None

    def __init__(self):
        global _last
        self.order = next(_readings)
        source, last = sys.modules, _last
        # Read before what they tag: a change made after its tag was read shows at the next reading.
        self.tags = version_tag(source) if _VERSION_OFFSET is not None else None
        if (last is not None and self.tags is not None and last.source is source and last.tags == self.tags
                and last.layout.package_tags.read() == last.package_tags):
            self.source, self.table, self.modules, self.layout = source, last.table, last.modules, last.layout
            self.package_tags, self.attributes, self.addresses = last.package_tags, last.attributes, last.addresses
        else:
            self.source, self.table = source, dict(source)
            self.modules = tuple(self.table.values())
            modules = addresses(self.modules)
            self.layout = _current_layout(self.table, modules)
            self.package_tags = self.layout.package_tags.read()
            self.attributes = tuple(map(dict.get, self.layout.dictionaries, self.layout.last_names))
            self.addresses = modules, addresses(self.attributes)
        _last = self

    def bound(self) -> dict:
        """Each submodule that is its package's attribute, and the module."""
        return {name: module for name, module in zip(self.layout.submodules, self.attributes, strict=True)
                if module is not None and self.table.get(name) is module}

    def __eq__(self, other) -> bool:
        if not isinstance(other, Reading):
            return NotImplemented
        earlier, later = sorted((self, other), key=operator.attrgetter("order"))
        return earlier.kept_in_place(later) or not earlier.difference(later)

    def kept_in_place(self, later: Reading) -> bool:
        """Whether ``later`` begins with this reading's names (as when the modules imported
        since only appended theirs), the same modules, and the same package attributes or ones
        bound since: then it keeps everything this one had."""
        names = self.layout.names
        if later.layout is not self.layout and later.layout.names[:len(names)] != names:
            return False
        modules, attributes = self.addresses
        if later.addresses[0][:len(modules)] != modules:
            return False
        now = later.addresses[1][:len(attributes)]
        if now == attributes:
            return True
        # A package attribute that was unbound and now holds something: an import binds each
        # submodule to its package as it ends (every module a call imports is read). Bindings
        # this reading had, changed, are for difference() to weigh.
        before, after = np.frombuffer(attributes, dtype=np.uintp), np.frombuffer(now, dtype=np.uintp)
        return bool((before[before != after] == _NONE).all())

    def difference(self, later: Reading) -> str:
        """What ``later`` lost of this reading, in a few words ("" for nothing)."""
        replaced = [name for name, module in self.table.items() if later.table.get(name, _MISSING) is not module]
        named, kept = set(replaced), later.bound()
        unbound = [name for name, module in self.bound().items()  # not those of a package named already
                   if not {name, name.rpartition(".")[0]} & named and kept.get(name) is not module]
        parts = [f"{name} {'removed' if name not in later.table else 'replaced'}" for name in replaced[:3]]
        parts += [f"{name} no longer its package's attribute" for name in unbound[:3]]
        more = len(replaced) + len(unbound) - len(parts)
        return ", ".join(parts) + (f" and {more} more" if more > 0 else "")

    def __repr__(self) -> str:
        return f"sys.modules with {len(self.table)} entries"


def restore(reading: Reading) -> None:
    """Put back every entry and package attribute of ``reading`` that changed since."""
    for name, module in reading.table.items():
        if sys.modules.get(name, _MISSING) is not module:
            sys.modules[name] = module
    for name, module in reading.bound().items():
        package, _, last = name.rpartition(".")
        attributes = _attributes(sys.modules.get(package))
        if attributes is not _NO_ATTRIBUTES and attributes.get(last) is not module:
            attributes[last] = module
