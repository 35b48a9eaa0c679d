"""How a probe of :mod:`.grid` is handed to code of each signature, and its buckets read back.

The gate's child will call targets through these (in-process here, for the tests and the
corpus): :func:`keyword_arguments` maps the grid's roles to the callee's parameter names,
:func:`call_positions` and :func:`call_table` make the static, method and table calls, and
:func:`bias_buckets` reads the buckets back out of a bias module. What comes back is handed
on as an array; judging it is :mod:`.judge`'s.
"""

from __future__ import annotations

import numpy as np

from . import adapters
from .conventions import BucketConvention
from .grid import Probe


def keyword_arguments(convention: BucketConvention, keywords: dict | None = None, **values) -> dict:
    """The convention's settings and ``values`` (``relative_position``, ``query_length`` ...)
    under the callee's names: ``keywords`` maps a role to its parameter name, ``"causal"``
    passing the flag negated, ``""`` not passing it (the child's rule: :func:`.adapters.keywords`)."""
    settings = {"bidirectional": convention.bidirectional, "num_buckets": convention.num_buckets,
                "max_distance": convention.max_distance}
    names = {role: (keywords or {}).get(role, role) for role in (*settings, *values)}
    return adapters.keywords(names, settings, **values)


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
    """A bias module's ``(q_len, k_len)`` buckets, read back as the child reads them
    (:func:`.adapters.fill_embedding`, :func:`.adapters.bias_buckets`): ``read(module)``
    returns the bias ``(..., q_len, k_len)``; int64 where every head agrees and every value is
    whole, else the floats as read (``integer`` then fails); a ``BadResult`` when heads differ."""
    import torch

    module = module.eval()
    with torch.no_grad():
        adapters.fill_embedding(module, embedding)
        return adapters.bias_buckets(read(module), q_len, k_len)
