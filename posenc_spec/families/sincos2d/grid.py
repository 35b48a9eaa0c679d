"""How real code is called, and the grid of calls a gate makes with the check ids they produce.

Signatures real code has (the gate's call is ``(H, W, D)``; the family's child-side
:mod:`.adapters` makes the call the declared signature names, with no wrapper to write)::

    signature           call                                   real code
    h-w-dim (default)   fn(H, W, D)                            vit-pytorch and big_vision posemb_sincos_2d;
                                                               transformers' build_2d_sinusoidal_position_embedding
    w-h-dim             fn(W, H, D)                            a forward(width, height, ...) called bare
    dim-size            fn(D, S), square grids only            MAE's and open_clip's get_2d_sincos_pos_embed,
                                                               diffusers' with an int, MoCo v3
    dim-pair            fn(D, (H, W))                          diffusers' get_2d_sincos_pos_embed
    shape-dim           fn([H, W], D)                          timm's build_sincos2d_pos_embed(feat_shape, dim)
    shape-device-dtype  fn(torch.Size([1, C, H, W]),           transformers' DetrSinePositionEmbedding and its
                           device, dtype)                      copies (Deformable/Conditional DETR, Table
                                                               Transformer, MaskFormer ...)
    w-h-device-dtype    fn(W, H, device, dtype)                transformers' RTDetrSinePositionEmbedding
    x                   fn(zeros (1, C, H, W))                 SAM 2's and Mask2Former's PositionEmbeddingSine
    mask                fn(zeros (1, H, W) bool)               mmdet's SinePositionalEncoding(mask)
    nested-tensor       fn(NestedTensor(zeros (1, C, H, W),    DETR's and Deformable DETR's PositionEmbeddingSine
                           mask zeros (1, H, W) bool))
    adds-to-patches     Module(**init)(zeros (1, C, H P, W P)) diffusers' PatchEmbed (SD3's with
                        with its trainable parameters zeroed:  pos_embed_max_size): what it adds to the
                        what it returns is what it adds        projected patches is its table

``dim-size`` covers square grids only: a gate calling such a target cannot see a swapped
axis hidden by a transposed token order (on a square grid the two cancel), and says so.

The grid (:func:`calls`): grids ``1x1``, ``1x7``, ``7x1``, ``2x3``, prime sides (``7x11``,
``11x7``), a square (``16x16``) and a wider non-square one (``13x32``), at widths 8, 12 and 64,
the last grid also at a ViT-Base width, 768 (:data:`WIDE`), each through every check of
:data:`CHECK_NAMES` (``{check}[{H}x{W}:d={D}]``);
width 4 at ``2x3``; widths 6, 10 and 766 (not multiples of 4) at ``2x3``, where the call
must raise (``indivisible[d=D]``); under ``freq_shift = 1`` width 4 has no value and
must raise too (``undefined[d=4]``, or return the limit omega = 1); then ``determinism``
(``13x32:d=64`` again). A ``dim-size`` target gets the square grids ``1x1``, ``2x2``, ``7x7``
and ``16x16`` instead. ``max_positions`` caps every side, and so does ``pos_embed_max_size``
under ``crop``; the ids name the grid's own sizes, the same whatever the cap (an xfails file
keyed on them keeps working), and the messages name the sizes called.

Each call is kept for the class of bug it shows:

- ``1x1``, ``1x7`` and ``7x1``: an axis of one position (a normalisation by ``side - 1``
  divides by 0 there, a squeezed axis, a class token's row with no grid beside it);
- ``2x3``, ``7x11`` and ``11x7``: sides that differ, both ways round, and prime (no side
  divides the other): the axis order, the token order (row- or column-major), a position
  normalised or cropped by the other side's length;
- ``16x16`` and ``13x32``: a square grid (the common case, where a swapped axis cancels a
  transposed token order) and a non-square one of more tokens;
- widths 8, 12 and 64: a quarter of the width per frequency set (2, 3 and 16 frequencies),
  where an exponent over the wrong denominator (``D``, ``D/2``, ``D/4 - 1``), a base, the
  concat or interleaved layout and sin/cos order differ;
- width 768 at ``13x32`` (``16x16`` for ``dim-size``): a model's width (ViT-Base), where
  code may take another path or fill a buffer sized for smaller tables, on the non-square
  grid so that an axis mix-up at that width shows too. One grid at that width is enough: the
  wide tables are most of a check's cost, every slip of the corpus shows at the narrow ones,
  and ``16x16:d=768`` (dropped but for ``dim-size``: an xfails entry naming it matches
  nothing) showed nothing ``13x32:d=768`` does not;
- width 4, and 6, 10 and 766 (not multiples of 4) at ``2x3``: a width with no value must
  raise, not be padded or truncated;
- the determinism repeat at ``13x32:d=64``.
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc_spec.families.sinusoidal.conventions import UndefinedWidthError
from posenc_spec.gate.calls import CallRequest

from .conventions import Sincos2d
from .keys import SIGNATURES

SQUARE_ONLY = ("dim-size",)
GRIDS = ((1, 1), (1, 7), (7, 1), (2, 3), (7, 11), (11, 7), (16, 16), (13, 32))
SQUARE_GRIDS = ((1, 1), (2, 2), (7, 7), (16, 16))
WIDTHS = (8, 12, 64)
WIDE = 768  # at the last grid only: 13x32, or 16x16 for a square-only signature
SMALLEST_WIDTH_GRID = (2, 3)
INDIVISIBLE_WIDTHS = (6, 10, 766)
DETERMINISM = (13, 32, 64)
CHECK_NAMES = ("call", "finite", "shape", "formula", "extra-tokens", "separable", "axis-order", "axis-member",
               "positions", "pair-norm")


@dataclass(frozen=True)
class Call:
    """One call of the grid (a probe of the gate's engine): its sizes, its ``role`` (``table``;
    ``refuse``: the width has no value, the call must raise; ``repeat``: the determinism
    call, a second call of ``repeats``), the shape it must return and the check ids it produces."""

    height: int
    width: int
    dim: int
    shape: tuple[int, ...] = ()
    role: str = "table"
    repeats: str | None = None
    rng: str = "a"
    nominal: str | None = None  # the grid's own sizes, when a cap made the call smaller

    @property
    def size(self) -> str:
        """The sizes called, ``HxW:d=D``."""
        return f"{self.height}x{self.width}:d={self.dim}"

    @property
    def slot(self) -> str:
        """What the check ids name: the grid's own sizes, whatever the cap."""
        return self.nominal or self.size

    @property
    def must_raise(self) -> bool:
        return self.role == "refuse"

    @property
    def check_id(self) -> str | None:
        if self.role == "repeat":
            return "determinism"
        if self.role == "refuse":
            return f"indivisible[d={self.dim}]" if self.dim % 4 else f"undefined[d={self.dim}]"
        return None

    def check_ids(self) -> list[str]:
        if self.role != "table":
            return [self.check_id]
        return [f"{name}[{self.slot}]" for name in CHECK_NAMES]

    def request(self, label: str | None = None) -> CallRequest:
        """The call ``(H, W, D)``, labelled by the slot (or by ``label``)."""
        return CallRequest(label or self.slot, (self.height, self.width, self.dim), self.shape, rng=self.rng)


def _capped(side: int, limit: int | None) -> int:
    return side if limit is None else min(side, limit)


def calls(conv: Sincos2d, signature: str = "h-w-dim", max_positions: int | None = None) -> list[Call]:
    """Every call, in order (see the module docstring)."""
    if signature not in SIGNATURES:
        raise ValueError(f"signature must be one of {', '.join(SIGNATURES)}, got {signature!r}")
    limits = [limit for limit in (max_positions, conv.max_size if conv.position == "crop" else None) if limit]
    limit = min(limits) if limits else None
    grids = SQUARE_GRIDS if signature in SQUARE_ONLY else GRIDS

    def call(height, width, dim, role="table", **more):
        called = (_capped(height, limit), _capped(width, limit))
        nominal = f"{height}x{width}:d={dim}" if called != (height, width) else None
        return Call(*called, dim, conv.shape(*called, dim), role, nominal=nominal, **more)

    made = [call(height, width, dim) for height, width in grids
            for dim in (*WIDTHS, *((WIDE,) if (height, width) == grids[-1] else ()))]
    height, width = SMALLEST_WIDTH_GRID
    if signature in SQUARE_ONLY:
        width = height
    try:
        conv.check_width(4)
        made.append(call(height, width, 4))
    except UndefinedWidthError:
        made.append(call(height, width, 4, "refuse"))
    made += [call(height, width, dim, "refuse") for dim in INDIVISIBLE_WIDTHS]
    repeated = grids[-1] if signature in SQUARE_ONLY else DETERMINISM[:2]
    first = call(*repeated, DETERMINISM[2])
    made.append(call(*repeated, DETERMINISM[2], "repeat", repeats=first.slot, rng="b"))
    return made


def plan_ids(made: list[Call]) -> list[str]:
    """Every check id of a run over ``made``, in order: ``import``, each call's, then the
    core's ``aliasing`` and ``global-state``."""
    ids = ["import"]
    for call in made:
        ids += [check_id for check_id in call.check_ids() if check_id not in ids]
    return ids + ["aliasing", "global-state"]
