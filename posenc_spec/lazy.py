"""Names a package exports but imports on first use (PEP 562), so that importing the
package stays cheap: ``__getattr__, __dir__ = lazy_exports(__name__, globals(), SOURCES)``
with ``SOURCES`` mapping each name to the submodule that defines it."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, namespace: dict, sources: dict[str, str]):
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its globals are ``namespace``)."""

    def __getattr__(name: str):
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{sources[name]}", package), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(sources))

    return __getattr__, __dir__
