"""Sinusoidal tables and timestep embeddings as their authors wrote them (runs in the sealed
child; see :mod:`posenc_spec.gate.child.adapters` for ``init``, ``method`` and ``kwargs``).

``adds-to-x``: a module whose forward returns ``x + table`` (the PyTorch tutorial's
``PositionalEncoding``) is handed zeros of the declared ``x_layout`` (sbd ``(L, 1, D)``,
bsd ``(1, L, D)`` or sd ``(L, D)``); the table is what it adds.
"""

from __future__ import annotations

from posenc_spec.gate.child.adapters import canonical, is_as_written, plain, quiet

try:
    import torch
except ImportError:
    torch = None


def _sizes(api: str, arguments) -> dict:
    """The sizes of a canonical call that ``init`` may name."""
    first, dim = arguments[0], arguments[1]
    return {"num_positions": first if api == "table" else int(first.shape[0]), "dim": dim}


def adapt(target, how: dict, maker):
    """The canonical table or timesteps call of ``target`` as ``how`` declares it."""
    signature = how.get("signature") or "canonical"
    if is_as_written(signature, maker):
        return target
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
