"""Reading a file a user names: a configuration, a ``pyproject.toml`` met while looking for
one, an xfails file, a RoPE ``config.json``, a shard's JSON report; and JSON a user gives
on the command line (:func:`parse_json`: ``--rope-param factor=8``).

Every reader goes through :func:`read_bytes`: the path is opened without blocking (a FIFO
with no writer would otherwise hang the gate), and only a regular file is read, at most
``max_bytes`` of it (``/dev/zero`` would otherwise fill the memory). TOML and JSON are
refused before they are parsed when they nest more than :data:`MAX_DEPTH` levels: the
parsers recurse once per bracket (a ``RecursionError``), and ``tomllib`` keeps every prefix
of a dotted key (``a.a.a...`` of n parts costs n**2 / 2 key parts of memory). Every problem
is a :class:`~posenc_spec.gate.errors.UsageError` of one line naming the file, and the line
where the parser or the decoder gives one.

Standard library only (no NumPy, no torch), so that any reader of a user's file can use it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import tomllib

from posenc_spec.text import one_line

from .errors import UsageError

MAX_DEPTH = 64  # levels of tables, arrays and dotted-key parts; a real configuration uses a handful
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_bytes(path, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; ``what`` names the file in
    messages ("xfails file"). Never blocks on a FIFO or a device: those are refused unread."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise UsageError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise UsageError(f"{path}: the {what} is {kind}, not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)  # a file that grows while it is read is bounded too
    except OSError as error:
        raise UsageError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if len(data) > max_bytes:
        raise UsageError(f"{path}: a {what} of more than {max_bytes} bytes")
    return data


def read_text(path, max_bytes: int, what: str) -> str:
    """The text of ``path`` (:func:`read_bytes`) as UTF-8; a byte-order mark is dropped."""
    data = read_bytes(path, max_bytes, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UsageError(f"{path}, line {line}: not UTF-8 text") from None


def read_toml(path, max_bytes: int, what: str) -> dict:
    """The TOML file ``path`` as a dict (:func:`read_text`); nested at most :data:`MAX_DEPTH`
    levels, counting the parts of dotted keys and table headers."""
    text = read_text(path, max_bytes, what)
    _refuse_nesting(path, toml_nesting(text))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:  # it says the line and column
        raise UsageError(f"{path}: not valid TOML: {one_line(error)}") from None
    except ValueError as error:
        raise UsageError(f"{path}: not valid TOML: {_digits(error)}") from None
    _refuse_nesting(path, data_depth(data))  # a header's parts, a key's and its value's, added up
    return data


def read_json(path, max_bytes: int, what: str):
    """The JSON file ``path`` (:func:`read_text`); nested at most :data:`MAX_DEPTH` levels."""
    return parse_json(read_text(path, max_bytes, what), path)


def parse_json(text: str, source):
    """``text`` parsed as JSON, nested at most :data:`MAX_DEPTH` levels: a file's text, or a
    value given on the command line; ``source`` names it in messages (the file, or the flag)."""
    _refuse_nesting(source, json_nesting(text))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{source}: not JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    except ValueError as error:
        raise UsageError(f"{source}: not JSON ({_digits(error)})") from None


def _digits(error: ValueError) -> str:
    """int()'s refusal of a number of more than 4300 digits, without its advice to the programmer."""
    return one_line(str(error).split(";")[0], 200)


def _refuse_nesting(source, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UsageError(f"{source}: nested more than {MAX_DEPTH} levels deep")


# -- nesting, measured before parsing ---------------------------------------------------------
# Strings and comments are cut out first (brackets and dots in them are text); a string that
# does not end is where the parser stops with its own error, so the scan stops there too.
# Each pattern below is anchored where its string starts and has no nested quantifier: it
# runs in time linear in what it reads.

_TOML_STRINGS = {
    '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""(?:""?)?', re.S),
    "'''": re.compile(r"'''(?:[^']|'(?!''))*'''(?:''?)?"),
    '"': re.compile(r'"(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"'[^'\n]*'"),
    "#": re.compile(r"#[^\n]*"),
}
_TOML_OPENING = re.compile(r'"""|\'\'\'|["\'#]')
_JSON_OPENING = re.compile('"')
_JSON_STRINGS = {'"': re.compile(r'"(?:[^"\\]|\\.)*"', re.S)}
_TOML_SEGMENT = re.compile(r"[\n\[\]{},=]")
_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _outside(text: str, opening: re.Pattern, patterns: dict) -> str:
    """``text`` without its strings and comments, up to the first that does not end."""
    pieces, position = [], 0
    while (start := opening.search(text, position)) is not None:
        pieces.append(text[position: start.start()])
        whole = patterns[start.group()].match(text, start.start())
        if whole is None:
            return "".join(pieces)
        pieces.append(" ")
        position = whole.end()
    pieces.append(text[position:])
    return "".join(pieces)


def _bracket_depth(text: str) -> int:
    steps = map(_STEP.__getitem__, _BRACKETS.sub("", text))
    return max(itertools.accumulate(steps, initial=0))


def toml_nesting(text: str) -> int:
    """An upper bound on the nesting of a TOML text, outside strings and comments: its deepest
    brackets (table headers count too), or the most dots between two of ``[ ] { } , =`` and
    the line ends (a dotted key's parts; a number or a date has at most one dot), the larger."""
    code = _outside(text, _TOML_OPENING, _TOML_STRINGS)
    dots = max((segment.count(".") for segment in _TOML_SEGMENT.split(code)), default=0)
    return max(_bracket_depth(code), dots)


def json_nesting(text: str) -> int:
    """The deepest brackets of a JSON text, outside its strings."""
    return _bracket_depth(_outside(text, _JSON_OPENING, _JSON_STRINGS))


def data_depth(value) -> int:
    """How many dicts and lists deep ``value`` is (a scalar 0), without recursing, stopping
    once past :data:`MAX_DEPTH`."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest
