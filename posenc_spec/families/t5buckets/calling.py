"""How a probe of :mod:`.grid` is handed to code of each signature, and its buckets read back.

The gate's child will call targets through these (in-process here, for the tests and the
corpus): :func:`keyword_arguments` maps the grid's roles to the callee's parameter names,
:func:`call_positions` and :func:`call_table` make the static, method and table calls, and
:func:`bias_buckets` reads the buckets back out of a bias module. What comes back is handed
on as an array; judging it is :mod:`.judge`'s.
"""

from __future__ import annotations

import numpy as np

from .conventions import BucketConvention
from .grid import Probe


def keyword_arguments(convention: BucketConvention, keywords: dict | None = None, **values) -> dict:
    """The convention's settings and ``values`` (``relative_position``, ``query_length`` ...)
    under the callee's names: ``keywords`` maps a role to its parameter name, ``"causal"``
    passing the flag negated, ``""`` not passing it."""
    keywords = keywords or {}
    roles = {"bidirectional": convention.bidirectional, "num_buckets": convention.num_buckets,
             "max_distance": convention.max_distance, **values}
    arguments = {}
    for role, value in roles.items():
        name = keywords.get(role, role)
        if name == "causal":
            arguments[name] = not value
        elif name:
            arguments[name] = value
    return arguments


def positions_tensor(probe: Probe):
    """The probe's relative positions as the torch tensor of its dtype."""
    import torch

    return torch.tensor(probe.values, dtype=getattr(torch, probe.dtype))


def call_positions(function, probe: Probe, convention: BucketConvention, keywords: dict | None = None,
                   settings_from_object: bool = False) -> np.ndarray:
    """A static call ``function(relative_position=..., bidirectional=..., ...)``, or with
    ``settings_from_object`` a method's ``function(relative_position)`` (the object holds them)."""
    import torch

    with torch.no_grad():
        positions = positions_tensor(probe)
        if settings_from_object:
            return np.asarray(function(positions))
        return np.asarray(function(**keyword_arguments(convention, keywords, relative_position=positions)))


def call_table(function, probe: Probe, convention: BucketConvention, keywords: dict | None = None) -> np.ndarray:
    """A table call ``function(query_length=q, key_length=k, bidirectional=..., ...)``."""
    import torch

    q_len, k_len = probe.shape
    with torch.no_grad():
        return np.asarray(function(**keyword_arguments(convention, keywords, query_length=q_len, key_length=k_len)))


def bias_buckets(module, embedding: str, read, q_len: int, k_len: int) -> np.ndarray:
    """A bias module's ``(q_len, k_len)`` buckets: the embedding ``embedding`` of ``module`` gets
    row ``b`` equal to ``b`` in every head (exact in float32 below 2**24), ``read(module)``
    returns the bias ``(..., q_len, k_len)``; every head must agree. int64 where the values are
    whole, else the floats as read (``integer`` then fails)."""
    import torch

    module = module.eval()
    with torch.no_grad():
        weight = getattr(module, embedding).weight
        weight.copy_(torch.arange(weight.shape[0], dtype=weight.dtype)[:, None].expand_as(weight))
        heads = read(module).reshape(-1, q_len, k_len).double().numpy()
    if not (heads == heads[:1]).all():
        raise ValueError(f"the heads of the bias read back through {embedding} differ")
    values = heads[0]
    return values.astype(np.int64) if np.array_equal(values, np.rint(values)) else values
