"""The gate: check someone else's position encoding against a declared convention.

``declaration -> grid -> sealed child -> judge -> report``: :func:`declare` validates what
a user declares, :func:`check_many` runs and judges (:mod:`posenc_spec.gate.engine`), the
``posenc-spec`` commands (:mod:`posenc_spec.commands`) and the pytest plugin
(:mod:`posenc_spec.pytest_plugin`) are thin layers over them. Each encoding family
(:mod:`posenc_spec.families`) holds its grid, its check ids and its judge; the core finds
it through :mod:`posenc_spec.registry` and asks it through
:class:`posenc_spec.gate.family.Family`. The child side lives in :mod:`posenc_spec.gate.child`.

Names are imported on first use (PEP 562): a template process imports
``posenc_spec.gate.child`` without loading the engine.
"""

from __future__ import annotations

from posenc_spec.lazy import lazy_exports

_SOURCES = {
    "Declaration": "declaration",
    "RunOptions": "options",
    "UsageError": "errors",
    "declare": "declaration",
    "run_options": "options",
    "GateReport": "report",
    "check_many": "engine",
    "check_target": "engine",
    "plan": "engine",
    "identify_many": "identify",
    "identify_target": "identify",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _SOURCES)


__all__ = sorted(_SOURCES)
