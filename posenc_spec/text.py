"""One rule for putting any text, or an exception, on one line of a report (standard
library only: the gate's child processes and templates use it too)."""

from __future__ import annotations


def one_line(text, limit: int | None = None) -> str:
    """``text`` (anything ``str`` accepts) with its whitespace runs made single spaces,
    shortened to ``limit`` characters with "..." where it is longer."""
    line = " ".join(str(text).split())
    return line if limit is None or len(line) <= limit else line[: limit - 3] + "..."


MESSAGE_LIMIT = 300  # characters of an exception's message a child reports


def describe_exception(error: BaseException) -> str:
    """``raised TYPE: message`` on one line (``called sys.exit(CODE)`` for SystemExit), even
    for an exception whose ``__str__`` raises."""
    if isinstance(error, SystemExit):
        return f"called sys.exit({one_line(repr(error.code), 60)})"
    try:
        message = one_line(error, MESSAGE_LIMIT)
    except Exception:  # an exception whose __str__ raises
        message = ""
    return f"raised {type(error).__name__}" + (f": {message}" if message else "")
