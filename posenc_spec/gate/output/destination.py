"""Writing a report to what the user named, as a shell redirection would, but safely.

``-`` is standard output. A path is checked before any target runs (:func:`check`): its
folder must exist and be writable, and it must not be a folder. A regular file (or a new
one) is written atomically: a temporary file beside it, then a rename, with the
permissions the umask gives a new file (an existing file keeps its own). A symlink is
written through to its target; a FIFO or a character device (``/dev/stdout``) is opened
and written in place.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from ..errors import UsageError


def emit(text: str, stream=None) -> None:
    """Write ``text`` to ``stream`` (stdout), escaping what its encoding cannot print."""
    stream = stream or sys.stdout
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
    stream.flush()


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _mode(path: Path) -> int | None:
    """``path``'s file mode; None where nothing is there yet."""
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        return None


def _is_stream(mode: int | None) -> bool:
    """A FIFO or a character device: written in place, never replaced."""
    return mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))


def check(option: str, value: str) -> None:
    """:class:`UsageError` unless ``value`` can be written (see the module docstring)."""
    if value == "-":
        return
    path = _resolved(Path(value))
    try:
        mode = _mode(path)
    except OSError as error:
        raise UsageError(f"{option} {value}: {error.strerror or error}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{option} {value}: is a folder")
    if _is_stream(mode):
        if not os.access(path, os.W_OK):
            raise UsageError(f"{option} {value}: not writable")
        return
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{option} {value}: no folder {folder}")
    try:  # os.access says yes to root even where the file system says no (/proc, read-only mounts)
        handle, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise UsageError(f"{option} {value}: the folder {folder} is not writable ({error.strerror or error})") from None


def write(value: str, text: str) -> None:
    """Write ``text`` to ``value`` (see the module docstring); OSError when it cannot."""
    if value == "-":
        emit(text, sys.stdout)
        return
    path = _resolved(Path(value))
    mode = _mode(path)
    if _is_stream(mode):
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text)
        return
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text)
        if mode is not None:
            os.chmod(temporary, stat.S_IMODE(mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
