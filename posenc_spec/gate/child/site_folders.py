"""The folders installed libraries live in, by name (the standard library only: the gate's
process reads it too, without the child's torch-standing modules)."""

from __future__ import annotations

import os

LIBRARY_FOLDERS = ("site-packages", "dist-packages")


def in_site_folder(origin: str) -> bool:
    """Whether the file ``origin`` lies in a folder installed packages go to (not the standard
    library, whose modules cost little to import again and include some that act when imported)."""
    parts = os.path.realpath(origin).split(os.sep)
    return any(folder in parts for folder in LIBRARY_FOLDERS)
