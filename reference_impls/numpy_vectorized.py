"""Re-exports :mod:`posenc_spec.families.sinusoidal.references.numpy_vectorized`."""

from posenc_spec.families.sinusoidal.references.numpy_vectorized import positional_encoding

__all__ = ["positional_encoding"]
