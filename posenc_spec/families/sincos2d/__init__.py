"""2-D sinusoidal position embeddings for patch grids (ViT, MAE, DiT, PixArt, SD3, DETR): the
``sincos2d`` API.

The family's specification: :mod:`.conventions` (the declared keys and the presets),
:mod:`.oracle` (exact and float64 tables), :mod:`.tolerance` (the per-element bound),
:mod:`.properties` (the checks) and :mod:`.calls` (the signatures real code has, and the
grid of calls a gate makes with their check ids). The gate's way in: :mod:`.keys` (the
declared names; imports nothing), :mod:`.spec` (their validation), :mod:`.family` (what the
core asks), :mod:`.judge`, :mod:`.adapters` (the child-side calls), :mod:`.slips` (the tables
real code's slips make), :mod:`.identify` (the fit, the nearest member and the hints), and
:mod:`.plot` with :mod:`.figures`.
"""
