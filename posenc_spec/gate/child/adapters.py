"""The target as its author wrote it, behind the gate's one canonical call of each API.

The gate calls every API in one form (``fn(num_positions, dim)``, ``fn(x, positions)``
...); real code has other signatures. :func:`adapt` wraps the imported target in the form
its declaration names (:mod:`posenc_spec.gate.signatures`), here in the child, so that no
user writes a wrapper:

- ``init`` builds an object first, from keyword arguments (a value ``"{name}"`` stands for
  a size of the call: ``num_positions``, ``dim``, ``head_dim``, ``max_positions``,
  ``rope_theta``) or from a Hugging Face ``config.json`` (``Class(config=...)``, as
  transformers builds its modules); one object per distinct set of arguments is kept for
  the whole turn, as a model keeps its modules, and a ``torch.nn.Module`` runs in ``eval()``
  mode (no dropout) under ``torch.no_grad()``;
- ``method`` names what to call on it (the object itself by default);
- ``kwargs`` are keyword arguments passed on every call (with the same sizes as ``init``);
- the signature maps the canonical arguments onto the call and its result back: ``q`` and
  ``k`` are the first and second heads of the gate's ``x``, and the rotated pair comes back
  as one ``x`` again.

A family whose calls need more than ints, floats and arrays (tuples, flags, dtypes,
modules called on their inputs) has an ``adapters.py`` of its own
(:attr:`~posenc_spec.gate.family.FamilyKeys.adapters`): :func:`adapt` hands it every call of
its targets, with a :class:`Maker` for ``init``, ``method`` and ``kwargs``.

What a target returns is read through :mod:`.convert` (its memory, never its methods)
before it is cut or joined here, so an adapter runs none of a result's own code.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import import_module

import numpy as np

from posenc_spec import families

from .convert import BadResult, to_arrays

try:
    import torch
except ImportError:
    torch = None

# The child-side adapters of the families that make every call of their targets, imported
# with this module (in the template, before any target): ``adapt(target, how, maker)``.
FAMILY_ADAPTERS = {names.name: import_module(f"posenc_spec.families.{names.name}.adapters")
                   for names in families.names() if names.adapters}

_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")
MAX_CONFIG_BYTES = 1 << 22
# Where each x layout keeps its heads (q and k are head 0 and head 1 of the gate's x) and
# its sequence, and the unsqueeze_dim transformers' apply takes for it.
HEAD_AXIS = {"bhsd": 1, "bshd": 2}
SEQ_AXIS = {"bhsd": 2, "bshd": 1}


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


def _join(first, second, axis: int):
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


def _split(x, layout: str):
    axis = HEAD_AXIS[layout]
    return x.narrow(axis, 0, 1), x.narrow(axis, 1, 1), axis


def _runs(positions: np.ndarray):
    """``(first index, end index, first position)`` of each run of consecutive positions."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [positions.size]])
    return [(int(start), int(end), int(positions[start])) for start, end in zip(starts, ends, strict=True)]


def _sizes(api, arguments) -> dict:
    """The sizes of a canonical call that ``init`` may name."""
    first = arguments[0] if arguments else None
    if api == "table":
        return {"num_positions": first, "dim": arguments[1]}
    if api == "timesteps":
        return {"num_positions": int(first.shape[0]), "dim": arguments[1]}
    if hasattr(first, "shape") and len(first.shape) >= 3:  # x first: rope-apply, an x-positions cache
        return {"head_dim": int(first.shape[-1])}
    if len(arguments) == 2 and isinstance(first, int):  # a length cache: fn(L, D)
        return {"num_positions": first, "head_dim": arguments[1]}
    return {"head_dim": arguments[-1]}  # fn(D), fn(positions, D)


def adapt(target, how: dict | None):
    """A callable that takes the API's canonical arguments, calls ``target`` as ``how``
    declares (see the module docstring; None: as it is) and returns its result."""
    how = how or {}
    signature = how.get("signature") or "canonical"
    maker = Maker(target, how)
    if how.get("family") in FAMILY_ADAPTERS:
        return FAMILY_ADAPTERS[how["family"]].adapt(target, how, maker)
    layout = how.get("x_layout")

    def canonical(*arguments):
        with quiet(maker):
            return maker(**_sizes(how.get("api"), arguments))(*arguments)

    def adds_to_x(num_positions, dim, x=None):
        shapes = {"sbd": (num_positions, 1, dim), "bsd": (1, num_positions, dim), "sd": (num_positions, dim)}
        if x is None:
            x = torch.zeros(shapes[layout], dtype=torch.float32)
        with quiet(maker):
            result = plain(maker(num_positions=num_positions, dim=dim)(x))
        return result.reshape(num_positions, dim) if tuple(result.shape) == shapes[layout] else result

    def q_k_cos_sin(x, positions, cos, sin):
        q, k, axis = _split(x, layout)
        with quiet(maker):
            call = maker(head_dim=int(x.shape[-1]))
            result = call(q, k, cos, sin) if layout == "bhsd" else call(q, k, cos, sin, unsqueeze_dim=2)
        return _join(*pair(result), axis)

    def xq_xk_freqs_cis(x, positions, freqs_cis):
        q, k, axis = _split(x, layout)
        with quiet(maker):
            return _join(*pair(maker(head_dim=int(x.shape[-1]))(q, k, freqs_cis)), axis)

    def x_offset(x, positions):
        axis = SEQ_AXIS[layout]
        with quiet(maker):
            call = maker(head_dim=int(x.shape[-1]))
            pieces = [plain(call(x.narrow(axis, start, end - start), offset=offset))
                      for start, end, offset in _runs(positions.numpy())]
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=axis)

    def x_input_pos(x, positions):
        input_pos = positions if positions.dim() == 2 else positions[None]  # (batch, seq): a row each
        with quiet(maker):
            return maker(head_dim=int(x.shape[-1]))(x, input_pos=input_pos)

    return {"canonical": canonical, "adds-to-x": adds_to_x, "q-k-cos-sin": q_k_cos_sin,
            "xq-xk-freqs-cis": xq_xk_freqs_cis, "x-offset": x_offset, "x-input-pos": x_input_pos}[signature]
