"""How real ALiBi code is called, and how what it returns becomes the oracle's layout.

Every bias is read as ``(heads, rows, keys)`` float64: one row for the key-only forms (the
last query's, where a target returns one per query); a single row returned for a form with
a row per query is broadcast over the queries, as attention adds it.
The signatures real code has::

    signature          the target is called as                         and returns
    slopes             fn(num_heads)                                    num_heads slopes, any shape
                       (x-transformers' AlibiPositionalBias._get_slopes, labml's get_slopes)
    heads-length       fn(num_heads, length)                            (heads, rows, length) after
    heads-length-max   fn(num_heads, length, alibi_bias_max)            leading size-1 axes
                       (transformers' build_mpt_alibi_tensor: (heads, 1, length))
    mask-heads-dtype   fn(attention_mask, num_heads, dtype)             (batch * heads, 1, keys)
                       (transformers' BLOOM and Falcon build_alibi_tensor; mask int64 (1, keys))
    heads-mask         fn(num_heads, mask)                              (queries, keys, heads)
                       (labml's get_alibi_biases; mask the (queries, keys) causal mask, 1 keep)
    module-ij          Module(**init)(q_len, k_len)                     (heads, q_len, k_len)
                       (x-transformers' AlibiPositionalBias(heads)(i, j))
    module-scores      Module(**init)(scores)                           scores + bias
                       (keras-hub's AlibiBias; scores zeros (1, heads, q_len, k_len) in the
                        call's dtype; the bias is read as out - scores, exact with zeros)

A module is built once per head count (``init``: keyword arguments, ``"{num_heads}"`` and
``"{alibi_bias_max}"`` stand for the call's values) and every call of the sequence goes to
the same object, so that a cache kept between a prefill and a decoding step is exercised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .conventions import AlibiConvention

SIGNATURES = ("slopes", "heads-length", "heads-length-max", "mask-heads-dtype", "heads-mask", "module-ij",
              "module-scores")
MODULE_SIGNATURES = ("module-ij", "module-scores")
TAKES_DTYPE = ("mask-heads-dtype", "module-scores")
PLACEHOLDERS = ("num_heads", "alibi_bias_max")


@dataclass(frozen=True)
class AlibiCall:
    """One call of a target: ``q_len`` queries over ``k_len`` keys (``mask``: one row of an
    attention mask, for the mask signatures), the torch ``dtype`` name handed to the
    signatures that take one, and its slot (the check ids' ``S``)."""

    slot: str
    num_heads: int
    q_len: int
    k_len: int
    dtype: str = "float32"
    mask: tuple | None = None
    role: str = "table"  # table, prefill or decode


def build_module(target, init: dict, call: AlibiCall, convention: AlibiConvention):
    """``target(**init)`` with the placeholders filled in."""
    values = {"num_heads": call.num_heads, "alibi_bias_max": convention.alibi_bias_max}
    kwargs = {}
    for key, value in init.items():
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            placeholder = value[1:-1]
            if placeholder not in PLACEHOLDERS:
                raise ValueError(f"init.{key}: {value!r} is none of {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
            value = values[placeholder]
        kwargs[key] = value
    return target(**kwargs)


def _mask(call: AlibiCall) -> np.ndarray:
    return np.asarray(call.mask if call.mask is not None else (1,) * call.k_len, dtype=np.int64)


def invoke(target, signature: str, call: AlibiCall, convention: AlibiConvention):
    """Call ``target`` (a function, or the module :func:`build_module` made) as ``signature``
    says; returns what it returned and, for ``module-scores``, the scores it was handed."""
    import torch

    if signature == "slopes":
        return target(call.num_heads), None
    if signature == "heads-length":
        return target(call.num_heads, call.k_len), None
    if signature == "heads-length-max":
        return target(call.num_heads, call.k_len, convention.alibi_bias_max), None
    if signature == "mask-heads-dtype":
        return target(torch.from_numpy(_mask(call))[None], call.num_heads, getattr(torch, call.dtype)), None
    if signature == "heads-mask":
        keys = np.arange(call.k_len)
        queries = np.arange(call.k_len - call.q_len, call.k_len)
        causal = (keys[None, :] <= queries[:, None]).astype(np.int64)
        return target(call.num_heads, torch.from_numpy(causal)), None
    if signature == "module-ij":
        return target(call.q_len, call.k_len), None
    if signature == "module-scores":
        scores = torch.zeros(1, call.num_heads, call.q_len, call.k_len, dtype=getattr(torch, call.dtype))
        return target(scores), scores
    raise ValueError(f"signature must be one of {', '.join(SIGNATURES)}, got {signature!r}")


def as_array(value) -> np.ndarray:
    """A list, ndarray or tensor as float64 (bfloat16 read exactly through float32)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if not value.dtype.is_floating_point or value.dtype.itemsize < 4:
            value = value.float()
        value = value.numpy()
    return np.asarray(value, dtype=np.float64)


def output_dtype(value) -> str:
    """The dtype name of a returned tensor or array (float64 for plain lists)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return "float64"
    return str(dtype).removeprefix("torch.")


def read(result, signature: str, call: AlibiCall, convention: AlibiConvention, scores=None) -> np.ndarray:
    """What ``invoke`` returned as slopes ``(heads,)`` or a bias ``(heads, rows, keys)``; a
    shape that does not fit raises ``ValueError`` naming it."""
    values = as_array(result)
    if signature == "slopes":
        if values.size != call.num_heads:
            raise ValueError(f"expected {call.num_heads} slopes, got shape {values.shape}")
        return values.reshape(-1)
    if scores is not None:
        values = values - as_array(scores)
    if signature == "heads-mask":
        if values.shape != (call.q_len, call.k_len, call.num_heads):
            raise ValueError(f"expected ({call.q_len}, {call.k_len}, {call.num_heads}), got {values.shape}")
        values = values.transpose(2, 0, 1)
    else:
        full, single = (call.num_heads, call.q_len, call.k_len), (call.num_heads, 1, call.k_len)
        if values.size not in (int(np.prod(full)), int(np.prod(single))):
            raise ValueError(f"expected {full} or {single} (with any size-1 axes), got shape {values.shape}")
        values = values.reshape(full if values.size == int(np.prod(full)) else single)
    if convention.key_only:  # the form's one row is the last query's
        return values[:, -1:, :]
    return np.broadcast_to(values, (call.num_heads, call.q_len, call.k_len))  # one row: what attention adds
