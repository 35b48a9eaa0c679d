"""Where the gate writes: a terminal or log (:func:`emit`), and the report files a user names,
each opened once, before any target runs, and written at the end to what was opened.

A target runs as the user and can rename, delete or replace whatever a path names while the
gate works, so a path is checked and opened by :func:`open_destination` (``--json``,
``--junitxml``; ``plot --against``'s picture and ``snapshot``'s file, ``--out``) or
:func:`open_folder` (``--plots``, ``plot``'s ``--out DIR``) before the first target runs,
and what it held then is what is written at the end:

- ``-`` is standard output.
- A regular file, or a name not there yet: its folder is opened and held (it must exist and
  be writable, and the name must not be a folder; opened with ``make_folders``, as
  ``snapshot --out``, a missing folder is held as a folder of pictures is, below). At the end the report goes into that
  folder atomically: a temporary file beside the name, then a rename over it, with the
  permissions the umask gives a new file (an existing file keeps its own). A name that has
  meanwhile become anything but a regular file (a folder, a FIFO, a device, a symlink) is
  left alone: the report is not written, and the error says what the name became. A
  rename never opens what it replaces, so nothing there can make the gate wait. Opened
  with ``replace=False`` (``snapshot`` without ``--force``), a name made meanwhile is left
  alone too.
- A symlink is followed once, at the start: its target is the destination.
- A FIFO (a named pipe, or a shell's ``>(...)``) or a character device (``/dev/stdout``,
  ``/dev/null``) is opened for writing at the start, without waiting (``O_NONBLOCK``): a
  FIFO that nobody reads yet is a usage error, never a hang. That descriptor is held and
  written at the end, whatever the path names by then; a reader that went away meanwhile
  is an error, a reader that reads slowly is waited for.
- A folder (``--plots DIR``): DIR, or the nearest folder above it when DIR is not there
  yet, is opened and held; the missing folders are made in it at the first picture, and
  each target's pictures go into a folder made in DIR (``plot``'s into DIR itself), none of
  them ever through a symlink (a target may leave one), each file written atomically as above.

A destination that cannot be written at the end raises :class:`Unwritten`, whose message
is one line; the commands print it after the verdicts and exit with
:data:`posenc_spec.commands.arguments.OUTPUT_STATUS`.

Text for a person goes through :func:`emit`, which writes each line so that a terminal or a
CI log shows it and never acts on it (:func:`shown_line`: :func:`posenc_spec.text.printable`,
then :func:`.annotations.inert`).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys

from posenc_spec.text import printable

from ..errors import UsageError
from .annotations import inert

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class Unwritten(OSError):
    """A destination opened at the start could not be written at the end; the message is one line."""

    def __str__(self) -> str:
        return self.strerror


def _write_text(text: str, stream) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
    stream.flush()


def emit(lines, stream=None, *, workflow_commands: bool = False) -> None:
    """Write ``lines`` (one line, or an iterable of lines) to ``stream`` (stdout), each as
    one line a terminal shows as it is: every character that would move the cursor, start an
    escape sequence, break the line or reorder the text is shown escaped, a line break inside
    a line included, and a line a CI runner would run as a workflow command is made inert.
    ``workflow_commands``: the lines are the gate's own annotations, kept commands. What the
    stream's encoding cannot print is written as backslash escapes. Standard output closed
    by its reader (``check -v | head -3``) is no error: see :func:`_reader_gone`."""
    stream = stream or sys.stdout
    lines = [lines] if isinstance(lines, str) else list(lines)
    shown = [printable(line) if workflow_commands else shown_line(line) for line in lines]
    try:
        _write_text("".join(line + "\n" for line in shown), stream)
    except BrokenPipeError:
        if stream is not sys.stdout:
            raise
        _reader_gone()


def _reader_gone() -> None:
    """Standard output's reader went away: what is printed from now on goes to the null
    device (the interpreter's last flush included), and the run goes on, so that its report
    files are written and its exit status is the verdict, as without the pipe."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    finally:
        os.close(null)


def shown_line(text) -> str:
    """``text`` (anything ``str`` accepts) as one line that a terminal shows as it is and a
    CI runner never runs (:func:`posenc_spec.text.printable`, then :func:`.annotations.inert`):
    what :func:`emit` writes, for text that another program prints (pytest's reports)."""
    return inert(printable(text))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISLNK, "a symlink"), (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _replace(folder: int, name: str, data: bytes, replace: bool = True) -> None:
    """Write ``data`` as ``name`` in the open ``folder``: a temporary file, then a rename over
    ``name``; :class:`Unwritten` when ``name`` is there and is not a regular file, or is
    there at all when not ``replace``."""
    try:
        mode = os.lstat(name, dir_fd=folder).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise Unwritten(errno.EEXIST, f"{name} became {_kind(mode)} during the run")
    if mode is not None and not replace:
        raise Unwritten(errno.EEXIST, f"{name} was made during the run")
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    handle = os.open(temporary, _NEW_FILE, 0o600, dir_fd=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            os.fchmod(stream.fileno(), stat.S_IMODE(mode) if mode is not None else _new_file_mode())
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        raise


def _probe(folder: int) -> None:
    """OSError unless a file can be made in the open ``folder`` (``os.access`` says yes to
    root even where the file system says no: /proc, read-only mounts)."""
    probe = f".posenc-spec.{secrets.token_hex(6)}.probe"
    os.close(os.open(probe, _NEW_FILE, 0o600, dir_fd=folder))
    os.unlink(probe, dir_fd=folder)


def _encoded(data: str | bytes) -> bytes:
    return data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data


class Destination:
    """A destination opened by :func:`open_destination`: :meth:`write` once, then it is closed."""

    def __init__(self, option: str, value: str, what: str = "the report"):
        self.option, self.value, self.what = option, value, what
        self.written = False

    def write(self, data: str | bytes) -> None:
        """Write ``data``, text (as UTF-8) or bytes (see the module docstring), then let go;
        :class:`Unwritten` when it cannot."""
        if self.written:
            raise Unwritten(errno.EBADF, f"{self.option} {self.value}: already written")
        self.written = True
        try:
            self._put(data)
        except OSError as error:
            raise Unwritten(error.errno, f"{self.option} {self.value}: {_reason(error)}; {self.what} was not "
                                         "written") from None
        finally:
            self.close()

    def _put(self, data: str | bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what was held (nothing is written)."""


class _StandardOutput(Destination):
    def _put(self, data: str | bytes) -> None:
        if isinstance(data, str):
            _write_text(data, sys.stdout)
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()


class _Stream(Destination):
    """A FIFO or a character device, open from the start."""

    def __init__(self, option: str, value: str, what: str, fd: int):
        super().__init__(option, value, what)
        self.fd = fd

    def _put(self, data: str | bytes) -> None:
        view = memoryview(_encoded(data))
        while view:
            view = view[os.write(self.fd, view):]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _File(Destination):
    """A regular file (or a new one): its folder, open from the start, and its name in it."""

    def __init__(self, option: str, value: str, what: str, folder: int, name: str, replace: bool):
        super().__init__(option, value, what)
        self.folder, self.name, self.replace = folder, name, replace

    def _put(self, data: str | bytes) -> None:
        _replace(self.folder, self.name, _encoded(data), self.replace)

    def close(self) -> None:
        if self.folder is not None:
            os.close(self.folder)
            self.folder = None


def _open_folder(option: str, value: str, folder: str) -> int:
    try:
        fd = os.open(folder, _FOLDER)
    except FileNotFoundError:
        raise UsageError(f"{option} {value}: no folder {folder}") from None
    except OSError as error:
        raise UsageError(f"{option} {value}: cannot open the folder {folder} ({_reason(error)})") from None
    try:
        _probe(fd)
    except OSError as error:
        os.close(fd)
        raise UsageError(f"{option} {value}: the folder {folder} is not writable ({_reason(error)})") from None
    return fd


def _open_stream(option: str, value: str, what: str, mode: int) -> Destination:
    try:
        fd = os.open(value, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as error:
        if error.errno == errno.ENXIO and stat.S_ISFIFO(mode):
            raise UsageError(f"{option} {value}: a FIFO that nobody reads (start its reader first)") from None
        raise UsageError(f"{option} {value}: cannot open {_kind(mode)} ({_reason(error)})") from None
    os.set_blocking(fd, True)
    return _Stream(option, value, what, fd)


def open_destination(option: str, value: str, what: str = "the report", replace: bool = True,
                     make_folders: bool = False) -> Destination:
    """``value`` checked and opened for writing (see the module docstring); :class:`UsageError`
    naming ``option`` when it cannot be. ``what`` names what goes there in messages;
    ``replace``: whether a file made there during the run is replaced; ``make_folders``:
    whether a missing folder is made at the end (the nearest one above it held from now)."""
    if value == "-":
        return _StandardOutput(option, value, what)
    try:
        mode = os.stat(value).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise UsageError(f"{option} {value}: {_reason(error)}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{option} {value}: is a folder")
    if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        # Opened by the name given: a shell's >(...) is /dev/fd/N, whose link names no path.
        return _open_stream(option, value, what, mode)
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{option} {value}: is {_kind(mode)}")
    folder, name = os.path.split(os.path.realpath(value))
    if make_folders and not os.path.isdir(folder):
        return _FileInNewFolder(option, value, what, open_folder(option, folder, value), name, replace)
    return _File(option, value, what, _open_folder(option, value, folder), name, replace)


class _FileInNewFolder(Destination):
    """A file in folders made at the end, beneath the nearest one that existed at the start
    (held as a :class:`Folder` is)."""

    def __init__(self, option: str, value: str, what: str, folder: Folder, name: str, replace: bool):
        super().__init__(option, value, what)
        self.folder, self.name, self.replace = folder, name, replace

    def _put(self, data: str | bytes) -> None:
        held = self.folder.open_made()
        try:
            _replace(held, self.name, _encoded(data), self.replace)
        finally:
            os.close(held)

    def close(self) -> None:
        self.folder.close()


class Folder:
    """A folder of pictures (``--plots DIR``), opened by :func:`open_folder`: DIR itself, or
    the nearest folder above it that exists, with the names of the folders to make in it at
    the first picture."""

    def __init__(self, option: str, value: str, held: int, names: list[str]):
        self.option, self.value = option, value
        self._held, self._names = held, names

    def _open(self, names: list[str]) -> int:
        """The folder ``names`` leads to from the held one, each made if missing."""
        folder = os.dup(self._held)
        for name in names:
            try:
                inner = _subfolder(folder, name)
            finally:
                os.close(folder)
            folder = inner
        return folder

    def open_made(self) -> int:
        """DIR itself, opened, with every missing folder on the way made."""
        return self._open(self._names)

    def write(self, subfolder: str | None, name: str, data: bytes) -> str:
        """Write ``data`` as ``DIR/subfolder/name``, or ``DIR/name`` when ``subfolder`` is None
        (see the module docstring); the path as the user named DIR, or :class:`Unwritten`."""
        inner = [] if subfolder is None else [subfolder]
        shown = os.path.join(self.value, *inner, name)
        try:
            folder = self._open(self._names + inner)
            try:
                _replace(folder, name, data)
            finally:
                os.close(folder)
        except OSError as error:
            raise Unwritten(error.errno, f"cannot write {shown}: {_reason(error)}") from None
        return shown

    def close(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held = None


def _subfolder(folder: int, name: str) -> int:
    """``name`` in the open ``folder``, made if missing, opened without following a symlink."""
    try:
        os.mkdir(name, 0o777, dir_fd=folder)
    except FileExistsError:
        pass
    return os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=folder)


def open_folder(option: str, value: str, given: str | None = None) -> Folder:
    """``value`` checked and opened as a folder of pictures (see the module docstring);
    :class:`UsageError` naming ``option`` and ``given`` (what the user gave, default
    ``value``) when it cannot be."""
    given = value if given is None else given
    path, names = os.path.realpath(value), []
    while not os.path.isdir(path):
        if os.path.lexists(path):
            raise UsageError(f"{option} {given}: {path} exists and is not a folder")
        path, name = os.path.split(path)
        names.insert(0, name)
    return Folder(option, given, _open_folder(option, given, path), names)
