"""T5's relative-position buckets (family ``t5buckets``, the ``t5-buckets`` API): the learned
bias per bucket of ``memory - query`` that T5 and its many copies add to the attention logits.

- :mod:`.keys`: the declared keys (imports nothing); :mod:`.spec`: their validation;
- :mod:`.conventions`: the family's parameters (``bidirectional``, ``num_buckets``,
  ``max_distance``, ``relative_position``) and the presets of real code;
- :mod:`.oracle`: the exact buckets (integer arithmetic only) and the float64 logarithmic
  position the tolerance needs;
- :mod:`.tolerance`: the band where a correct float logarithm may land in a neighbouring
  bucket, derived in its docstring;
- :mod:`.properties`: the structural checks, each a :class:`~posenc_spec.results.CheckResult`;
- :mod:`.grid`: the calls a gate makes, their check ids, and the same calls in-process (for
  the tests and the corpus); :mod:`.judge`: the verdicts;
- :mod:`.adapters`: each signature's call, in the sealed child;
- :mod:`.slips`: which member a target's buckets are (the nearest member) and the slips the
  hints name; :mod:`.identify`: ``identify``; :mod:`.plot`: the bucket map; :mod:`.family`:
  what the core asks.

A light face: importing it imports nothing (the child's template imports :mod:`.adapters`).
"""
