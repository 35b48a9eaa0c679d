"""Re-exports :mod:`posenc_spec.families.sinusoidal.references.torch_impl`."""

from posenc_spec.families.sinusoidal.references.torch_impl import positional_encoding

__all__ = ["positional_encoding"]
