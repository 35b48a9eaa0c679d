"""A hint: the slip a failing target's own tables show, in the words of the code that makes it.

A hint is named only when the values the run holds show it (each family's hints say
which); it says what the tables are, which slip
makes them so, and, when the code computes something a declaration can state, the flags and
the keys that declare it, for the case where it was meant.

``slips`` are stable ids (one, or several when the tables cannot tell them apart, each
a possible cause); every report format writes the same :meth:`Hint.text`.
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc_spec import registry

from . import toml_text

# Every slip a hint can name: the families' (posenc_spec.gate.family.FamilyKeys.slips), in
# the words of docs/checks.md's list, "The slips a hint names".
# The slips any family's values can show (named by posenc_spec.gate.advice, not by a family).
PLAIN_SLIPS = {
    "values-all-zero": "every value zero (a table never filled)",
    "values-constant": "every value one constant",
    "values-nan": "NaN among the values (a 0/0, a log of zero, inf - inf)",
}
SLIPS = {**PLAIN_SLIPS, **{slip: words for names in registry.names() for slip, words in names.slips.items()}}


# How a user writes declaration keys, by where the declaration came from (Declaration.spelling).
SPELLINGS = ("flags", "plugin", "toml", "python")


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

    @property
    def keywords(self) -> str:
        """The keys as ``posenc_spec.check``'s keyword arguments: ``base=100``."""
        return toml_text.keywords(dict(self.declare)) if self.declare else ""

    def advice(self, spelling: str | None = None) -> str:
        """The keys to declare, spelled as the user writes them (:data:`SPELLINGS`: ``flags`` on
        the command line, ``plugin`` as the pytest plugin's ``--posenc-*`` flags, ``toml`` in a
        file, ``python`` for ``posenc_spec.check``; None: the flags, then the TOML keys in
        parentheses, for a report read anywhere)."""
        if spelling is None:
            return f"{self.flags} ({self.keys})"
        return toml_text.spelled(dict(self.declare), spelling) if self.declare else ""

    def text(self, spelling: str | None = None) -> str:
        """The message, when a key declares it the keys to declare if it was meant (spelled as
        :meth:`advice` says), and the slips' ids (those the JSON's ``slips`` lists and
        docs/checks.md explains)."""
        named = f"slip{'s' if len(self.slips) > 1 else ''}: {', '.join(self.slips)}"
        if not self.declare:
            return f"{self.message} ({named})"
        return f"{self.message}; if that is intended, declare {self.advice(spelling)} ({named})"

    def without_advice(self) -> Hint:
        """The same diagnosis with no keys to declare (where declaring them cannot make the target conform)."""
        return Hint(self.slips, self.message)

    def as_dict(self) -> dict:
        return {"slips": list(self.slips), "text": self.text(), "flags": self.flags or None,
                "keys": self.keys or None, "keywords": self.keywords or None,
                "declare": dict(self.declare) or None}
