"""The functions of the libraries an encoding computes with, as global state (an entry of
:mod:`.state`): the attributes of torch, ``torch.nn.functional``, NumPy, ``math``,
``builtins`` and a few more (:data:`MODULES`), and those of ``torch.Tensor`` and
``torch.nn.Module`` (:data:`CLASSES`).

A target that rebinds one (``torch.sin = fake``, ``np.exp = ...``, ``torch.Tensor.__add__ =
...``, ``builtins.print = ...``) or deletes one changes what every later call of the
caller's program computes. Imports add attributes (torch's ``__getattr__`` binds
``torch._dynamo`` on first use): those are no change. So a reading equals a later one when
the later keeps every watched attribute the earlier had, the same object, and adds none to a
class that one of its bases defines (``torch.Tensor.sin = fake`` hides
``torch._C.TensorBase.sin``). The watched attributes are the public and the special
(``__add__``) ones: a module's private globals (one leading underscore) are the state its
own functions keep, rebound as they run (torch's default-device context, caches).

Read at every call and at every module a call imports, a reading copies each namespace's
names and values (tuples, at C speed) and compares the values by their addresses, as bytes:
by identity, so that no object of a target's is asked whether it equals the original. Only
when a namespace's names or addresses differ is it compared name by name. Where the
interpreter keeps a version tag in each dictionary that changes at every change of it
(CPython 3.11 to 3.13; checked when this module is imported), a namespace whose tag is the
one of its last copy is not copied again: copying touches thousands of objects, most of a
reading's cost.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import operator
import sys

import numpy.fft  # noqa: F401 -- NumPy imports it lazily: here it is in the template, watched from the start

from .loaded_modules import addresses

# torch._C's modules hold what torch.nn.functional, torch.linalg, torch.fft and torch.special call.
MODULES = ("builtins", "math", "cmath", "operator", "random", "numpy", "numpy.linalg", "numpy.fft", "numpy.random",
           "torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.random",
           "torch._C._nn", "torch._C._linalg", "torch._C._fft", "torch._C._special")
CLASSES = (("torch", "Tensor"), ("torch.nn", "Module"))

_MISSING = object()
_readings = itertools.count()


def _version_reader():
    """A function reading a dictionary's version tag (CPython's ``ma_version_tag``, after the
    object header and the item count), or None where this interpreter keeps none that
    changes at every change: a probe dictionary is changed each way and must show a new tag
    each time, and the same tag while untouched."""
    if sys.implementation.name != "cpython":
        return None
    offset = object.__basicsize__ + ctypes.sizeof(ctypes.c_ssize_t)

    def version(dictionary: dict) -> int:
        return ctypes.c_uint64.from_address(id(dictionary) + offset).value

    probe = {"a": 1}
    tags = [version(probe)]
    for change in (lambda: probe.__setitem__("a", 2), lambda: probe.__setitem__("b", 3),
                   lambda: probe.__delitem__("a"), lambda: probe.update(c=4), probe.clear):
        change()
        tags.append(version(probe))
    return version if len(set(tags)) == len(tags) and version(probe) == tags[-1] else None


_VERSION = _version_reader()


# Attributes a library rebinds itself to follow state watched elsewhere: torch.set_default_dtype
# binds torch.Storage to the default dtype's storage class (the default dtype is watched,
# named and put back, and Storage with it).
FOLLOWERS = frozenset({"torch.Storage"})


def watched(name) -> bool:
    """Whether the attribute ``name`` is watched: public or special, not private."""
    return isinstance(name, str) and (not name.startswith("_") or (name.startswith("__") and name.endswith("__")))


class _Namespace:
    """A module's or a class's attributes: its label (``torch.Tensor``), its live dictionary
    (a class's read-only view) and, for a class, its bases' dictionaries."""

    def __init__(self, label: str, owner):
        self.label, self.owner = label, owner
        self.is_class = isinstance(owner, type)
        self.dictionary = type.__dict__["__dict__"].__get__(owner) if self.is_class else vars(owner)
        self.bases = tuple(map(type.__dict__["__dict__"].__get__, owner.__mro__[1:])) if self.is_class else ()
        # The dictionary itself (a class's view refers to it alone), whose version tag is read.
        self.table = gc.get_referents(self.dictionary)[0] if self.is_class else self.dictionary
        self.copy: tuple | None = None  # (version tag, names, values, their addresses) when last copied

    def read(self) -> tuple:
        """``(names, values, the values' addresses)``: the last copy while the version tag
        says the dictionary is unchanged since."""
        version = _VERSION(self.table) if _VERSION is not None else None
        if version is not None and self.copy is not None and self.copy[0] == version:
            return self.copy[1:]
        names, values = tuple(self.dictionary), tuple(self.dictionary.values())
        self.copy = (version, names, values, addresses(values))  # tagged as read before: a change since shows
        return self.copy[1:]

    def follows(self, name: str) -> bool:
        """Whether the attribute ``name`` follows state watched elsewhere (:data:`FOLLOWERS`)."""
        return f"{self.label}.{name}" in FOLLOWERS

    def hidden(self, name: str) -> bool:
        """Whether ``name``, added to the class, hides an attribute one of its bases defines."""
        return any(name in base for base in self.bases)

    def put_back(self, name, value) -> None:
        """Bind ``name`` to ``value`` again (take it away when ``value`` is missing), through
        the type's and the dictionary's own methods: nothing of a target's is called."""
        if self.is_class:
            if value is _MISSING:
                type.__delattr__(self.owner, name)
            else:
                type.__setattr__(self.owner, name, value)
        elif value is _MISSING:
            self.dictionary.pop(name, None)
        else:
            self.dictionary[name] = value


def _namespaces() -> tuple[_Namespace, ...]:
    """The namespaces this process has imported (read once, in the template: later imports
    of one of them are an import's, not a change)."""
    found = [_Namespace(name, sys.modules[name]) for name in MODULES if name in sys.modules]
    for module, name in CLASSES:
        owner = vars(sys.modules[module]).get(name) if module in sys.modules else None
        if isinstance(owner, type):
            found.append(_Namespace(f"{module}.{name}", owner))
    return tuple(found)


_SPACES: tuple[_Namespace, ...] | None = None


def _spaces() -> tuple[_Namespace, ...]:
    global _SPACES
    if _SPACES is None:
        _SPACES = _namespaces()
    return _SPACES


class Reading:
    """The watched namespaces as read once (see the module docstring). Compared with ``==``,
    the earlier of two readings must be kept by the later."""

    __hash__ = None

    def __init__(self):
        self.order = next(_readings)
        self.spaces = _spaces()
        self.names, self.values, self.addresses = zip(*(space.read() for space in self.spaces), strict=True)
        self.kept_by: Reading | None = None  # the last later reading found to keep this one

    def same(self, other: Reading) -> bool:
        """Whether ``other`` holds the same names bound to the same objects."""
        return self.addresses == other.addresses and self.names == other.names

    def __eq__(self, other) -> bool:
        if not isinstance(other, Reading):
            return NotImplemented
        if self.same(other):
            return True
        earlier, later = sorted((self, other), key=operator.attrgetter("order"))
        # After an import added attributes, every later call's reading is the same as the
        # first one found to keep the baseline's: compared as bytes, not name by name.
        if earlier.kept_by is not None and earlier.kept_by.same(later):
            return True
        if earlier.changes(later):
            return False
        earlier.kept_by = later
        return True

    def changes(self, later: Reading) -> list[tuple[_Namespace, str, object, str]]:
        """``(namespace, name, value here, what became of it)`` for each watched attribute
        ``later`` replaced, removed, or added to a class over a base (its value here then
        missing)."""
        found = []
        for index, space in enumerate(self.spaces):
            if self.addresses[index] == later.addresses[index] and self.names[index] == later.names[index]:
                continue
            now = dict(zip(later.names[index], later.values[index], strict=True))
            before = dict(zip(self.names[index], self.values[index], strict=True))
            found += [(space, name, value, "replaced" if name in now else "removed")
                      for name, value in before.items()
                      if watched(name) and now.get(name, _MISSING) is not value and not space.follows(name)]
            if space.is_class:
                found += [(space, name, _MISSING, "added over its base's") for name in now.keys() - before.keys()
                          if watched(name) and space.hidden(name)]
        return found

    def difference(self, later: Reading) -> str:
        """What ``later`` changed of this reading, in a few words ("" for nothing)."""
        changes = self.changes(later)
        parts = [f"{space.label}.{name} {what}" for space, name, _, what in changes[:3]]
        more = len(changes) - len(parts)
        return ", ".join(parts) + (f" and {more} more" if more > 0 else "")

    def __repr__(self) -> str:
        return f"the attributes of {len(self.spaces)} library modules and classes"


def restore(reading: Reading) -> None:
    """Put back every watched attribute ``reading`` held that changed since, and take away
    what was added to a class over its bases."""
    for space, name, value, _ in reading.changes(Reading()):
        space.put_back(name, value)
