"""The 2-D sincos target called as its author wrote it (runs in the sealed child).

The gate's call is ``(height, width, dim)``; :func:`adapt` makes the call the declared
signature names (:mod:`.calls` lists them with the real code that has each), so that no user
writes a wrapper: a pair or a list of sides, a ``torch.Size``, a device and a dtype, a zero
feature map, an all-valid mask, a ``NestedTensor`` of both, or a zero sample for a patch
embedding whose trainable parameters are zeroed (what it returns is then what it adds).
``init``, ``method`` and ``kwargs`` go through the core's
:class:`~posenc_spec.gate.child.adapters.Maker`, with the sizes of :data:`.keys.SIZES`.

Imported in the child's template before any target: NumPy, torch and
:mod:`posenc_spec.gate.child` only. The result is returned as it came; the child reads it
through :mod:`posenc_spec.gate.child.convert`, running none of its methods.
"""

from __future__ import annotations

try:
    import torch
except ImportError:  # the gate's child always has torch; keep the module importable without it
    torch = None

from posenc_spec.gate.child.adapters import quiet


class NestedTensor:
    """What DETR's ``PositionEmbeddingSine.forward(tensor_list)`` reads: ``tensors`` and ``mask``."""

    def __init__(self, tensors, mask):
        self.tensors, self.mask = tensors, mask

    def decompose(self):
        return self.tensors, self.mask

    def to(self, device):
        return NestedTensor(self.tensors.to(device), self.mask.to(device))


def _dtype(name: str | None):
    return getattr(torch, name or "float32")


def _zeroed(module, done: set) -> None:
    """Zero ``module``'s trainable parameters once (a frozen table stays as it is)."""
    if id(module) in done or not isinstance(module, torch.nn.Module):
        return
    with torch.no_grad():
        for parameter in module.parameters():
            if parameter.requires_grad:
                parameter.zero_()
    done.add(id(module))


def _square(height: int, width: int) -> int:
    if height != width:
        raise ValueError(f"the dim-size signature takes square grids only, got {height}x{width}")
    return height


def adapt(target, how: dict, maker):
    """A callable ``(height, width, dim)`` that calls ``target`` as ``how["signature"]`` says."""
    signature = how.get("signature") or "canonical"
    channels, patch = how.get("in_channels") or 1, how.get("patch_size") or 1
    named_dtype = how.get("call_dtype")
    as_keyword = {"dtype": _dtype(named_dtype)} if named_dtype else {}
    cpu = torch.device("cpu")
    zeroed: set = set()

    def feature_map(height, width):
        return torch.zeros(1, channels, height, width, dtype=_dtype(named_dtype))

    def mask(height, width):
        return torch.zeros(1, height, width, dtype=torch.bool)

    def adds_to_patches(fn, height, width, dim):
        _zeroed(getattr(fn, "__self__", fn), zeroed)
        return fn(torch.zeros(1, channels, height * patch, width * patch, dtype=_dtype(named_dtype)))

    calls = {
        "canonical": lambda fn, h, w, d: fn(h, w, d, **as_keyword),
        "w-h-dim": lambda fn, h, w, d: fn(w, h, d, **as_keyword),
        "dim-size": lambda fn, h, w, d: fn(d, _square(h, w), **as_keyword),
        "dim-pair": lambda fn, h, w, d: fn(d, (h, w), **as_keyword),
        "shape-dim": lambda fn, h, w, d: fn([h, w], d, **as_keyword),
        "shape-device-dtype": lambda fn, h, w, d: fn(torch.Size([1, channels, h, w]), cpu, _dtype(named_dtype)),
        "w-h-device-dtype": lambda fn, h, w, d: fn(w, h, cpu, _dtype(named_dtype)),
        "x": lambda fn, h, w, d: fn(feature_map(h, w)),
        "mask": lambda fn, h, w, d: fn(mask(h, w)),
        "nested-tensor": lambda fn, h, w, d: fn(NestedTensor(feature_map(h, w), mask(h, w))),
        "adds-to-patches": adds_to_patches,
    }
    call = calls[signature]

    def adapted(height, width, dim):
        sizes = {"height": height, "width": width, "dim": dim, "half_dim": dim // 2,
                 "sample_height": height * patch, "sample_width": width * patch}
        with quiet(maker):
            return call(maker(**sizes), height, width, dim)

    return adapted
