"""The corpus registry: every implementation in the corpus, with what the gate is told about it.

Each corpus function is registered by a decorator that states the convention it claims
(a preset name plus overridden fields), its calling shape (``table`` or ``timesteps``),
how it handles odd widths, and a one-line description. Wrong entries also name the bug
classes they belong to and, where one was found, a public place the same bug was seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc_spec.families.sinusoidal.conventions import Convention, get_convention
from posenc_spec.families.sinusoidal.keys import NAMES
from posenc_spec.families.sinusoidal.spec import ODD_CHOICES

from .entry import CorpusEntry

APIS = NAMES.apis

# The bug classes of issue 6, each with the words the issue uses for it.
BUG_CLASSES: dict[str, str] = {
    "swapped-functions": "swapped or duplicated sin/cos",
    "exponent": "wrong exponent (i/d, 2i/d per column, (2i+1)/d, wrong divisor or shift)",
    "base": "wrong base or logarithm",
    "sign": "sign error",
    "integer-division": "integer division",
    "precedence": "operator precedence",
    "off-by-one": "off-by-one positions",
    "reversed-clamped": "reversed or clamped positions",
    "layout": "transposed or mis-stacked table",
    "broadcast": "broadcast slip",
    "float16-positions": "positions in float16 (wrong above 2048)",
    "bfloat16-positions": "positions in bfloat16 (wrong above 256)",
    "low-precision": "other low-precision arithmetic (angle or frequencies in float16/bfloat16)",
    "channel-wrap": "a channel index that wraps",
    "odd-width": "odd-width slip (drops a column, d-1 or d+1 columns, padded sequence axis, wrong odd formula)",
    "degenerate": "NaN at d = 2 under shift 1",
    "noise": "noise added to the table",
    "clipping": "values clipped",
    "rescaling": "values or arguments rescaled",
    "near-tolerance": "error close to the tolerance",
    "long-lengths": "shows only at long lengths",
    "wide-tables": "shows only in wide tables",
    "small-widths": "shows only at small widths",
    "determinism": "two calls give different tables",
    "global-state": "the call changes global state",
}


@dataclass(frozen=True)
class Entry(CorpusEntry):
    """One corpus implementation and its declaration to the gate."""

    id: str
    module: str
    kind: str  # "wrong" or "correct"
    preset: str
    overrides: tuple[tuple[str, object], ...]
    api: str
    odd: str
    description: str
    seen_in: str = ""
    bug_classes: tuple[str, ...] = ()
    t_max: float = 1000.0
    max_positions: int | None = None

    @property
    def skip_odd(self) -> bool:
        return self.odd == "skip"

    @property
    def convention(self) -> Convention:
        """The declared convention: the preset, its overrides, and the odd behaviour unless 'skip'."""
        fields = dict(self.overrides)
        if not self.skip_odd:
            fields["odd"] = self.odd
        return get_convention(self.preset, **fields)

    def describe(self) -> str:
        """The declaration in one line (the name RopeEntry.describe shares)."""
        parts = [self.preset] + [f"{key}={value}" for key, value in self.overrides]
        return ", ".join(parts) + f"; odd {self.odd}; api {self.api}"

    def config_table(self) -> dict:
        """This entry as one ``[[targets]]`` table of a ``check --config`` file."""
        table = {"target": self.target, "convention": self.preset, **dict(self.overrides), "odd": self.odd,
                 "api": self.api, "t_max": self.t_max}
        if self.max_positions is not None:
            table["max_positions"] = self.max_positions
        return table



ENTRIES: list[Entry] = []


def _register(function, kind, *, convention, api, odd, description, seen_in, bug_classes, t_max, max_positions,
              overrides):
    if api not in APIS:
        raise ValueError(f"{function.__name__}: api must be one of {APIS}, got {api!r}")
    if odd not in ODD_CHOICES:
        raise ValueError(f"{function.__name__}: odd must be one of {ODD_CHOICES}, got {odd!r}")
    unknown = set(bug_classes) - set(BUG_CLASSES)
    if unknown:
        raise ValueError(f"{function.__name__}: unknown bug classes {sorted(unknown)}")
    entry = Entry(id=function.__name__, module=function.__module__, kind=kind, preset=convention,
                  overrides=tuple(sorted(overrides.items())), api=api, odd=odd,
                  description=" ".join(description.split()), seen_in=" ".join(seen_in.split()),
                  bug_classes=tuple(bug_classes), t_max=float(t_max), max_positions=max_positions)
    entry.convention  # noqa: B018 -- validates the declaration at import time
    ENTRIES.append(entry)
    return function


def wrong(*, bug: str, classes: tuple[str, ...], convention: str = "vaswani", api: str = "table",
          odd: str = "error", seen: str = "", t_max: float = 1000.0, max_positions: int | None = None,
          **overrides):
    """Register a wrong implementation: ``bug`` says what is wrong, ``classes`` which bug classes it shows."""
    def decorate(function):
        return _register(function, "wrong", convention=convention, api=api, odd=odd, description=bug,
                         seen_in=seen, bug_classes=classes, t_max=t_max, max_positions=max_positions,
                         overrides=overrides)
    return decorate


def correct(*, idiom: str, convention: str, api: str = "table", odd: str = "error", seen: str = "",
            t_max: float = 1000.0, max_positions: int | None = None, **overrides):
    """Register a correct implementation: ``idiom`` says how it computes the table."""
    def decorate(function):
        return _register(function, "correct", convention=convention, api=api, odd=odd, description=idiom,
                         seen_in=seen, bug_classes=(), t_max=t_max, max_positions=max_positions,
                         overrides=overrides)
    return decorate
