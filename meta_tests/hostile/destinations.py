"""Targets that tamper with the report's destinations while the gate runs: a target can
rename, replace or plant anything its user can (the user running the gate; under root, a
user of its own, so the tests put the destinations in a folder anyone may write). Each
reads the path it attacks from an environment variable the test sets (a target's process
gets the gate's environment) and then returns a table.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hostile_tables import vaswani


def _replace(path: Path, make) -> None:
    """``path`` (a file or nothing) replaced by what ``make`` puts there, once a turn."""
    if path.is_file() or not path.exists():
        path.unlink(missing_ok=True)
        make(path)


def _record_pid() -> None:
    if os.environ.get("POSENC_HOSTILE_PIDS"):
        with open(os.environ["POSENC_HOSTILE_PIDS"], "a") as pids:
            pids.write(f"{os.getpid()}\n")


def report_becomes_fifo(num_positions, dim):
    """Replaces the file named by ``POSENC_HOSTILE_REPORT`` with a FIFO that nobody reads,
    records its pid in ``POSENC_HOSTILE_PIDS``, and returns a correct table. Verdict:
    conforms; the gate neither waits on the FIFO nor writes through it: that report is not
    written (one line, exit 3), the others are complete, and nothing is left running."""
    _record_pid()
    _replace(Path(os.environ["POSENC_HOSTILE_REPORT"]), os.mkfifo)
    return vaswani(num_positions, dim)


def report_becomes_folder(num_positions, dim):
    """Replaces the file named by ``POSENC_HOSTILE_FOLDER_REPORT`` with a folder and returns
    a correct table. Verdict: conforms; that report is not written (one line, exit 3), the
    folder is left as it is, the others are complete."""
    _replace(Path(os.environ["POSENC_HOSTILE_FOLDER_REPORT"]), Path.mkdir)
    return vaswani(num_positions, dim)


def plants_symlink_for_its_pictures(num_positions, dim):
    """Puts a symlink where the gate will write its pictures (``POSENC_HOSTILE_PICTURES``),
    pointing at ``POSENC_HOSTILE_ELSEWHERE``, and returns a table of zeros. Verdict: does not
    conform; no picture is written through the link (one line, exit 3)."""
    pictures = Path(os.environ["POSENC_HOSTILE_PICTURES"])
    if pictures.is_dir() and not pictures.is_symlink():
        shutil.rmtree(pictures)
    if not pictures.is_symlink():
        pictures.parent.mkdir(parents=True, exist_ok=True)
        pictures.symlink_to(os.environ["POSENC_HOSTILE_ELSEWHERE"])
    return vaswani(num_positions, dim) * 0
