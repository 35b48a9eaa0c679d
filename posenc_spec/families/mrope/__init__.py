"""Rotary embeddings on several axes (family ``mrope``, the ``mrope-cache`` API): the M-RoPE of
vision-language models and the 2-D/3-D rotary embeddings of diffusion transformers.

- :mod:`.keys`: the declared keys (imports nothing); :mod:`.spec`: their validation;
- :mod:`.conventions`: the parameter set (axes, sections, shared or per-axis frequencies,
  interleaved slots, theta per axis, pair layout), the presets and the positions of a grid;
- :mod:`.oracle`: the exact frequencies (mpmath) and the float64 cache;
- :mod:`.tolerance`: the bound per token and slot, derived in its docstring from the rope family's;
- :mod:`.properties`: the checks, each a :class:`~posenc_spec.results.CheckResult`;
- :mod:`.grid`: the calls a gate makes and their check ids; :mod:`.judge`: the verdicts;
- :mod:`.adapters`: each signature's call, in the sealed child;
- :mod:`.slips`: the nearest member and the slips the hints name; :mod:`.plot`: the slot map;
  :mod:`.family`: what the core asks.

A light face: importing it imports nothing (the child's template imports :mod:`.adapters`).
"""
