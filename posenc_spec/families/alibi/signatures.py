"""How real ALiBi code is called, and how what it returns becomes the oracle's layout.

Every bias is read as ``(heads, rows, keys)`` float64: one row for the key-only forms (the
last query's, where a target returns one per query); a single row returned for a form with
a row per query is broadcast over the queries, as attention adds it. The signatures real
code has (the child makes each call: :mod:`.adapters`)::

    api / signature         the target is called as                      and returns
    alibi-slopes
      heads                 fn(num_heads)                                num_heads slopes, any shape
                            (x-transformers' AlibiPositionalBias._get_slopes, labml's get_slopes,
                             transformers' _get_alibi_slopes with kwargs = {device = "cpu"})
    alibi-bias
      heads-length          fn(num_heads, length)                        (heads, rows, length) after
      heads-length-max      fn(num_heads, length, alibi_bias_max)        any size-1 axes
                            (llm-foundry's build_alibi_bias; transformers' build_mpt_alibi_tensor)
      mask-heads-dtype      fn(attention_mask, num_heads, dtype)         (batch * heads, 1, keys)
                            (transformers' BLOOM and Falcon build_alibi_tensor; mask int64 (1, keys),
                             dtype a torch dtype)
      heads-mask            fn(num_heads, mask)                          (queries, keys, heads)
                            (labml's get_alibi_biases; mask the (queries, keys) causal mask, 1 keep)
      module-ij             Module(**init)(q_len, k_len)                 (heads, q_len, k_len)
                            (x-transformers' AlibiPositionalBias(heads)(i, j))
      module-scores         Module(**init)(scores)                       scores + bias
                            (keras-hub's AlibiBias; scores zeros (1, heads, q_len, k_len) in the
                             call's dtype: what it returns is the bias)

A module is built once per head count (``init``: keyword arguments, ``"{num_heads}"`` and
``"{alibi_bias_max}"`` stand for the call's values) and every call of its head count goes to
the same object, so that a cache kept between a prefill and a decoding step is exercised.
"""

from __future__ import annotations

import numpy as np

from .conventions import AlibiConvention
from .grid import AlibiCall

SIGNATURES = ("heads", "heads-length", "heads-length-max", "mask-heads-dtype", "heads-mask", "module-ij",
              "module-scores")
MODULE_SIGNATURES = ("module-ij", "module-scores")


class Unreadable(ValueError):
    """What a call returned does not hold the values its signature promises (the message says why)."""


def _shape(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def read(values, signature: str, call: AlibiCall, convention: AlibiConvention) -> np.ndarray:
    """What a call returned as slopes ``(heads,)`` or a bias ``(heads, rows, keys)``, float64;
    :class:`Unreadable` naming the shape that does not fit."""
    values = np.asarray(values, dtype=np.float64)
    if signature == "heads":
        if values.size != call.num_heads:
            raise Unreadable(f"returned {values.size} slopes (shape {_shape(values.shape)}) for {call.num_heads} "
                             "heads")
        return values.reshape(-1)
    heads, q_len, k_len = call.num_heads, call.q_len, call.k_len
    if signature == "heads-mask":
        if values.shape != (q_len, k_len, heads):
            raise Unreadable(f"returned shape {_shape(values.shape)}, expected {_shape((q_len, k_len, heads))} "
                             "(queries, keys, heads)")
        values = values.transpose(2, 0, 1)
    else:
        full, single = (heads, q_len, k_len), (heads, 1, k_len)
        if values.size not in (int(np.prod(full)), int(np.prod(single))) or values.ndim < 1 \
                or values.shape[-1] != k_len:
            raise Unreadable(f"returned shape {_shape(values.shape)}, expected {_shape(full)} or {_shape(single)} "
                             "(with any size-1 axes)")
        values = values.reshape(full if values.size == int(np.prod(full)) else single)
    if convention.key_only:  # the form's one row is the last query's
        return values[:, -1:, :]
    return np.broadcast_to(values, (heads, q_len, k_len))  # one row: what attention adds to every query
