"""The functions of the libraries an encoding computes with, as global state (an entry of
:mod:`.state`).

What a target can change that changes what the caller's later code computes, and what
watching each costs (a reading is made at every call and at every module a call imports):

- an attribute of a library's module or class rebound or deleted (``torch.sin = fake``,
  ``torch.Tensor.__pow__ = ...``), or added to a class over a base's (``torch.Tensor.sin =
  fake`` hides ``torch._C.TensorBase.sin``). Watched: the public and special attributes of
  :data:`MODULES`, of :data:`CLASSES` and of every subclass of a class of
  :data:`SUBCLASSES_BOUND_IN` that its module binds (``torch.nn.Linear``, ``torch.nn.Embedding``:
  ``nn.Linear.forward = fake`` changes every later model). One version tag per dictionary.
- a Python function changed in place, without rebinding anything: its ``__code__``,
  ``__defaults__`` or ``__kwdefaults__`` replaced, or its keyword defaults' dictionary
  changed (``F.softmax.__kwdefaults__["dtype"] = ...``). Watched for every function those
  attributes hold (and a method's, a static or class method's ``__func__``, a NumPy
  dispatcher's implementation): three words per function and a version tag per keyword
  defaults' dictionary.
- the functions and dictionaries of other libraries the target's own module imports
  (transformers' ``modeling_rope_utils.ROPE_INIT_FUNCTIONS``, which every later rotary
  embedding of the caller's models looks up; einops, scipy). Watched (:func:`watch_libraries_of`,
  when the target's module has been imported): every installed library's module the
  target's module refers to (a module, or the module of a function or class it holds; not
  the standard library's, whose public globals are the process's state), and
  the modules of the same package each of those refers to (``modeling_llama`` refers to
  ``modeling_rope_utils``): their public attributes, the entries of their public
  dictionaries and the functions among them, and the classes the first ones define
  (``LlamaRotaryEmbedding.forward``), as above: some 280 functions and 50 dictionaries
  and classes more for a module that imports transformers' Llama code, found in about
  5 ms when the target's module is imported.

With torch and those, some 1,300 functions and 340 dictionaries and classes are watched; a
reading costs about 0.01 ms with its objects in the caches and 0.03 ms with them evicted
(as the other entries of a snapshot evict them): a call of a trivial target costs about
0.04 ms more than when 21 dictionaries were watched (``benchmarks/bench_state_watch.py``).

Not watched, and why:

- a module's private globals (one leading underscore) and the cells of a function's
  closure: the state a library's own functions keep, rebound as they run (torch's
  default-device context, caches, a decorator's counters). A target that rebinds
  ``torch.nn.functional._helper`` changes what the public functions compute, unseen.
- a function's ``__dict__`` (``__wrapped__`` among it: Python calls a wrapper's own code,
  never its ``__wrapped__``), a ``functools.partial``'s function and arguments
  (``__setstate__`` replaces them; transformers' ``masking_utils`` maps a layer pattern to
  one), properties' getters: few reach later numerics, each would need a probe of its own.
  C functions have nothing to change in place.
- modules and classes beyond these (every module of the process at each reading would
  cost more than a call; each object watched is a cache line read at every reading): the
  classes of the modules of the second rank (transformers' ``PreTrainedModel``), classes'
  dictionaries (transformers' docstring tables), a library's modules the target's module does not refer to,
  or first imported during a call; what the target's module changes of the libraries it
  refers to while it is imported (which they are is known only once it is).
- memory written behind Python's back (``ctypes``): a code object's bytes rewritten in
  place keeps every identity.

A library's own import effects are no change: a change made while a library is imported is
that import's (:mod:`.attribution`). Nor is an attribute added that hides nothing (torch's
``__getattr__`` binds ``torch._dynamo`` on first use, transformers' ``_LazyModule`` binds a
submodule on first access) or a key added to a dictionary. So a reading equals a later one
when the later keeps every watched entry the earlier had, the same object, adds none to a
class that one of its bases defines, and keeps every watched function's parts.

Everything is compared by identity, so that no object of a target's is asked whether it
equals the original. A reading gathers, in one NumPy operation over a view of this
process's memory (:class:`~.memory_words.Words`), the version tag of every watched
dictionary (where the interpreter keeps one: :mod:`.memory_words`) and the three parts of
every watched function (where a probe finds where a function holds them). Only a dictionary whose tag changed is copied
again (names and values, as tuples at C speed, and the values' addresses as bytes); only
when the parts' words differ are the parts read as objects. Where either probe fails, each
reading copies every dictionary, or reads every function's parts: correct, slower.
"""

from __future__ import annotations

import functools
import gc
import itertools
import operator
import sys
import types

import numpy as np
import numpy.fft  # noqa: F401 -- NumPy imports it lazily: here it is in the template, watched from the start

from .loaded_modules import addresses
from .memory_words import VERSION_OFFSET, WORD, Words, version_tag, word

# torch._C's modules hold what torch.nn.functional, torch.linalg, torch.fft and torch.special call.
MODULES = ("builtins", "math", "cmath", "operator", "random", "numpy", "numpy.linalg", "numpy.fft", "numpy.random",
           "torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.random",
           "torch._C._nn", "torch._C._linalg", "torch._C._fft", "torch._C._special")
CLASSES = (("torch", "Tensor"), ("torch.nn", "Module"))
# Every subclass of the class that the module binds is watched too (torch.nn.Linear, ...).
SUBCLASSES_BOUND_IN = (("torch.nn", "Module"),)
FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")

# Attributes a library rebinds itself to follow state watched elsewhere: torch.set_default_dtype
# binds torch.Storage to the default dtype's storage class (the default dtype is watched,
# named and put back, and Storage with it).
FOLLOWERS = frozenset({"torch.Storage"})

_MISSING = object()
_readings = itertools.count()
_MODULE_DICT = types.ModuleType.__dict__["__dict__"].__get__  # a module's own dictionary, no __getattr__
_CLASS_DICT = type.__dict__["__dict__"].__get__  # a class's read-only view, no metaclass of a target's
_MRO = type.__dict__["__mro__"].__get__
_PARTS = operator.attrgetter(*FUNCTION_PARTS)
_SET_PART = {part: types.FunctionType.__dict__[part].__set__ for part in FUNCTION_PARTS}
_DISPATCHER = type(np.sum) if isinstance(getattr(np.sum, "_implementation", None), types.FunctionType) else None


def _function_offsets() -> tuple[int, ...] | None:
    """Where a function object holds each of :data:`FUNCTION_PARTS` (found as the one word
    of a probe function holding that part's address, and checked by replacing each part),
    or None where they are not found so."""
    if sys.implementation.name != "cpython":
        return None

    def probe(a=(), *, b=()):
        return a, b

    words = [word(id(probe) + index * WORD) for index in range(type(probe).__basicsize__ // WORD)]
    if any(words.count(id(part)) != 1 for part in _PARTS(probe)):
        return None
    offsets = tuple(words.index(id(part)) * WORD for part in _PARTS(probe))
    probe.__code__ = (lambda a=(), *, b=(): (b, a)).__code__
    probe.__defaults__, probe.__kwdefaults__ = ((),), {"b": 1}
    moved = all(word(id(probe) + offset) == id(part) for offset, part in zip(offsets, _PARTS(probe), strict=True))
    return offsets if moved else None


_VERSION_OFFSET = VERSION_OFFSET  # None: each reading copies every dictionary (tests set it so)
_FUNCTION_OFFSETS = _function_offsets()


def watched(name) -> bool:
    """Whether the attribute ``name`` is watched: public or special, not private."""
    return type(name) is str and (not name.startswith("_") or (name.startswith("__") and name.endswith("__")))


class _Namespace:
    """A module's, a class's or a dictionary's entries: its label (``torch.Tensor``), its
    live dictionary (a class's read-only view) and, for a class, its bases' dictionaries. A
    module's and a class's public and special attributes are watched, a dictionary's every key."""

    def __init__(self, label: str, owner):
        self.label, self.owner = label, owner
        self.is_class, self.is_table = issubclass(type(owner), type), type(owner) is dict
        self.dictionary = _CLASS_DICT(owner) if self.is_class else owner if self.is_table else _MODULE_DICT(owner)
        self.bases = tuple(map(_CLASS_DICT, _MRO(owner)[1:])) if self.is_class else ()
        # The dictionary itself (a class's view refers to it alone), whose version tag is read.
        self.table = gc.get_referents(self.dictionary)[0] if self.is_class else self.dictionary
        self.copy: tuple | None = None  # (version tag, names, values, their addresses) when last copied

    def read(self, tag: bytes | None) -> tuple:
        """``(names, values, the values' addresses)``: the last copy while the version tag
        (read just before) says the dictionary is unchanged since."""
        if tag is not None and self.copy is not None and self.copy[0] == tag:
            return self.copy[1:]
        names, values = tuple(self.dictionary), tuple(self.dictionary.values())
        self.copy = (tag, names, values, addresses(values))  # tagged as read before: a change since shows
        return self.copy[1:]

    def watches(self, name) -> bool:
        return self.is_table or watched(name)

    def entry(self, name) -> str:
        """An entry as a user writes it: ``torch.sin``, ``ROPE_INIT_FUNCTIONS['default']``."""
        return f"{self.label}[{name!r}]" if self.is_table else f"{self.label}.{name}"

    def follows(self, name) -> bool:
        """Whether the attribute ``name`` follows state watched elsewhere (:data:`FOLLOWERS`)."""
        return self.entry(name) in FOLLOWERS

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
            dict.pop(self.dictionary, name, None)
        else:
            dict.__setitem__(self.dictionary, name, value)


def _functions_in(value) -> tuple:
    """The Python functions an attribute's value calls as its own code: the value itself, a
    method's, a static or a class method's ``__func__``, a NumPy dispatcher's implementation."""
    kind = type(value)
    if kind is types.FunctionType:
        return (value,)
    inner = (value.__func__ if kind in (types.MethodType, staticmethod, classmethod)
             else value._implementation if kind is _DISPATCHER else None)
    return (inner,) if type(inner) is types.FunctionType else ()


class _Watched:
    """The watched namespaces and the functions found in them (each held: no id is used
    again), and the words a reading gathers: every dictionary's version tag, every
    function's parts. Only added to, so that an earlier reading's entries are a prefix of a
    later one's."""

    def __init__(self):
        self.spaces: tuple[_Namespace, ...] = ()
        self.functions: tuple[tuple[str, types.FunctionType], ...] = ()
        self.known: set[int] = set()
        self.tags = self.parts = Words([])
        self.last: Reading | None = None  # the last reading of these, whose copies the next may share
        self.libraries_of: set[tuple[int, int]] = set()  # (module id, its globals' tag) watch_libraries_of took

    def add(self, label: str, owner, classes_of: str | None = None) -> None:
        """Watch ``owner`` (a module, class or dictionary), the functions among its watched
        entries, a module's public dictionaries, and the classes it binds that were defined
        in the module named ``classes_of``."""
        if id(owner) in self.known:
            return
        self.known.add(id(owner))
        space = _Namespace(label, owner)
        self.spaces += (space,)
        for name, value in list(space.dictionary.items()):
            if not space.watches(name):
                continue
            for function in _functions_in(value):
                self._add_function(space.entry(name), function)
            if type(value) is dict and not (space.is_table or space.is_class) and not name.startswith("_"):
                self.add(space.entry(name), value)
            elif (classes_of is not None and issubclass(type(value), type) and not name.startswith("_")
                  and _name(_CLASS_DICT(value).get("__module__")) == classes_of):
                self.add(space.entry(name), value)

    def _add_function(self, label: str, function: types.FunctionType) -> None:
        if id(function) in self.known:
            return
        self.known.add(id(function))
        self.functions += ((label, function),)
        keywords = function.__kwdefaults__
        if type(keywords) is dict:
            self.add(f"{label}.__kwdefaults__", keywords)

    def seal(self) -> None:
        """Gather from here on the words of everything added."""
        if _VERSION_OFFSET is not None:
            self.tags = Words([id(space.table) + _VERSION_OFFSET for space in self.spaces])
        if _FUNCTION_OFFSETS is not None:
            self.parts = Words([id(function) + offset for _, function in self.functions
                                 for offset in _FUNCTION_OFFSETS])
        self.last = None


def _name(value) -> str:
    """``value`` if it is a string (not a subclass: a target's could compare as it likes), else ""."""
    return value if type(value) is str else ""


def _module(name: str):
    module = sys.modules.get(name)
    return module if issubclass(type(module), types.ModuleType) else None  # no __class__ of a target's asked


def _watched_in_template() -> _Watched:
    """The namespaces this process has imported (read once, in the template: later imports
    of one of them are an import's, not a change)."""
    found = _Watched()
    for name in MODULES:
        if _module(name) is not None:
            found.add(name, _module(name))
    for module, name in CLASSES:
        owner = _MODULE_DICT(_module(module)).get(name) if _module(module) is not None else None
        if isinstance(owner, type):
            found.add(f"{module}.{name}", owner)
    for module, name in SUBCLASSES_BOUND_IN:
        namespace = _MODULE_DICT(_module(module)) if _module(module) is not None else {}
        base = namespace.get(name)
        for attribute, owner in list(namespace.items()):
            if isinstance(base, type) and isinstance(owner, type) and issubclass(owner, base) and watched(attribute):
                found.add(f"{module}.{attribute}", owner)
    found.seal()
    return found


_WATCHED: _Watched | None = None


def _watched() -> _Watched:
    global _WATCHED
    if _WATCHED is None:
        _WATCHED = _watched_in_template()
    return _WATCHED


def _referred_modules(module) -> dict[str, types.ModuleType]:
    """The modules ``module``'s globals hold, and those whose functions and classes they
    hold, by name (read from dictionaries: no object's own code is run)."""
    found = {}
    for value in list(_MODULE_DICT(module).values()):
        kind = type(value)
        if issubclass(kind, types.ModuleType):
            name = _MODULE_DICT(value).get("__name__")
        elif kind is types.FunctionType:
            name = value.__module__
        elif issubclass(kind, type):
            name = _CLASS_DICT(value).get("__module__")
        else:
            continue
        if _name(name) and _module(name) is not None:
            found[name] = _module(name)
    return found


def _installed(module) -> bool:
    """Whether ``module`` is an installed library's, other than the standard library's (whose
    public globals are the process's state, watched as such or rebound as it runs:
    ``sys.modules``, ``tempfile.tempdir``)."""
    from importlib.machinery import ModuleSpec

    from .attribution import installed  # it reads the state, this module among it

    spec = _MODULE_DICT(module).get("__spec__")
    if type(spec) is not ModuleSpec or _name(spec.name).partition(".")[0] in sys.stdlib_module_names:
        return False
    return installed(spec)


def watch_libraries_of(module) -> None:
    """Watch too the installed libraries' modules that ``module`` (the target's) refers to,
    and those of the same package that each of them refers to (see the module docstring)."""
    if not issubclass(type(module), types.ModuleType):
        return
    watching = _watched()
    # A child forked from the template that watched them already: the module's globals are
    # as they were then (its version tag the same), and so is what it refers to.
    seen = (id(module), version_tag(_MODULE_DICT(module))) if _VERSION_OFFSET is not None else None
    if seen is not None and seen in watching.libraries_of:
        return
    own = _name(_MODULE_DICT(module).get("__name__"))
    first = {name: found for name, found in _referred_modules(module).items() if name != own and _installed(found)}
    second = {}
    for name, found in first.items():
        package = name.partition(".")[0]
        second |= {deeper: value for deeper, value in _referred_modules(found).items()
                   if deeper.partition(".")[0] == package and deeper != own and deeper not in first}
    before = len(watching.spaces), len(watching.functions)
    for name, found in first.items():
        watching.add(name, found, classes_of=name)
    for name, found in second.items():
        if id(found) not in watching.known and _installed(found):
            watching.add(name, found)
    if (len(watching.spaces), len(watching.functions)) != before:
        watching.seal()
    if seen is not None:
        watching.libraries_of.add(seen)


class Reading:
    """The watched namespaces and functions as read once (see the module docstring).
    Compared with ``==``, the earlier of two readings must be kept by the later."""

    __hash__ = None

    def __init__(self):
        watching = _watched()
        self.order = next(_readings)
        self.spaces, self.functions = watching.spaces, watching.functions
        self.tags, self.parts = watching.tags.read(), watching.parts.read()
        last = watching.last
        if last is not None and _VERSION_OFFSET is not None and self.tags == last.tags:
            self.names, self.values, self.addresses = last.names, last.values, last.addresses
        else:
            tags = ([self.tags[index:index + WORD] for index in range(0, len(self.tags), WORD)]
                    if _VERSION_OFFSET is not None else [None] * len(self.spaces))
            read = [space.read(tag) for space, tag in zip(self.spaces, tags, strict=True)]
            self.names, self.values, self.addresses = (tuple(column) for column in zip(*read, strict=True))
        if last is not None and _FUNCTION_OFFSETS is not None and self.parts == last.parts:
            self.objects = last.objects
        else:  # each part as an object, held: no id of a part is used again while a reading holds it
            self.objects = tuple(itertools.chain.from_iterable(map(_PARTS, map(operator.itemgetter(1),
                                                                                self.functions))))
            if _FUNCTION_OFFSETS is None:
                self.parts = addresses(self.objects)
        watching.last = self
        self.kept_by: Reading | None = None  # the last later reading found to keep this one

    def same(self, other: Reading) -> bool:
        """Whether ``other`` holds the same names bound to the same objects, and the same parts."""
        return self.parts == other.parts and self.addresses == other.addresses and self.names == other.names

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

    def changes(self, later: Reading) -> list[tuple[str, str, functools.partial]]:
        """``(entry, what became of it, how to put it back)`` for each watched entry
        ``later`` replaced, removed, or added to a class over a base, and each part of a
        watched function it replaced (of those both readings watch)."""
        found = []
        for index, space in enumerate(self.spaces[:len(later.spaces)]):
            if self.addresses[index] == later.addresses[index] and self.names[index] == later.names[index]:
                continue
            now = dict(zip(later.names[index], later.values[index], strict=True))
            before = dict(zip(self.names[index], self.values[index], strict=True))
            found += [(space.entry(name), "replaced" if name in now else "removed",
                       functools.partial(space.put_back, name, value))
                      for name, value in before.items()
                      if space.watches(name) and now.get(name, _MISSING) is not value and not space.follows(name)]
            if space.is_class:
                found += [(space.entry(name), "added over its base's",
                           functools.partial(space.put_back, name, _MISSING))
                          for name in now.keys() - before.keys() if watched(name) and space.hidden(name)]
        count = min(len(self.objects), len(later.objects))
        if self.parts[:count * WORD] != later.parts[:count * WORD]:
            differ = np.flatnonzero(np.frombuffer(self.parts, np.uint64, count)
                                    != np.frombuffer(later.parts, np.uint64, count))
            for index in differ.tolist():
                label, function = self.functions[index // len(FUNCTION_PARTS)]
                part = FUNCTION_PARTS[index % len(FUNCTION_PARTS)]
                found.append((f"{label}.{part}", "replaced in place",
                              functools.partial(_SET_PART[part], function, self.objects[index])))
        return found

    def difference(self, later: Reading) -> str:
        """What ``later`` changed of this reading, in a few words ("" for nothing)."""
        changes = self.changes(later)
        parts = [f"{entry} {what}" for entry, what, _ in changes[:3]]
        more = len(changes) - len(parts)
        return ", ".join(parts) + (f" and {more} more" if more > 0 else "")

    def __repr__(self) -> str:
        return f"the attributes of {len(self.spaces)} library modules, classes and dictionaries"


def restore(reading: Reading) -> None:
    """Put back every watched entry and function part ``reading`` held that changed since,
    and take away what was added to a class over its bases."""
    for _, _, put_back in reading.changes(Reading()):
        put_back()
