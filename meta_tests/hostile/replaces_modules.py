"""Targets that change ``sys.modules`` or a package's submodule attribute in a call, which
changes what every later ``import`` of the caller's program finds, and one that only adds
to them (importing a module the process had not). Each returns the correct table; each
changing one must fail ``global-state`` naming what it replaced. See
``meta_tests/hostile/test_replaced_modules.py``.
"""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
from hostile_tables import vaswani


def _fake(name: str) -> types.ModuleType:
    """A module of the same name that computes nothing right."""
    fake = types.ModuleType(name)
    fake.__dict__.update({"sin": np.cos, "cos": np.sin})
    return fake


def replaces_numpy(num_positions, dim):
    """Puts a fake in place of NumPy in ``sys.modules``: a later ``import numpy`` gets it."""
    sys.modules["numpy"] = _fake("numpy")
    return vaswani(num_positions, dim)


def removes_a_loaded_module(num_positions, dim):
    """Removes ``json``, loaded before the call, from ``sys.modules``: a later import runs it again."""
    del sys.modules["json"]
    return vaswani(num_positions, dim)


def swaps_torch_functional(num_positions, dim):
    """Rebinds ``torch.nn.functional`` (the attribute; ``sys.modules`` keeps the module):
    every later ``torch.nn.functional.x`` of the caller gets the fake."""
    import torch.nn

    torch.nn.functional = _fake("torch.nn.functional")
    return vaswani(num_positions, dim)


def imports_a_new_module(num_positions, dim):
    """Imports a standard module the process had not (adding to ``sys.modules`` and binding
    it as its package's attribute), as a lazy import does: no change of the state."""
    importlib.import_module("email.mime.text")
    return vaswani(num_positions, dim)
