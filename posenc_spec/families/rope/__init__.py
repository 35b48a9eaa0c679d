"""Rotary position embeddings (the ``rope-freqs``, ``rope-cache`` and ``rope-apply`` APIs).

:mod:`.keys`: the declared keys; :mod:`.family`: what the gate's core asks of the family.
"""
