"""How real code is called, and the grid of calls a gate makes with the check ids they produce.

Signatures real code has (what the gate passes, what it gets back)::

    signature        call                                returns               real code
    dim-size         fn(embed_dim, grid_size: int)       (1 +) H*W x D         MAE get_2d_sincos_pos_embed,
                                                                               MoCo v3 (square grids only)
    dim-pair         fn(embed_dim, (H, W))               (extra +) H*W x D     diffusers get_2d_sincos_pos_embed
    h-w-dim          fn(H, W, dim)                       H*W x D, 1 x H*W x D  big_vision, vit-pytorch
                                                                               posemb_sincos_2d; transformers'
                                                                               build_2d_sinusoidal_position_embedding
    w-h-dim          fn(W, H, dim)                       1 x H*W x D           RT-DETR's position embedding,
                                                                               forward(width, height, device, dtype)
    module-table     Module(**init)(...) -> table        B x D x H x W         DETR's PositionEmbeddingSine(x, mask);
                                                                               transformers' DetrSinePositionEmbedding
                                                                               forward(shape, device, dtype, mask)
    adds-to-patches  Module(**init)(latent, B x C x      B x H*W x D           diffusers PatchEmbed (SD3 with
                     H*p x W*p) -> proj(latent) + table                        pos_embed_max_size): the gate hands
                                                                               zeros and judges out - proj(zeros)

``dim-size`` covers square grids only: a gate calling such a target cannot see a swapped
axis hidden by a transposed token order (on a square grid the two cancel), and says so.

The grid (:func:`calls`): grids ``1x1``, ``1xW``, ``Hx1``, prime sides (``7x11``, ``11x7``),
a square (``16x16``) and a wider non-square one (``13x32``), at widths 8, 12, 64 and 768,
each through every check of :data:`CHECK_NAMES` (``{check}[{H}x{W}:d={D}]``); width 4 at
``2x3`` (under ``freq_shift = 1`` it has no value: the call must raise); widths 6, 10 and 766
(not multiples of 4) at ``2x3``, where the call must raise (``indivisible[d=D]``); then
``determinism`` (the first call again) and ``global-state``. Under ``crop`` every side is
capped at ``max_size``; a ``dim-size`` target gets only the square grids.
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc_spec.families.sinusoidal.conventions import UndefinedWidthError

from .conventions import Sincos2d

SIGNATURES = ("dim-size", "dim-pair", "h-w-dim", "w-h-dim", "module-table", "adds-to-patches")
SQUARE_ONLY = ("dim-size",)
GRIDS = ((1, 1), (1, 7), (7, 1), (2, 3), (7, 11), (11, 7), (16, 16), (13, 32))
WIDTHS = (8, 12, 64, 768)
SMALLEST_WIDTH_GRID = (2, 3)
INDIVISIBLE_WIDTHS = (6, 10, 766)
CHECK_NAMES = ("call", "finite", "shape", "formula", "extra-tokens", "separable", "axis-order", "axis-member",
               "positions", "pair-norm")


@dataclass(frozen=True)
class Call:
    """One call of the grid: its sizes, whether it must raise, and the check ids it produces."""

    height: int
    width: int
    dim: int
    must_raise: bool = False

    @property
    def slot(self) -> str:
        return f"{self.height}x{self.width}:d={self.dim}"

    def check_ids(self) -> list[str]:
        if self.must_raise:
            return [f"indivisible[d={self.dim}]" if self.dim % 4 else f"undefined[d={self.dim}]"]
        return [f"{name}[{self.slot}]" for name in CHECK_NAMES]


def calls(conv: Sincos2d, signature: str = "h-w-dim") -> list[Call]:
    """Every call, in order (see the module docstring)."""
    if signature not in SIGNATURES:
        raise ValueError(f"signature must be one of {', '.join(SIGNATURES)}, got {signature!r}")
    limit = conv.max_size if conv.position == "crop" else None
    grids = [(min(h, limit or h), min(w, limit or w)) for h, w in GRIDS]
    if signature in SQUARE_ONLY:
        grids = [(h, w) for h, w in grids if h == w]
    made = []
    for height, width in dict.fromkeys(grids):
        made += [Call(height, width, dim) for dim in WIDTHS]
    height, width = (min(side, limit or side) for side in SMALLEST_WIDTH_GRID)
    if signature in SQUARE_ONLY:
        width = height
    try:
        conv.check_width(4)
        made.append(Call(height, width, 4))
    except UndefinedWidthError:
        made.append(Call(height, width, 4, must_raise=True))
    made += [Call(height, width, dim, must_raise=True) for dim in INDIVISIBLE_WIDTHS]
    return made


def plan_ids(conv: Sincos2d, signature: str = "h-w-dim") -> list[str]:
    """Every check id of a run, in order: ``import``, each call's, ``determinism``, ``global-state``."""
    ids = ["import"]
    for call in calls(conv, signature):
        ids += call.check_ids()
    return ids + ["determinism", "global-state"]
