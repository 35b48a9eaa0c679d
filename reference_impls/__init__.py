"""Reference implementations of sinusoidal encodings, each a faithful rendering of one seed.

- :mod:`reference_impls.numpy_loop`: an explicit loop over dimension pairs (seed 004), float64.
- :mod:`reference_impls.numpy_vectorized`: one vectorised expression (seed 002), float64.
- :mod:`reference_impls.torch_impl`: torch, any floating dtype and device (seed 000).
- :mod:`reference_impls.timestep`: the concat-style diffusion timestep embedding (seed 003).
- :mod:`reference_impls.family`: every member of the family, by convention name.
"""
