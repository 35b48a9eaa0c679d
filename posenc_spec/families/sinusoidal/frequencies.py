"""Slips in a sinusoidal table's frequencies or angles that make no member of the family: each
a definite table, the declared formula with every column's frequency (or angle) made the
slip's way, that every table of the run must match within the bound of its own angles
(:mod:`.tolerance`'s, at the slip's angles: a false hint is a false alarm).

- ``exponent-column-index``: each column's own index ``j`` where its pair's index belongs
  (``10000 ** (2j/d)`` for every column, or a loop over even ``i`` writing ``2i/d`` and
  ``2(i+1)/d``: the same table), so the sine and the cosine of a pair differ;
- ``exponent-column-half-index``: each column at ``j/d`` (the cosines from ``arange(1, d, 2)/d``);
- ``exponent-sign-dropped``: ``base ** +e`` where ``base ** -e`` belongs (frequencies that grow);
- ``exponent-integer-division``: the exponent taken by integer division (``2i // d``: 0),
  every frequency 1;
- ``precedence-power``: ``pos / base ** 2 * 2i / d``, the power and the product unbracketed;
- ``channel-index-uint8``: the pair index held in uint8, wrapping at 256;
- ``angle-floored``: ``pos // timescale`` where ``/`` belongs (the angle rounded down).
"""

from __future__ import annotations

import numpy as np

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import Convention
from posenc_spec.families.sinusoidal.tolerance import angle_term, tolerance_from_term

UINT8_VALUES = 256


def made_table(declared: Convention, table, column_omega_of, angle_of=None) -> tuple[np.ndarray, np.ndarray]:
    """``(values, bound)``: the declared formula at ``table``'s rows with each column's
    frequency ``column_omega_of(conv, width, columns)`` (and the angles mapped by ``angle_of``),
    and the bound of a correct table of those angles in ``table``'s dtype."""
    conv = declared.for_width(table.width)
    columns = conv.columns(table.width)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        column_omega = np.where(columns.is_zero, 0.0, column_omega_of(conv, table.width, columns))
        theta = conv.scale * (conv.positions(table.judged_at) + conv.offset)[:, None] * column_omega[None, :]
        if angle_of is not None:
            theta = angle_of(theta)
        log_omega = np.where(columns.is_zero | (column_omega <= 0), 0.0,
                             -np.log(np.where(column_omega > 0, column_omega, 1.0)))
    values = oracle.table_from_angles(theta, columns, conv.first)
    return values, tolerance_from_term(angle_term(theta, log_omega), table.sample.dtype)


def by_pair(omega_of):
    """A column frequency rule from a rule per pair (``omega_of(conv, width)``, pair by pair)."""
    return lambda conv, width, columns: omega_of(conv, width)[np.maximum(columns.pair, 0)]


def explains(declared: Convention, tables: list, column_omega_of, angle_of=None) -> bool:
    """Whether every table is the made table within its bound."""
    for table in tables:
        values, bound = made_table(declared, table, column_omega_of, angle_of)
        if not np.all(np.abs(table.sample.table - values) <= bound):
            return False
    return True


def _step(conv: Convention, width: int) -> float:
    numerator, denominator = conv.exponent_step(width)
    return numerator / denominator


def _column_exponent(share: float):
    """Each column ``j`` at ``share * j`` pair steps (1: its own index; 0.5: ``j/d``)."""
    def omega(conv, width, columns):
        return conv.base ** -(share * np.arange(columns.pair.size) * _step(conv, width))
    return omega


def _pairs(rule):
    return by_pair(lambda conv, width: rule(conv, width, conv.exponents(width)))


RULES = (
    ("exponent-column-index", "each column's own index in the exponent where its pair's belongs "
                              "(`base ** (2j/d)` for column j): the sine and the cosine of a pair differ",
     _column_exponent(1.0), None),
    ("exponent-column-half-index", "each column j at `j/d` (the cosines' exponents from `arange(1, d, 2) / d`, "
                                   "`(2i+1)/d`, where the pair's `2i/d` belongs)", _column_exponent(0.5), None),
    ("exponent-sign-dropped", "the exponent's minus sign dropped: `base ** e` where `base ** -e` belongs, "
                              "frequencies that grow",
     _pairs(lambda conv, width, e: conv.base ** e), None),
    ("exponent-integer-division", "the exponent taken by integer division (`2i // d`, always 0): every frequency 1",
     _pairs(lambda conv, width, e: conv.base ** -np.floor(e)), None),
    ("precedence-power", "parentheses missing: `pos / base ** 2 * 2i / d` where `pos / base ** (2i / d)` belongs",
     _pairs(lambda conv, width, e: e / conv.base ** 2), None),
    ("channel-index-uint8", f"the pair index held in uint8: it wraps at {UINT8_VALUES}, so tables wider than "
                            f"{2 * UINT8_VALUES} repeat their highest frequencies",
     _pairs(lambda conv, width, e: conv.base ** -(np.mod(np.arange(e.size), UINT8_VALUES) * _step(conv, width))),
     None),
    ("angle-floored", "`pos // timescale` where `/` belongs: every angle rounded down to an integer",
     by_pair(lambda conv, width: conv.frequencies(width)), np.floor),
)


def frequency_slip(declared: Convention, tables: list) -> tuple[str, str] | None:
    """``(slip, words)`` of the first rule whose table is every table of the run (a failing
    one among them), or None."""
    if not any(table.failed for table in tables):
        return None
    for slip, words, column_omega_of, angle_of in RULES:
        if explains(declared, tables, column_omega_of, angle_of):
            return slip, words
    return None
