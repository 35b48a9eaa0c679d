"""posenc-spec: a verification suite for position encodings.

The specification core (:mod:`.conventions`, :mod:`.oracle`, :mod:`.tolerance`,
:mod:`.checks`), the gate that judges someone else's implementation (:mod:`.gate`), its
Python API (:func:`check`, :mod:`.testing`'s ``assert_conforms``), the figures
(:mod:`.figures`) and the ``posenc-spec`` command (:mod:`.cli`). ``check`` and ``Report``
are imported on first use: a template process imports this package without the gate.
"""

from posenc_spec.lazy import lazy_exports

__version__ = "0.2.0"

__getattr__, __dir__ = lazy_exports(__name__, globals(), {"check": "api", "Report": "api"})
