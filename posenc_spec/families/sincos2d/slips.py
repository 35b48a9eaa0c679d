"""The slips real 2-D sincos code makes, each as the table it computes instead of the declared one.

A slip is named only when its table explains every table the run holds, each element
within the bound of the dtype it came in (:func:`explained`), and differs from the declared
table on at least one of them (a slip that changes nothing on the run's grids is not seen).
Slips a declaration can state (another ``first_axis``, ``token_order``, ``first`` function,
base, denominator, position parameter) are members of the family and carry the keys that
declare them; the others (positions normalised by the other axis's length, linspace
positions, an uncentred crop, positions rounded to float16, the class row appended) are
tables no key declares.

Positions are affine in the index along each axis: ``p(i) = a(L) i + b(L)`` for an axis of
length ``L`` (:func:`affine`), so a slip that reads the other axis's length, or drops the
crop's offset, is a change of ``a`` or ``b``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import oracle
from .conventions import AXES, OUTPUT_LAYOUTS, TOKEN_ORDERS, Sincos2d

OTHER_BASES = (10.0, 20.0, 100.0, 1000.0, 10000.0, 100000.0)


def affine(conv: Sincos2d, length: int) -> tuple[float, float]:
    """``(a, b)`` of ``p(i) = a i + b`` on an axis of ``length`` under ``conv``'s transform."""
    if conv.position == "index":
        return conv.scale, conv.scale * conv.offset
    if conv.position == "relative":
        return conv.base_size / (length * conv.interpolation_scale), 0.0
    if conv.position == "crop":
        step = conv.base_size / (conv.max_size * conv.interpolation_scale)
        return step, (conv.max_size - length) // 2 * step
    step = conv.scale / (length + conv.eps)
    return step, step * (1 + conv.offset)


def table_at(conv: Sincos2d, height: int, width: int, dim: int, positions=None,
             extra_last: bool = False) -> np.ndarray:
    """``conv``'s table in float64 at ``positions`` (the row's and the column's; default the
    declared ones), with the extra rows last (``extra_last``)."""
    rows, cols = positions if positions is not None else (conv.positions(height), conv.positions(width))
    per_axis = tuple(oracle.axis_values(p, dim, conv, axis)[0] for axis, p in enumerate((rows, cols)))
    table = conv.arrange(oracle.assemble(per_axis, dim, conv))
    return np.roll(table, -conv.extra_tokens, axis=0) if extra_last and conv.extra_tokens else table


def _bfloat16(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to bfloat16 (to nearest, ties to even), as float64."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


@dataclass(frozen=True)
class Slip:
    """One slip: ``slips`` (ids of :data:`.keys.SLIPS`), ``says`` what the tables are, and
    either ``member`` (the convention the code computes, which keys can declare) or ``make``
    (``(H, W, D) -> table`` in the declared layout, for a table no key declares)."""

    slips: tuple[str, ...]
    says: str
    member: Sincos2d | None = None
    make: Callable | None = None

    def table(self, conv: Sincos2d, height: int, width: int, dim: int) -> np.ndarray:
        if self.member is not None:
            return oracle.table(height, width, dim, self.member)
        return self.make(height, width, dim)


def _member_slips(conv: Sincos2d) -> list[Slip]:
    """The slips whose tables are members of the family."""
    other_axis = AXES[1 - conv.first]
    other_order = TOKEN_ORDERS[1 - TOKEN_ORDERS.index(conv.token_order)]
    made = [Slip(("axes-swapped",), f"the {conv.first_axis} coordinate in the second half and the {other_axis} "
                                    "coordinate in the first (meshgrid's argument order)",
                 conv.replace(first_axis=other_axis)),
            Slip(("sin-cos-swapped",), "cos where sin belongs and sin where cos does",
                 conv.replace(first_function="cos" if conv.first_function == "sin" else "sin"))]
    if conv.output_layout == "tokens":
        made += [
            Slip(("flatten-transposed",), f"tokens flattened {other_order} where {conv.token_order} is declared",
                 conv.replace(token_order=other_order)),
            Slip(("axes-swapped", "flatten-transposed"), "the grid built for W x H and read as H x W (height and "
                                                         "width swapped in the call)",
                 conv.replace(first_axis=other_axis, token_order=other_order))]
    if conv.pairing == "concat":
        made.append(Slip(("grouping",), "grouped " + ("by axis" if conv.grouping == "by-function" else
                                                     "by function, [sin A | sin B | cos A | cos B]"),
                         conv.replace(grouping="by-axis" if conv.grouping == "by-function" else "by-function")))
    if conv.grouping == "by-axis":
        made.append(Slip(("layout",), ("concatenated" if conv.pairing == "interleaved" else "interleaved")
                         + " sin/cos pairs", conv.replace(pairing="interleaved" if conv.pairing == "concat"
                                                          else "concat")))
    shift = 1 - conv.freq_shift
    made.append(Slip(("denominator-quarter-dim-minus-one" if shift else "denominator-quarter-dim",),
                     f"the exponent over D/4{' - 1' if shift else ''}", conv.replace(freq_shift=shift)))
    if conv.row_base != conv.col_base:
        made.append(Slip(("bases-crossed",), "the row's and the column's bases crossed",
                         conv.replace(row_base=conv.col_base, col_base=conv.row_base)))
    made += [Slip(("base",), f"base {base:g}", conv.replace(row_base=base, col_base=base))
             for base in OTHER_BASES if {base} != {conv.row_base, conv.col_base}]
    return made + _position_members(conv) + _layout_members(conv)


_SHAPES = {"tokens": "(N, D) tokens", "channels-first": "(D, H, W), channels first", "grid": "(H, W, D), channels last"}


def _layout_members(conv: Sincos2d) -> list[Slip]:
    """The table in another output layout (a permute left out or added): the array has the
    other layout's shape, its values in that layout's order."""
    if conv.extra_tokens:
        return []  # only tokens have rows besides the grid's
    return [Slip(("output-layout",), f"the table returned {_SHAPES[other]} where {_SHAPES[conv.output_layout]} is "
                                     "declared", conv.replace(output_layout=other))
            for other in OUTPUT_LAYOUTS if other != conv.output_layout]


def _twice(scale: float) -> bool:
    """Whether a scale applied twice is still a normal float64 (a member the slips can hold)."""
    return math.isfinite(scale * scale) and abs(scale * scale) >= sys.float_info.min


def _position_members(conv: Sincos2d) -> list[Slip]:
    made = []
    if conv.position in ("relative", "crop") and conv.interpolation_scale != 1:
        scale = conv.interpolation_scale
        if _twice(scale):
            made.append(Slip(("scale-twice",), f"the interpolation scale {scale:g} applied twice",
                             conv.replace(interpolation_scale=scale * scale)))
        made.append(Slip(("scale-dropped",), f"the interpolation scale {scale:g} left out",
                         conv.replace(interpolation_scale=1.0)))
    if conv.position in ("index", "normalized") and conv.scale != 1:
        if _twice(conv.scale):
            made.append(Slip(("scale-twice",), f"the scale {conv.scale:g} applied twice",
                             conv.replace(scale=conv.scale * conv.scale)))
        made.append(Slip(("scale-dropped",), f"the scale {conv.scale:g} left out", conv.replace(scale=1.0)))
    if conv.position in ("index", "normalized"):
        made += [Slip(("positions-offset",), f"positions offset by {step:+g}", conv.replace(offset=conv.offset + step))
                 for step in (1.0, -1.0, 0.5, -0.5)]
    if conv.position == "normalized":
        made.append(Slip(("positions-unnormalised",), "positions 1 .. L, not normalised",
                         conv.replace(position="index", offset=1.0 + conv.offset, scale=1.0)))
    return made


class _Positions:
    """The positions ``(rows, columns)`` a slip forms for an ``H x W`` grid, each a function of
    ``(height, width)``."""

    def __init__(self, conv: Sincos2d):
        self.conv = conv

    def declared(self, height, width):
        return self.conv.positions(height), self.conv.positions(width)

    def lengths(self, which):
        """Each axis's positions formed with the length of axis ``which[axis]``."""
        def positions(height, width):
            lengths = (height, width)
            return tuple(_affine_positions(lengths[axis], *affine(self.conv, lengths[which[axis]]))
                         for axis in (0, 1))
        return positions

    def linspace(self, height, width):
        end = self.conv.base_size / self.conv.interpolation_scale
        return tuple(np.linspace(0.0, end, length) for length in (height, width))

    def uncentred(self, height, width):
        return tuple(_affine_positions(length, affine(self.conv, length)[0], 0.0) for length in (height, width))

    def rounded(self, rounding):
        return lambda height, width: tuple(rounding(p) for p in self.declared(height, width))


def _affine_positions(length: int, a: float, b: float) -> np.ndarray:
    return a * np.arange(length, dtype=np.float64) + b


def _float16(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).astype(np.float64)


def _table_slips(conv: Sincos2d) -> list[Slip]:
    """The slips whose tables no key declares."""
    def at(positions_of, **options):
        return lambda height, width, dim: table_at(conv, height, width, dim, positions_of(height, width), **options)

    positions = _Positions(conv)
    made = []
    if conv.position != "index":
        lengths = ("the height", "the width")
        made += [Slip(("normalised-by-other-axis",), f"the row positions formed with {lengths[rows]} and the "
                                                     f"column positions with {lengths[cols]}",
                      make=at(positions.lengths((rows, cols)))) for rows, cols in ((1, 0), (0, 0), (1, 1))]
    if conv.position == "relative":
        made.append(Slip(("positions-linspace",), "positions from linspace(0, base_size / interpolation_scale, L), "
                                                  "spaced L/(L-1) times too far apart", make=at(positions.linspace)))
    if conv.position == "crop":
        made.append(Slip(("crop-not-centred",), "the crop taken from the max-size table's top-left corner",
                         make=at(positions.uncentred)))
    made += [Slip(("positions-float16",), "positions rounded to float16", make=at(positions.rounded(_float16))),
             Slip(("positions-bfloat16",), "positions rounded to bfloat16", make=at(positions.rounded(_bfloat16)))]
    if conv.extra_tokens:
        made.append(Slip(("extra-tokens-appended",), f"the {conv.extra_tokens} extra row(s) after the grid's tokens",
                         make=at(positions.declared, extra_last=True)))
    return made


def candidates(conv: Sincos2d) -> list[Slip]:
    """Every slip of the declared convention, members first."""
    return _member_slips(conv) + _table_slips(conv)


def narrow_output(conv: Sincos2d, kept: list) -> tuple[tuple[str, ...], str] | None:
    """``(slips, words)`` when every kept table (``(H, W, D, table, dtype)``) is the declared
    table rounded once to float16 (or bfloat16) and returned wider: each value a number of that
    type, within the declared bound for that type's output; None otherwise (a table computed
    in float16, its angles too, is :func:`narrow_angles`')."""
    from posenc_spec.gate.narrow import NARROW, held_throughout
    from posenc_spec.tolerance import unit_roundoff

    from .tolerance import grid_tolerance

    for narrow in NARROW:
        for height, width, dim, table, dtype in kept:
            if unit_roundoff(dtype) >= unit_roundoff(narrow) or not held_throughout(table, narrow):
                break
            try:
                values, _ = conv.ungrid(table, height, width)
            except ValueError:  # another shape
                break
            bound = grid_tolerance(height, width, dim, conv, narrow)
            if not np.all(np.abs(values - oracle.grid(height, width, dim, conv)) <= bound):
                break
        else:
            return (f"output-{narrow}",), (f"every value is a {narrow} number: the table was stored in {narrow} "
                                           "and returned wider; keep it in float32 or wider")
    return None


def narrow_angles(conv: Sincos2d, kept: list) -> tuple[tuple[str, ...], str] | None:
    """``(slips, words)`` when the angles were formed in float16 or bfloat16 (positions,
    frequencies and their product in that type, as DETR's module does in the model's dtype):
    every element of the kept tables (``(H, W, D, table, dtype)``) that fails the declared
    bound is the sine or cosine of a number of that type within the angle error
    :mod:`.tolerance` allows arithmetic in it, and enough of them tell a rounded angle from
    any other small error (:mod:`posenc_spec.gate.narrow`); None otherwise. No key declares it."""
    from posenc_spec.gate.narrow import MIN_TELLING, NARROW, rounded_angle_evidence, sampled

    from .tolerance import OMEGA_ROUNDINGS, POSITION_ROUNDINGS, PRODUCT_ROUNDINGS, grid_tolerance

    read = []
    for height, width, dim, table, dtype in kept:
        try:
            values, _ = conv.ungrid(table, height, width)
        except ValueError:  # another shape: no angle to read
            return None
        exact = oracle.grid(height, width, dim, conv)
        failing = np.flatnonzero(np.abs(values - exact).ravel() > grid_tolerance(height, width, dim, conv,
                                                                                 dtype).ravel())
        if failing.size:
            theta, x = oracle.angle_grid(height, width, dim, conv)
            where = sampled(failing)
            relative = 2 * np.abs(np.broadcast_to(x, theta.shape).ravel()[where]) + OMEGA_ROUNDINGS \
                + PRODUCT_ROUNDINGS + POSITION_ROUNDINGS[conv.position]
            read.append((theta.ravel()[where], relative, exact.ravel()[where], values.ravel()[where], dtype))
    if not read:
        return None
    for narrow in NARROW:
        telling = 0
        for theta, relative, exact, values, dtype in read:
            found = rounded_angle_evidence(theta, relative, exact, values, narrow, dtype)
            if found is None:
                break
            telling += found
        else:
            if telling >= MIN_TELLING:
                return (f"angle-{narrow}",), (f"the angles formed in {narrow} (positions, frequencies and their "
                                              f"product): each wrong value is the sine or cosine of a {narrow} "
                                              "number near its angle; form the angles in float32 or wider")
    return None
