"""A hint: the slip a failing target's own tables show, in the words of the code that makes it.

A hint is named only when the tables the run holds show it (:mod:`.slips` for sinusoidal
tables, :mod:`.rope_slips` for rotary embeddings); it says what the tables are, which slip
makes them so, and, when the code computes something a declaration can state, the flags and
the keys that declare it, for the case where it was meant.

``slips`` are stable ids (one, or several when the tables cannot tell them apart, each
a possible cause); every report format writes the same :meth:`Hint.text`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import toml_text

# Every slip a hint can name, with the words of docs/checks.md's list, "The slips a hint names".
SLIPS = {
    "sin-cos-swapped": "sin and cos swapped",
    "exponent-i-over-d": "`i/d` written where the formula has `2i/d`",
    "denominator-half-dim-minus-one": "`half_dim - 1` where the declared convention has `half_dim` (`d/2`)",
    "denominator-half-dim": "`half_dim` where the declared convention has `half_dim - 1`",
    "denominator-d-minus-one": "`d - 1` where the formula has `d`",
    "exponent-over-length": "the exponent divided by the number of positions instead of the width",
    "precedence-half-dim-minus-one": "`log(base) / half_dim - 1` where `log(base) / (half_dim - 1)` belongs",
    "positions-float16": "positions formed in float16 (rounded)",
    "positions-bfloat16": "positions formed in bfloat16 (rounded)",
    "positions-reversed": "positions counted down from the end",
    "positions-linspace": "positions from linspace, spaced n/(n-1) apart",
    "positions-offset": "positions shifted (off by one)",
    "positions-ignored": "the positions passed are ignored",
    "columns-reversed": "the columns in reverse order",
    "values-scaled": "every value multiplied by one factor (a scaling applied to the table)",
    "positions-clamped": "positions clamped to a buffer's last row",
    "positions-wrapped": "positions wrapped around a buffer's length",
    "layout": "interleaved and concatenated (`[sin | cos]`) columns mixed up",
    "rope-layout": "rotate-half and interleaved pairs mixed up",
    "cache-layout": "the cache's half and interleaved column orders mixed up",
    "base": "the base (theta) off",
    "log10-for-ln": "`log10` where the natural logarithm belongs",
    "log2-for-ln": "`log2` where the natural logarithm belongs",
    "theta": "rope_theta off",
    "angle-sign": "the angle's sign flipped",
    "scale": "the positions scaled",
    "scale-twice": "a scaling factor applied twice",
    "scale-dropped": "a scaling factor dropped",
    "scaling-type-dropped": "the scaling type (rope_type) not applied",
    "scaling-factor": "the scaling factor off",
    "partial-rotary-ignored": "the partial rotary factor ignored",
    "exponent-over-head-dim": "the exponent divided by head_dim where the rotary size belongs",
    "exponent-over-rotary-dim": "the exponent divided by the rotary size where head_dim belongs",
    "attention-factor-missing": "the attention factor missing",
    "attention-factor-twice": "the attention factor applied twice",
    "attention-factor-cos-only": "the attention factor applied to cos only",
    "attention-factor": "the attention factor off",
}


@dataclass(frozen=True)
class Hint:
    """One diagnosis: ``slips`` (ids of :data:`SLIPS`), ``message`` what the tables show and
    why, ``declare`` the keys that declare it (empty when no key can)."""

    slips: tuple[str, ...]
    message: str
    declare: tuple = ()  # (key, value) pairs, in the order they are written

    def __post_init__(self):
        unknown = [slip for slip in self.slips if slip not in SLIPS]
        if unknown or not self.slips:
            raise ValueError(f"a hint names known slips, got {self.slips!r}")

    @property
    def flags(self) -> str:
        return toml_text.flags(dict(self.declare)) if self.declare else ""

    @property
    def keys(self) -> str:
        return toml_text.assignments(dict(self.declare)) if self.declare else ""

    def text(self) -> str:
        """The message and, when a key declares it, the flags and keys to paste if it was meant."""
        if not self.declare:
            return self.message
        return f"{self.message}; if that is intended, declare {self.flags} ({self.keys})"

    def as_dict(self) -> dict:
        return {"slips": list(self.slips), "text": self.text(), "flags": self.flags or None,
                "keys": self.keys or None}
