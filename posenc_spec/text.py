"""One rule for putting any text on one line of a report (standard library only: the
gate's child processes use it too)."""

from __future__ import annotations


def one_line(text, limit: int | None = None) -> str:
    """``text`` (anything ``str`` accepts) with its whitespace runs made single spaces,
    shortened to ``limit`` characters with "..." where it is longer."""
    line = " ".join(str(text).split())
    return line if limit is None or len(line) <= limit else line[: limit - 3] + "..."
