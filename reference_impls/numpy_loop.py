"""Re-exports :mod:`posenc_spec.references.numpy_loop`."""

from posenc_spec.references.numpy_loop import positional_encoding

__all__ = ["positional_encoding"]
