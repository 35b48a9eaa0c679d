"""Re-exports :mod:`posenc_spec.families.sinusoidal.references.timestep`."""

from posenc_spec.families.sinusoidal.references.timestep import timestep_embedding

__all__ = ["timestep_embedding"]
