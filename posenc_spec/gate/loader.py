"""Find the function a TARGET names: ``package.module:attr`` or ``path/to/file.py:attr``.

``attr`` may be dotted (``Class.method``, ``module.Class.staticmethod``). A file target is
imported under a private module name derived from its absolute path, with its folder put
first on ``sys.path`` so that it can import its neighbours. The gate imports targets in
its sealed children only (:mod:`posenc_spec.gate.child.serve`); the parent merely parses them.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path


class TargetError(ValueError):
    """A TARGET that is malformed, or names something that does not exist or is not callable."""


@dataclass(frozen=True)
class TargetName:
    module: str  # a dotted module name, or a file path ending in .py
    attr: str  # dotted attribute path inside the module
    is_path: bool

    def __str__(self) -> str:
        return f"{self.module}:{self.attr}"


def parse_target(target) -> TargetName:
    """Split and validate a TARGET string; :class:`TargetError` names what is wrong."""
    if not isinstance(target, str):
        raise TargetError(f"TARGET must be a string 'package.module:attr' or 'path/to/file.py:attr', got {target!r}")
    module, colon, attr = target.rpartition(":")
    if not colon or not module or not attr:
        raise TargetError(f"TARGET must be 'package.module:attr' or 'path/to/file.py:attr', got {target!r}")
    is_path = module.endswith(".py") or "/" in module or os.sep in module
    if is_path and not module.endswith(".py"):
        raise TargetError(f"a file TARGET must name a .py file, got {module!r} in {target!r}")
    if not is_path and not all(part.isidentifier() for part in module.split(".")):
        raise TargetError(f"{module!r} in TARGET {target!r} is not a dotted module name (or a path to a .py file)")
    if not all(part.isidentifier() for part in attr.split(".")):
        raise TargetError(f"{attr!r} in TARGET {target!r} is not a dotted attribute name")
    return TargetName(module, attr, is_path)


def absolute_target(target: str, base_dir: str | os.PathLike | None = None) -> str:
    """The TARGET with a file path made absolute (relative to ``base_dir``, default the
    working directory); module targets are returned unchanged."""
    name = parse_target(target)
    if not name.is_path:
        return target
    path = Path(name.module)
    if not path.is_absolute():
        path = Path(base_dir or os.getcwd()) / path
    return f"{os.path.normpath(path)}:{name.attr}"


def add_folder(path: Path) -> None:
    """Put a file target's folder first on ``sys.path``, so that it can import its neighbours."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)


def prepare(target: str) -> None:
    """What importing ``target`` needs before it runs (a file target's folder on the path)."""
    name = parse_target(target)
    if name.is_path:
        add_folder(Path(name.module).resolve())


def _import_file(path: Path):
    module_name = "posenc_target_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    add_folder(path)
    # Registered before running it, as a normal import does (dataclasses and pickle look it up).
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def module_key(target: str) -> str:
    """What targets must share to share an import: the module name or the file's path."""
    return parse_target(target).module


def import_module_of(target: str):
    """Import (or find already imported) the module ``target`` names. Errors raised while
    the module runs propagate unchanged; a missing file raises :class:`TargetError`."""
    name = parse_target(target)
    if name.is_path:
        path = Path(name.module).resolve()
        if not path.is_file():
            raise TargetError(f"no such file: {name.module}")
        return _import_file(path)
    return importlib.import_module(name.module)


def load_target(target: str):
    """Import the module and return the callable. Errors raised while the module itself
    runs propagate unchanged; a missing file or attribute, or a value that is not
    callable, raises :class:`TargetError`."""
    name = parse_target(target)
    obj = import_module_of(target)
    reached = name.module
    for part in name.attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"{reached} has no attribute {part!r}") from None
        reached = f"{reached}:{part}" if reached == name.module else f"{reached}.{part}"
    if not callable(obj):
        raise TargetError(f"{target} is not callable (type {type(obj).__name__})")
    return obj
