"""Re-exports :mod:`posenc_spec.families.sinusoidal.references.family`."""

from posenc_spec.families.sinusoidal.references.family import UndefinedWidthError, sinusoidal_encoding

__all__ = ["sinusoidal_encoding", "UndefinedWidthError"]
