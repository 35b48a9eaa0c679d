"""Re-exports :mod:`posenc_spec.references.numpy_vectorized`."""

from posenc_spec.references.numpy_vectorized import positional_encoding

__all__ = ["positional_encoding"]
