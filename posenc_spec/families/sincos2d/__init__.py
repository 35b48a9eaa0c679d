"""2-D sinusoidal position embeddings for patch grids (ViT, MAE, DiT, PixArt, SD3, DETR).

The family's specification: :mod:`.conventions` (the declared keys and the presets),
:mod:`.oracle` (exact and float64 tables), :mod:`.tolerance` (the per-element bound),
:mod:`.properties` (the checks) and :mod:`.calls` (the signatures real code has, and the
grid of calls a gate makes with their check ids).
"""

from .conventions import PRESETS, Sincos2d, get_convention

__all__ = ["PRESETS", "Sincos2d", "get_convention"]
