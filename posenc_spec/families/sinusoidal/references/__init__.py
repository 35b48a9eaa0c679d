"""Reference implementations of sinusoidal encodings, each a faithful rendering of one seed.

- :mod:`.numpy_loop`: an explicit loop over dimension pairs (seed 004), float64.
- :mod:`.numpy_vectorized`: one vectorised expression (seed 002), float64.
- :mod:`.torch_impl`: torch, any floating dtype and device (seed 000).
- :mod:`.timestep`: the concat-style diffusion timestep embedding (seed 003).
- :mod:`.family`: every member of the family, by convention name.

``posenc-spec check --builtin`` checks these, as the sinusoidal family's keys declare them
(:data:`posenc_spec.families.sinusoidal.keys.BUILTIN`).
"""
