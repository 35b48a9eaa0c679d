"""posenc-spec: a verification suite for position encodings.

The specification core (:mod:`.conventions`, :mod:`.oracle`, :mod:`.tolerance`,
:mod:`.checks`), the gate that judges someone else's implementation (:mod:`.gate`), the
figures (:mod:`.figures`) and the ``posenc-spec`` command (:mod:`.cli`).
"""

__version__ = "0.2.0"
