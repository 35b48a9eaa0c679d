"""Reference implementations of sinusoidal encodings, each a faithful rendering of one seed.

- :mod:`posenc_spec.references.numpy_loop`: an explicit loop over dimension pairs (seed 004), float64.
- :mod:`posenc_spec.references.numpy_vectorized`: one vectorised expression (seed 002), float64.
- :mod:`posenc_spec.references.torch_impl`: torch, any floating dtype and device (seed 000).
- :mod:`posenc_spec.references.timestep`: the concat-style diffusion timestep embedding (seed 003).
- :mod:`posenc_spec.references.family`: every member of the family, by convention name.

``posenc-spec check --builtin`` checks these, as
:data:`BUILT_IN_TARGETS` declares them (the same keys a ``[tool.posenc-spec]`` table holds).
"""

BUILT_IN_TARGETS = {
    "convention": "vaswani",
    "targets": [
        {"target": "posenc_spec.references.numpy_loop:positional_encoding"},
        {"target": "posenc_spec.references.numpy_vectorized:positional_encoding"},
        {"target": "posenc_spec.references.torch_impl:positional_encoding"},
        {"target": "posenc_spec.references.timestep:timestep_embedding", "api": "timesteps", "convention": "concat"},
    ],
}
