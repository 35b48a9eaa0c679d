"""Re-exports :mod:`posenc_spec.families.sinusoidal.references.numpy_loop`."""

from posenc_spec.families.sinusoidal.references.numpy_loop import positional_encoding

__all__ = ["positional_encoding"]
