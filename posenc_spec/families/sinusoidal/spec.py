"""A sinusoidal declaration: the preset, the fields that override it, odd widths, and how
``x`` is laid out for a module that adds its table to ``x``.

Keys::

    convention      a preset name (default "vaswani"); the next six keys override its fields
    layout          "interleaved" | "concat"
    first           "sin" | "cos"
    freq_shift      0 | 1
    base            finite, > 1
    offset          finite
    scale           finite, != 0
    odd             "error" | "zero-pad" | "ceil" | "skip"     (default "error")
    x_layout        the adds-to-x signature's x: "sbd" (default) | "bsd" | "sd"
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc_spec.families.sinusoidal.conventions import (
    FUNCTIONS,
    LAYOUTS,
    ODD_BEHAVIOURS,
    PRESETS,
    Convention,
    get_convention,
)
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import choice, fail, number
from posenc_spec.text import value_text

from .keys import CONVENTION_KEYS

ODD_CHOICES = (*ODD_BEHAVIOURS, "skip")
DEFAULT_PRESET = "vaswani"
ADDS_LAYOUTS = ("sbd", "bsd", "sd")


@dataclass(frozen=True)
class SinusoidalSpec:
    """The declared convention (``preset`` and its fields), whether odd widths are skipped,
    and, for the ``adds-to-x`` signature, the layout of ``x``."""

    convention: Convention
    preset: str = DEFAULT_PRESET
    skip_odd: bool = False
    x_layout: str | None = None

    @property
    def odd(self) -> str:
        return "skip" if self.skip_odd else self.convention.odd

    def describe(self) -> str:
        """The preset's name, with the fields that differ from it."""
        preset = PRESETS[self.preset]
        changed = [f"{key}={value_text(getattr(self.convention, key))}" for key in CONVENTION_KEYS
                   if getattr(self.convention, key) != getattr(preset, key)]
        return self.preset + (f" ({', '.join(changed)})" if changed else "")

    def as_dict(self) -> dict:
        return {**self.convention.as_dict(), "odd": self.odd}

    def header_parts(self) -> list[str]:
        return [self.describe(), f"odd={self.odd}"]

    def child_sizes(self) -> dict:
        return {}

    def child_options(self) -> dict:
        return {"x_layout": self.x_layout}


def declare(keys: dict, context) -> SinusoidalSpec:
    """The :class:`SinusoidalSpec` of ``keys`` (see the module docstring)."""
    name = context.name
    preset = choice(name("convention"), keys.get("convention", DEFAULT_PRESET), tuple(PRESETS))
    fields = {}
    if "layout" in keys:
        fields["layout"] = choice(name("layout"), keys["layout"], LAYOUTS)
    if "first" in keys:
        fields["first"] = choice(name("first"), keys["first"], FUNCTIONS)
    if "freq_shift" in keys:
        fields["freq_shift"] = choice(name("freq_shift"), keys["freq_shift"], (0, 1))
        if isinstance(keys["freq_shift"], bool):
            fail(name("freq_shift"), "0 or 1", keys["freq_shift"])
    if "base" in keys:
        fields["base"] = number(name("base"), keys["base"], above=1)
    if "offset" in keys:
        fields["offset"] = number(name("offset"), keys["offset"])
    if "scale" in keys:
        fields["scale"] = number(name("scale"), keys["scale"], nonzero=True)
    odd = choice(name("odd"), keys.get("odd", "error"), ODD_CHOICES)
    if odd != "skip":
        fields["odd"] = odd
    x_layout = None
    if context.calling.signature == "adds-to-x":
        x_layout = choice(name("x_layout"), keys.get("x_layout", ADDS_LAYOUTS[0]), ADDS_LAYOUTS)
    elif "x_layout" in keys:
        raise UsageError(f"{name('x_layout')}: the {context.api} API takes no x (the adds-to-x signature of the "
                         f"table API does)")
    try:
        return SinusoidalSpec(get_convention(preset, **fields), preset, odd == "skip", x_layout)
    except ValueError as error:
        raise UsageError(f"{name('convention')}: {error}") from None
