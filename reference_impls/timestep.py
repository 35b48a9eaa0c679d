"""Re-exports :mod:`posenc_spec.references.timestep`."""

from posenc_spec.references.timestep import timestep_embedding

__all__ = ["timestep_embedding"]
