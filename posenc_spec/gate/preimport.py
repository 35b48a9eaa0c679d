"""Everything the gate's own process will import, imported before the first target runs.

A target that runs as the gate's user (an ordinary CI user owns the interpreter, its
site-packages and the checkout) may change any file the gate has not read yet: a module the
gate imported only after a target ran (to write JUnit XML, say) would run the target's code
inside the gate. So before the first target starts, the gate imports every module of this
package that its process can need (:func:`import_gate_modules`): all of them, but those
that run only in a target's child (``posenc_spec.gate.child``) or stand on torch or
matplotlib (a family's call adapters and reference implementations, the figures), found by
reading each module's top-level imports, never by running them; and the modules of the
standard library and NumPy the outputs import on first use. With pictures to draw
(``--plots``), :func:`import_drawing_modules` draws one small picture first, which imports
matplotlib and every module saving a PNG needs.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import threading
from pathlib import Path

import posenc_spec

# What runs in a target's child, or only from the test suite, not in the gate's process.
NOT_THE_GATES = ("posenc_spec.gate.child", "posenc_spec.__main__", "posenc_spec.pytest_plugin",
                 "posenc_spec.testing", "posenc_spec.pretrained")
# Libraries the gate's process never imports unless it draws (matplotlib) or a family's
# child-side code is imported by mistake (torch): a module that stands on one is skipped.
HEAVY = ("torch", "matplotlib", "transformers")
# Imported on first use by the outputs (JUnit XML: xml.etree and its parser; the package's
# metadata: email.parser), by the judging of masked values (numpy.ma) and by the probes a family draws
# at random (numpy.random).
LIBRARY_MODULES = ("xml.etree.ElementTree", "xml.parsers.expat", "pyexpat", "email.parser", "email.feedparser",
                   "numpy.ma", "numpy.random", "json", "zlib", "hashlib", "importlib.metadata")

_done: set[str] = set()
_lock = threading.Lock()


def import_gate_modules() -> None:
    """Import every module the gate's process may need after a target started (see the
    module docstring); once per process."""
    with _lock:
        if "gate" in _done:
            return
        for name in sorted(gate_side_modules()):
            importlib.import_module(name)
        for name in LIBRARY_MODULES:
            importlib.import_module(name)
        _done.add("gate")


def import_drawing_modules() -> None:
    """Import what writing the pictures of ``--plots`` needs: the package's figures and each
    family's, matplotlib, and what saving a PNG imports (by saving a small one in memory)."""
    import_gate_modules()
    with _lock:
        if "drawing" in _done:
            return
        for name in sorted(gate_side_modules(("torch", "transformers"))):
            importlib.import_module(name)
        from posenc_spec.figures.style import figure_style, new_figure, png_bytes

        with figure_style():
            figure = new_figure((1, 1), 10)
            figure.add_subplot().imshow([[0.0, 1.0]])
            png_bytes(figure)
        _done.add("drawing")


@functools.cache
def _package_modules() -> dict[str, tuple[Path, bool]]:
    """Every module of this package: name -> (source file, is a package)."""
    found = {}

    def walk(path: list[str], prefix: str):
        for info in pkgutil.iter_modules(path, prefix):
            if not isinstance(getattr(info.module_finder, "path", None), str):
                continue  # not a folder of source files (a zip archive): nothing to read ahead there
            folder = Path(info.module_finder.path)
            if info.ispkg:
                found[info.name] = (folder / info.name.rpartition(".")[2] / "__init__.py", True)
                walk([str(folder / info.name.rpartition(".")[2])], info.name + ".")
            else:
                found[info.name] = (folder / f"{info.name.rpartition('.')[2]}.py", False)

    found[posenc_spec.__name__] = (Path(posenc_spec.__file__), True)
    walk(list(posenc_spec.__path__), posenc_spec.__name__ + ".")
    return found


def _imports(name: str, source: Path, is_package: bool, known) -> set[str]:
    """The modules ``name`` imports at its top level (where a statement is not inside a
    function): absolute names, with the package's own submodules that ``from . import x``
    names, and the module's parent package."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    package = name if is_package else name.rpartition(".")[0]
    found = {name.rpartition(".")[0]} - {""}
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.If, ast.Try)):  # `try: import x`, `if TYPE_CHECKING: ...` alike
            statements.extend(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
                              + [item for handler in getattr(node, "handlers", []) for item in handler.body])
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level else ""
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            module = ".".join(filter(None, [base, node.module or ""]))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in known)
    return found


@functools.cache
def _edges() -> dict[str, set[str]]:
    modules = _package_modules()
    return {name: _imports(name, source, is_package, modules) for name, (source, is_package) in modules.items()}


def gate_side_modules(heavy_libraries=HEAVY) -> set[str]:
    """The modules of this package the gate's process may import: all but those of
    ``NOT_THE_GATES`` and those that stand, through their top-level imports, on one of
    ``heavy_libraries``."""
    modules, edges = _package_modules(), _edges()
    heavy = {name for name, imported in edges.items()
             if any(other.partition(".")[0] in heavy_libraries for other in imported)}
    while True:  # what imports a heavy module is heavy too
        more = {name for name, imported in edges.items() if name not in heavy and imported & heavy}
        if not more:
            break
        heavy |= more
    return {name for name in modules if not name.startswith(NOT_THE_GATES) and name not in heavy}
