"""Who changed the global state: the target's code, or a library imported meanwhile.

The first call of real code often imports more: transformers' lazy modules load a model's
code, a helper's first use pulls in torch's compiler stack, and those imports set
environment variables and add warnings filters. The caller's program does the same, once,
whatever the encoding computes. So while a call (or the target's import) runs, the child
watches every module Python's import system executes (:class:`Watch`) and reads the global
state (:mod:`.state`) wherever whose change it would be changes hands: when an installed
library's import begins from the target's code (or from a module of the target's) and when
it ends, and likewise around a module of the target's that a library imports. Each change is
attributed to the library import that was running when it happened, named by the module the
import began with (the modules it imported in turn run no code of the target's: reading the
state at each of them, a thousand for transformers, would cost more than the import), or to
the target when none was.

The rule: a change made while a module of an *installed library* was being imported is
that import's side effect: kept, as the caller's program would keep it, and reported as a
warning naming the module. A module is an installed library's when it is built in or
frozen, or when a loader of exactly one of Python's own classes (not a subclass), whose
methods and the import system's functions are those this process started with, loads it
from the standard library or a site folder, from a file that was not created or changed
since the run began (:data:`RUN_STARTED`; a cached ``.pyc`` changed since must be the
compilation of its source). The file is the loader's own, never the origin its spec names.
The target's own module is never a library's. Every other change is the target's: its own
code, its own module, a module it wrote or rewrote, one a loader of its own ran, and any
module loaded from elsewhere (the user's source tree, a temporary folder).

A library's import counts as the library's only while the import system would ask no
finder or hook but those this process started with, those an installed library's import
added, and finders of the standard types: an import hook of the target's (a
``sys.meta_path`` finder, a ``sys.path_hooks`` entry, a finder put into
``sys.path_importer_cache``) is asked about each module a library imports, so while one is
there, what changes is the target's.

What it cannot tell: a library function the library calls while it is imported, replaced
by the target, is taken for the library's.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import marshal
import operator
import os
import site
import sys
import sysconfig
import threading
import types
import zipimport
from dataclasses import dataclass, field

from . import state
from .site_folders import LIBRARY_FOLDERS

try:
    import _frozen_importlib as _bootstrap  # where ``import`` runs a module's code
    import _frozen_importlib_external as _bootstrap_external
except ImportError:  # not CPython: every change is the target's
    _bootstrap = _bootstrap_external = None

# When the run began, on the clock file times are taken from (set by the gate; None: no file
# counts as changed during the run).
RUN_STARTED: int | None = None

_STANDARD_LOADERS = (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader,
                     importlib.machinery.ExtensionFileLoader, importlib.machinery.NamespaceLoader,
                     zipimport.zipimporter)
_STANDARD_IMPORTERS = (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter)


def _library_roots() -> tuple[str, ...]:
    """The folders installed code lives in: the standard library's, every site folder, and
    the ``site-packages`` and ``dist-packages`` folders on the import path as the gate
    found it (``PYTHONPATH``); never a folder a target adds."""
    roots = {entry for entry in sys.path if os.path.basename(os.path.normpath(entry or ".")) in LIBRARY_FOLDERS}
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        paths = sysconfig.get_paths(vars=scheme_vars or None)
        roots |= {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    try:
        roots |= set(site.getsitepackages()) | {site.getusersitepackages()}
    except AttributeError:  # an old virtualenv's site module
        pass
    return tuple(sorted(os.path.join(os.path.realpath(root), "") for root in roots if root))


_ROOTS = _library_roots()


def _import_namespaces() -> list:
    """Where a standard loader finds what it calls while it loads a module, as
    ``(namespace, names, whole)``: the methods of its classes and of the standard finders
    (``whole``: a method added to a class overrides its base's), the import system's
    functions, ``exec`` and ``marshal.loads``."""
    classes = (*_STANDARD_LOADERS, *_STANDARD_IMPORTERS, importlib.machinery.FileFinder,
               importlib.machinery.PathFinder)
    found = [(vars(builtins), ("exec",), False), (vars(marshal), ("loads",), False)]
    found += [(vars(cls), tuple(vars(cls)), True)
              for cls in {base for loader in classes for base in loader.__mro__ if base is not object}]
    found += [(vars(module), tuple(name for name, value in vars(module).items()
                                   if callable(value) and name != "_load_unlocked"), False)  # the Watch's own hook
              for module in (_bootstrap, _bootstrap_external)]
    return found


class _ImportFunctions:
    """The import functions (:func:`_import_namespaces`) as this process started with them,
    compared by identity (a stand-in that claims to equal one is still a change) at C speed:
    every module a call imports asks."""

    def __init__(self):
        self.namespaces = _import_namespaces() if _bootstrap is not None else []
        self.pristine = [(namespace, len(namespace) if whole else None, names, tuple(map(namespace.get, names)))
                         for namespace, names, whole in self.namespaces]

    def unchanged(self) -> bool:
        return all((size is None or len(namespace) == size)
                   and all(map(operator.is_, map(namespace.get, names), values))
                   for namespace, size, names, values in self.pristine)


_IMPORT_FUNCTIONS = _ImportFunctions()


class _Machinery:
    """What the import system asks while it finds a module, as far as it is trusted: the
    entries of ``sys.meta_path`` and ``sys.path_hooks`` this process started with (before
    any target code), and the types of the finders ``sys.path_importer_cache`` held then, a
    standard one or an installed library's class; more of each is trusted once an installed
    library's import added it."""

    def __init__(self):
        self.hooks: dict[int, object] = {}  # by id, holding each object so that no id is used again
        self.finder_types = {type(None), importlib.machinery.FileFinder, zipimport.zipimporter}
        self.trust_current()

    def trust_current(self) -> None:
        self.hooks.update((id(hook), hook) for hook in [*sys.meta_path, *sys.path_hooks])
        self.finder_types.update(map(type, list(sys.path_importer_cache.values())))

    def trusted(self) -> bool:
        """Whether every finder and hook the import system would ask is trusted: else code
        of the target's may run while an untouched library imports."""
        if not all(id(hook) in self.hooks for hook in [*sys.meta_path, *sys.path_hooks]):
            return False
        for kind in set(map(type, list(sys.path_importer_cache.values()))) - self.finder_types:
            if not _installed_class(kind):
                return False
            self.finder_types.add(kind)
        return True


def _installed_class(cls: type) -> bool:
    """Whether ``cls`` is a class of an installed library's module, found there by its name
    (a path hook of a library makes finders of its own class)."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    spec = getattr(module, "__spec__", None)
    if spec is None or spec.name != module.__name__ or not installed(spec):
        return False
    found = module
    for part in cls.__qualname__.split("."):
        found = vars(found).get(part) if isinstance(found, type | types.ModuleType) else None
    return found is cls


_MACHINERY = _Machinery()
_TARGET_CODE_RAN = False  # in this process or one it was forked from (a module template)


def trust_import_machinery() -> None:
    """Trust every finder and hook the import system has now."""
    _MACHINERY.trust_current()


def before_target_code() -> None:
    """Called before a target's code first runs in this process: the finders and hooks that
    the gate, the preloaded and learned libraries and a declared framework put there are
    trusted. Once a target's code ran here (or in the module template this process was
    forked from), nothing more is trusted so."""
    global _TARGET_CODE_RAN
    if not _TARGET_CODE_RAN:
        trust_import_machinery()
        _TARGET_CODE_RAN = True


def installed(spec) -> bool:
    """Whether ``spec`` (a module spec) is a module of an installed library: built in or
    frozen, or loaded by a standard loader, as this process started with it, from an
    unchanged file of the standard library or a site folder (see the module docstring)."""
    loader = spec.loader
    if loader in _STANDARD_IMPORTERS:
        return True
    if type(loader) not in _STANDARD_LOADERS or not _IMPORT_FUNCTIONS.unchanged():
        return False
    if isinstance(loader, importlib.machinery.NamespaceLoader):  # a namespace package runs no code of its own
        return True
    path = loader.archive if isinstance(loader, zipimport.zipimporter) else loader.path
    return os.path.realpath(path).startswith(_ROOTS) and not changed_during_run(path, loader)


def changed_during_run(path: str, loader=None) -> bool:
    """Whether the file ``path`` was created or changed since the run began; for a source
    file, also its cached ``.pyc``, unless that holds exactly the compiled source (the
    import system writes it on a first import)."""
    if RUN_STARTED is None:
        return False
    try:
        if os.stat(path).st_ctime_ns >= RUN_STARTED:
            return True
        if not isinstance(loader, importlib.machinery.SourceFileLoader):
            return False
        cached = importlib.util.cache_from_source(path)
        if not os.path.exists(cached) or os.stat(cached).st_ctime_ns < RUN_STARTED:
            return False
        with open(path, "rb") as source, open(cached, "rb") as compiled:
            code = compile(importlib.util.decode_source(source.read()), path, "exec", dont_inherit=True)
            return marshal.loads(compiled.read()[16:]) != code
    except (OSError, ValueError, SyntaxError, EOFError, TypeError, NotImplementedError):
        return True


@dataclass
class _Change:
    """A change seen between two readings: the entry, the module whose code ran (None: the
    target's), and what changed."""

    entry: str
    module: str | None
    description: str


@dataclass
class Verdict:
    """What a watched call or import did to the global state. ``own``: the entries the
    target changed, with a line each (the child restores them after a call); ``effects``:
    ``importing M changed X`` for what imports alone changed (kept); ``imported``: the
    modules the outermost imports named, in order; ``count``: how many modules ran;
    ``kept``: the entries only imports changed; ``changed``: every entry of the baseline
    that differs at the end, or could no longer be read."""

    own: dict[str, str] = field(default_factory=dict)
    kept: set[str] = field(default_factory=set)
    effects: list[str] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)
    count: int = 0
    changed: list[str] = field(default_factory=list)


class Watch:
    """A context manager around a call or an import: attributes each change of the global
    state made meanwhile (see the module docstring). ``target_module`` names the target's
    own module, whose code is the target's even when installed."""

    def __init__(self, baseline: dict, target_module: str | None = None):
        self.baseline, self.target_module = baseline, target_module
        self.reading = dict(baseline)
        # (module, owner) whose code runs: the owner is the library import that began the
        # enclosing run of library modules (this module, if it began it), None for the target's
        self.running: list[tuple[str, str | None]] = []
        self.changes: list[_Change] = []
        self.imported: list[str] = []
        self.count = 0
        self.thread = threading.get_ident()
        self.busy = False
        self.original = self.hook = None

    # -- the hook --------------------------------------------------------------------------

    def __enter__(self) -> Watch:
        if _bootstrap is not None and hasattr(_bootstrap, "_load_unlocked"):
            self.original = _bootstrap._load_unlocked
            self.hook = self._load  # one bound method, to find it again on the way out
            _bootstrap._load_unlocked = self.hook
        return self

    def __exit__(self, *exc) -> None:
        if self.original is not None and _bootstrap._load_unlocked is self.hook:
            _bootstrap._load_unlocked = self.original

    def _load(self, spec):
        original = self.original
        if self.busy or threading.get_ident() != self.thread:
            # Another thread's import, or one our own reading started: not told apart.
            return original(spec)
        enclosing = self.running[-1][1] if self.running else None
        if enclosing is not None:  # finders and hooks the library being imported added: its own
            _MACHINERY.trust_current()
        library = installed(spec) and spec.name != self.target_module and _MACHINERY.trusted()
        owner = (enclosing or spec.name) if library else None
        if not self.running:
            self.imported.append(spec.name)
        self.count += 1
        if owner != enclosing:
            self._read(enclosing)
        self.running.append((spec.name, owner))
        try:
            return original(spec)
        finally:
            if owner != enclosing:
                self._read(owner)
            self.running.pop()
            if library:  # finders and hooks the library's import added are the library's
                _MACHINERY.trust_current()

    def _read(self, owner: str | None) -> None:
        """Read the state; attribute what changed since the last reading to ``owner`` (the
        library import that ran meanwhile, None for the target)."""
        self.busy = True
        try:
            now = state.snapshot()
        finally:
            self.busy = False
        for name, value in now.items():
            before = self.reading.get(name, value)
            if value != before:
                self.changes.append(_Change(name, owner, state.describe_change(name, before, value)))
        self.reading = now

    # -- the verdict -------------------------------------------------------------------------

    def verdict(self, final: dict) -> Verdict:
        """Attribute each entry that ``final`` (the state when the call or import ended)
        holds changed from the baseline: to imports alone, or to the target."""
        verdict = Verdict(imported=list(self.imported), count=self.count,
                          changed=state.changed_entries(self.baseline, final))
        if not verdict.changed:  # the common case: nothing to attribute
            return verdict
        self._read_final(final)
        for name in verdict.changed:
            if name not in final:  # unreadable now: named when the state is put back
                continue
            value = final[name]
            changes = [change for change in self.changes if change.entry == name]
            libraries = [change for change in changes if change.module is not None]
            if changes and len(libraries) == len(changes):
                verdict.kept.add(name)
                verdict.effects += [f"importing {change.module} changed {change.description}" for change in libraries]
            elif libraries:  # the target's change beside a library's: name the target's alone
                verdict.own[name] = "; ".join(dict.fromkeys(change.description for change in changes
                                                            if change.module is None))
            else:
                verdict.own[name] = state.describe_change(name, self.baseline[name], value)
        return verdict

    def _read_final(self, final: dict) -> None:
        for name, value in final.items():
            before = self.reading.get(name, value)
            if value != before:
                self.changes.append(_Change(name, None, state.describe_change(name, before, value)))
        self.reading = final
