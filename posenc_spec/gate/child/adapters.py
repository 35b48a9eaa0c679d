"""The target as its author wrote it, behind the gate's one canonical call of each API.

The gate calls every API in one form (``fn(num_positions, dim)``, ``fn(x, positions)``
...); real code has other signatures. :func:`adapt` wraps the imported target in the form
its declaration names (:mod:`posenc_spec.gate.signatures`), here in the child, so that no
user writes a wrapper:

- ``init`` builds an object first, from keyword arguments (a value ``"{name}"`` stands for
  a size of the call, the family's ``sizes``) or from a Hugging Face ``config.json`` (``Class(config=...)``, as
  transformers builds its modules); one object per distinct set of arguments is kept for
  the whole turn, as a model keeps its modules, and a ``torch.nn.Module`` runs in ``eval()``
  mode (no dropout) under ``torch.no_grad()``;
- ``method`` names what to call on it (the object itself by default);
- ``kwargs`` are keyword arguments passed on every call (with the same sizes as ``init``);
- the signature maps the canonical arguments onto the call and its result back.

Signatures and the sizes of a call are the family's: a family with an ``adapters.py``
(:attr:`~posenc_spec.gate.family.FamilyKeys.adapters`) is handed every call of its targets,
with a :class:`Maker` for ``init``, ``method`` and ``kwargs``; a family without one has
only the canonical call (an object built from ``init`` names no size of the call).

What a target returns is read through :mod:`.convert` (its memory, never its methods)
before it is cut or joined here, so an adapter runs none of a result's own code.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import import_module

import numpy as np

from posenc_spec import registry

from .convert import BadResult, to_arrays

try:
    import torch
except ImportError:
    torch = None


_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")
MAX_CONFIG_BYTES = 1 << 22


def plain(result, allow_complex: bool = False):
    """A call's single result as a plain tensor or array holding the same bytes (read
    through :mod:`.convert`: none of the result's own methods runs)."""
    _, [(array, dtype, description)] = to_arrays(result, allow_complex, 1)
    if description.startswith("torch ") and torch is not None:
        tensor = torch.from_numpy(np.array(array))
        return tensor.view(torch.bfloat16) if dtype == "bfloat16" else tensor
    return array


def pair(result) -> tuple:
    """A call's two results (``(q', k')``) as plain tensors or arrays."""
    _, items = to_arrays(result, False, 2)
    if len(items) != 2:
        raise BadResult(f"returned {len(items)} result(s) where the signature returns two (q' and k')")
    plain = []
    for array, dtype, description in items:
        if description.startswith("torch ") and torch is not None:
            tensor = torch.from_numpy(np.array(array))
            plain.append(tensor.view(torch.bfloat16) if dtype == "bfloat16" else tensor)
        else:
            plain.append(array)
    return tuple(plain)


def join(first, second, axis: int):
    """Two results joined along ``axis`` (tensors stay tensors)."""
    if torch is not None and isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor):
        return torch.cat([first, second], dim=axis)
    return np.concatenate([np.asarray(first), np.asarray(second)], axis=axis)


class Maker:
    """What to call for a call of given sizes: the target itself, or a method of an object
    built for those sizes (kept for the turn)."""

    def __init__(self, target, how: dict):
        self.target, self.init, self.method = target, how.get("init"), how.get("method")
        self.kwargs = dict(how.get("kwargs") or {})
        self.sizes = dict(how.get("sizes") or {})
        self.config_path = how.get("config")
        self.objects: dict = {}
        self.config = None

    def __call__(self, **sizes):
        call = self._callable(sizes)
        if not self.kwargs:
            return call
        return functools.partial(call, **{name: self._value(value, sizes) for name, value in self.kwargs.items()})

    def _callable(self, sizes):
        if self.init is None:
            return self.target if self.method is None else getattr(self.target, self.method)
        if self.init == "config":
            key, arguments = ("config",), {"config": self._config()}
        else:
            arguments = {name: self._value(value, sizes) for name, value in self.init.items()}
            key = tuple(sorted(arguments.items()))
        made = self.objects.get(key)
        if made is None:
            made = self.objects[key] = self.target(**arguments)
            if torch is not None and isinstance(made, torch.nn.Module):
                made.eval()
        return made if self.method is None else getattr(made, self.method)

    def _value(self, value, sizes):
        match = _PLACEHOLDER.match(value) if isinstance(value, str) else None
        if match is None:
            return value
        name = match.group(1)
        known = {**self.sizes, **sizes}
        if known.get(name) is None:
            raise ValueError(f"{value} has no value in this call")
        return known[name]

    def _config(self):
        if self.config is None:
            from transformers import AutoConfig

            with open(self.config_path, "rb") as handle:
                data = json.loads(handle.read(MAX_CONFIG_BYTES))
            self.config = AutoConfig.for_model(data.pop("model_type"), **data)
        return self.config


def quiet(maker: Maker):
    """``torch.no_grad()`` around calls of an object the gate built (a module judged on its
    values), nothing around a target called as it is."""
    if maker.init is not None and torch is not None:
        return torch.no_grad()
    import contextlib

    return contextlib.nullcontext()


def is_as_written(signature: str, maker: Maker) -> bool:
    """Whether the target takes the canonical call as it is (no object, method or keywords)."""
    return signature == "canonical" and maker.init is None and maker.method is None and not maker.kwargs


def _family_of(api) -> str | None:
    try:
        return registry.names_of_api(api).name
    except KeyError:
        return None


def adapt(target, how: dict | None):
    """A callable that takes the API's canonical arguments, calls ``target`` as ``how``
    declares (see the module docstring; None: as it is) and returns its result."""
    how = how or {}
    maker = Maker(target, how)
    family = how.get("family") or _family_of(how.get("api"))
    if family in FAMILY_ADAPTERS:
        return FAMILY_ADAPTERS[family].adapt(target, how, maker)
    if is_as_written(how.get("signature") or "canonical", maker):
        return target
    return canonical(maker, lambda arguments: {})


def canonical(maker: Maker, sizes_of):
    """The API's canonical call through ``maker``: ``sizes_of(arguments)`` names the sizes of
    the call that ``init`` and ``kwargs`` may stand for."""

    def call(*arguments):
        with quiet(maker):
            return maker(**sizes_of(arguments))(*arguments)

    return call


# The child-side adapters of the families that make every call of their targets, imported
# with this module (in the template, before any target), after the helpers above that they
# import: ``adapt(target, how, maker)``.
FAMILY_ADAPTERS = {names.name: import_module(f"{registry.PACKAGE}.{names.name}.adapters")
                   for names in registry.names() if names.adapters}
