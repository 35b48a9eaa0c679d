"""The validators every value a user types goes through: numbers, integers, choices.

Each failure is a :class:`~posenc_spec.gate.errors.UsageError` of one line, ``NAME must be
WHAT, got VALUE`` (with a close match for a mistyped choice); ``NAME`` says where the
value came from (a flag, a key of a file). Text such as ``"1e12"`` from the command line
is parsed first, so that a flag and the same key typed in TOML give the same message.
"""

from __future__ import annotations

import difflib
import math
import sys

from .errors import UsageError

MAX_INT = 2**63 - 1
# The smallest normal float64: a non-zero number below it is subnormal, held with fewer
# significant bits than any table is judged at, and its reciprocal overflows.
SMALLEST_NORMAL = sys.float_info.min


SHOWN_CHARACTERS = 200  # of a refused value: a message stays one readable line


def shown(value) -> str:
    """``repr(value)`` for a message, at most :data:`SHOWN_CHARACTERS` long; never raises (an
    object whose ``__repr__`` raises, an int of more digits than Python converts, are named
    by their type and size)."""
    if type(value) is int and value.bit_length() > 1024:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
        if type(text) is not str:
            raise TypeError
    except Exception:  # a caller's object whose repr raises or lies
        return f"<{type(value).__name__} object>"
    return text if len(text) <= SHOWN_CHARACTERS else f"{text[:SHOWN_CHARACTERS - 3]}..."


def plain(value):
    """``value`` as its built-in type when it is of a subclass of int, float or str (whose
    methods a caller may have replaced), else as it is."""
    if type(value) in (bool, int, float, str):
        return value
    for kind, exact in ((int, int.__int__), (float, float.__float__), (str, str.__str__)):
        if isinstance(value, kind):
            return exact(value)
    return value


def fail(name, problem, value):
    raise UsageError(f"{name} must be {problem}, got {shown(value)}")


def number(name: str, value, *, minimum=None, above=None, maximum=None, nonzero=False) -> float | int:
    """A finite number (an int stays an int); text such as ``"1e12"`` is parsed first."""
    parsed = value = plain(value)
    if isinstance(value, str):
        try:
            parsed = int(value)
        except ValueError:
            try:
                parsed = float(value)
            except ValueError:
                fail(name, "a number", value)
    if isinstance(parsed, bool) or not isinstance(parsed, (int, float)) or not _finite_float(parsed):
        fail(name, "a finite number", value)
    if parsed != 0 and abs(parsed) < SMALLEST_NORMAL:
        fail(name, f"{'' if nonzero else '0 or '}a number of magnitude at least {SMALLEST_NORMAL:.4g} (a subnormal "
                   "one loses precision)", value)
    if above is not None and not parsed > above:
        fail(name, f"a number greater than {above:g}", value)
    if minimum is not None and parsed < minimum:
        fail(name, f"a number of at least {minimum:g}", value)
    if maximum is not None and parsed > maximum:
        fail(name, f"a number of at most {maximum:g}", value)
    if nonzero and parsed == 0:
        fail(name, "a non-zero number", value)
    return parsed


def _finite_float(number) -> bool:
    """Whether ``number`` is finite as a float (an int of 400 digits is not)."""
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def integer(name: str, value, *, minimum: int = 1, maximum: int = MAX_INT) -> int:
    parsed = value = plain(value)
    if isinstance(value, str):
        try:
            parsed = int(value)
        except ValueError:
            fail(name, "an integer", value)
    if isinstance(parsed, bool) or not isinstance(parsed, int):
        fail(name, "an integer", value)
    if not minimum <= parsed <= maximum:
        fail(name, f"an integer from {minimum} to {maximum}", value)
    return parsed


def boolean(name: str, value) -> bool:
    """True or False; the command line's text ``true`` / ``false`` too."""
    value = plain(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    fail(name, "true or false", value)


def choice(name: str, value, choices):
    value = plain(value)
    known = type(value) in (bool, int, float, str)  # never an object's own __eq__
    for option in choices if known else ():
        if value == option or (isinstance(value, str) and isinstance(option, int) and value == str(option)):
            return option
    close = difflib.get_close_matches(str(value), [str(option) for option in choices], n=1) if known else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UsageError(f"{name} must be one of {', '.join(map(str, choices))}, got {shown(value)}{hint}")
