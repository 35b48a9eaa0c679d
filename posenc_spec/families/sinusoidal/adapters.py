"""Sinusoidal tables and timestep embeddings as their authors wrote them (runs in the sealed
child; see :mod:`posenc_spec.gate.child.adapters` for ``init``, ``method`` and ``kwargs``).

``adds-to-x``: a module whose forward returns ``x + table`` (the PyTorch tutorial's
``PositionalEncoding``) is handed zeros of the declared ``x_layout`` (sbd ``(L, 1, D)``,
bsd ``(1, L, D)`` or sd ``(L, D)``); the table is what it adds.
"""

from __future__ import annotations

from posenc_spec.gate.child.adapters import canonical, is_as_written, plain, quiet
from posenc_spec.gate.child.described import Described

try:
    import torch
except ImportError:
    torch = None


def _sizes(api: str, arguments) -> dict:
    """The sizes of a canonical call that ``init`` may name."""
    first, dim = arguments[0], arguments[1]
    return {"num_positions": first if api == "table" else int(first.shape[0]), "dim": dim}


def described(target, how: dict):
    """The canonical call of a target declared with a call description (``how["call"]``):
    ``(num_positions, dim)`` or ``(timesteps, dim)``. A table an object keeps (the description
    ends with an attribute) of exactly ``(L, D)`` values held with size-1 axes (the PyTorch
    tutorial's ``pe``, ``(max_len, 1, d_model)``, laid out to be added to ``x``) is read as
    ``(L, D)``; what a call returns is read as it came."""
    made = Described(target, how["call"])
    kept = how["call"][-1][0] == "attr"
    sizes = how.get("sizes") or {}
    declared = {"max_positions": sizes.get("max_positions"), "t_max": sizes.get("t_max")}

    def call(first, dim):
        if how.get("api") == "timesteps":
            return made({"timesteps": first, "num_positions": int(first.shape[0]), "dim": dim, **declared})
        table = made({"num_positions": first, "dim": dim, "positions": torch.arange(first), **declared})
        if not kept:
            return table
        table = plain(table)
        squeezed = tuple(size for size in table.shape if size != 1)
        return table.reshape(first, dim) if squeezed == tuple(size for size in (first, dim) if size != 1) else table

    return call


def adapt(target, how: dict, maker):
    """The canonical table or timesteps call of ``target`` as ``how`` declares it."""
    signature = how.get("signature") or "canonical"
    if is_as_written(signature, maker):
        return target
    if how.get("call"):
        return described(target, how)
    api, layout = how.get("api"), how.get("x_layout")
    if signature == "canonical":
        return canonical(maker, lambda arguments: _sizes(api, arguments))

    def adds_to_x(num_positions, dim, x=None):
        shapes = {"sbd": (num_positions, 1, dim), "bsd": (1, num_positions, dim), "sd": (num_positions, dim)}
        if x is None:
            x = torch.zeros(shapes[layout], dtype=torch.float32)
        with quiet(maker):
            result = plain(maker(num_positions=num_positions, dim=dim)(x))
        return result.reshape(num_positions, dim) if tuple(result.shape) == shapes[layout] else result

    return adds_to_x
