"""posenc-spec: a verification suite for position encodings.

The encoding families, one package each (:mod:`.families`: conventions, oracle, tolerance,
properties, grid, judge, identify, hints, figures), what they share (:mod:`.tolerance`'s
comparison rule, :mod:`.results`), the gate that judges someone else's implementation
(:mod:`.gate`), its Python API (:func:`check`, :mod:`.testing`'s ``assert_conforms``), the
regression snapshots (:mod:`.regression`), the figures (:mod:`.figures`) and the
``posenc-spec`` command (:mod:`.cli`). ``check`` and ``Report``
are imported on first use: a template process imports this package without the gate.
"""

from posenc_spec.lazy import lazy_exports

__version__ = "0.2.0"

__getattr__, __dir__ = lazy_exports(__name__, globals(), {"check": "api", "Report": "api"})
