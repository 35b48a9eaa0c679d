"""Sinusoidal tables and diffusion timestep embeddings (the ``table`` and ``timesteps`` APIs).

:mod:`.keys`: the declared keys; :mod:`.family`: what the gate's core asks of the family.
"""
