"""One rule for putting any text, or an exception, on one line of a report, and one for
showing text on a terminal (standard library only: the gate's child processes and templates
use it too)."""

from __future__ import annotations

import re

# What a terminal or a log viewer acts on instead of showing: the C0 controls (line breaks,
# tabs and ESC, which starts every escape sequence, among them), DEL, the C1 controls (0x9b
# is a CSI, 0x9d an OSC), Unicode's line and paragraph separators, and the bidirectional
# marks, embeddings, overrides and isolates, which reorder the text around them.
TERMINAL_CONTROLS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNPRINTABLE = re.compile(f"[\\x00-\\x1f{TERMINAL_CONTROLS}]")


def escaped(character: str) -> str:
    """One character as its Python backslash escape (``\\x1b``, ``\\n``, ``\\u202e``)."""
    return character.encode("unicode_escape").decode("ascii")


def printable(text) -> str:
    """``text`` (anything ``str`` accepts) as a terminal shows it: each character of
    :data:`TERMINAL_CONTROLS` and each C0 control, a line break included, becomes its
    backslash escape, so nothing in it can move the cursor, colour, retitle or reorder
    what is printed around it."""
    return _UNPRINTABLE.sub(lambda match: escaped(match.group()), str(text))


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


def value_text(value) -> str:
    """A declared value as a message shows it: a float in its shortest form (``10000``, ``0.5``),
    anything else as ``str`` gives it."""
    return f"{value:g}" if isinstance(value, float) else str(value)
