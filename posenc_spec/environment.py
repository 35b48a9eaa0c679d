"""The versions a report was made with, read without importing the libraries."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from . import __version__


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict:
    """``{"posenc_spec", "python", "numpy", "torch", "platform"}``."""
    return {
        "posenc_spec": __version__,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "platform": f"{sys.platform}-{platform.machine()}",
    }
