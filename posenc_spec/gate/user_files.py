"""Reading a text file a user names (a config, an xfails file): bounded, UTF-8, one-line errors."""

from __future__ import annotations

from pathlib import Path

from .errors import UsageError


def read_text(path: Path, max_bytes: int, what: str) -> str:
    """The text of ``path``, at most ``max_bytes`` bytes of UTF-8 (a byte-order mark is
    dropped); every problem a :class:`UsageError` naming the file, ``what`` it was, and the
    line where the encoding breaks."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise UsageError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise UsageError(f"{path}: a {what} of more than {max_bytes} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UsageError(f"{path}, line {line}: not UTF-8 text") from None
