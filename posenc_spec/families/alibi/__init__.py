"""ALiBi: attention with linear biases, as a family of conventions (``docs/families/alibi.md``).

``conventions``: :class:`~.conventions.AlibiConvention` and its presets (the slope rule,
partial ALiBi, the bias form, the region, where the queries sit, padding, the compute
dtype); ``oracle``: exact (mpmath) and float64 slopes and biases; ``tolerance``: the
per-element bounds; ``properties``: the checks a correct table passes; ``grid``: the calls,
the signatures real code has and the check ids; ``adapters``: how real code is called, in
the sealed child; ``judge``: what a call returned, read into the oracle's layout, and the
verdicts; ``keys``, ``spec`` and ``family``: the gate's way in; ``identify``, ``slips`` and
``plot``: what a failing or unknown target computes, and its pictures.

This module imports nothing: ``--help`` and the pytest plugin read :mod:`.keys` without NumPy.
"""
