"""Re-exports :mod:`posenc_spec.references.family`."""

from posenc_spec.references.family import UndefinedWidthError, sinusoidal_encoding

__all__ = ["sinusoidal_encoding", "UndefinedWidthError"]
