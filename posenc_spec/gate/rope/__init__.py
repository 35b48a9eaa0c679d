"""The gate's rotary-embedding (RoPE) family: what a RoPE declaration says (:mod:`.spec`),
the calls the gate makes (:mod:`.grid`), how each API's results are read (:mod:`.read`)
and judged (:mod:`.judge`). The formulas and bounds live in :mod:`posenc_spec.rope` and
:mod:`posenc_spec.tolerance`."""
