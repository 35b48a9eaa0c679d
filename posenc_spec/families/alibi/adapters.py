"""The ALiBi target as its author wrote it, called in the sealed child (NumPy, torch and
:mod:`posenc_spec.gate.child` only: this module is imported in the template, before any target).

Every request carries ``(num_heads, q_len, k_len, dtype index[, attention_mask])``
(:meth:`posenc_spec.families.alibi.grid.AlibiProbe.request`); :func:`adapt` makes the call
the declared signature names (:mod:`posenc_spec.families.alibi.signatures` lists them) and
hands back what it returned, read through :mod:`posenc_spec.gate.child.convert`: the causal
mask of ``heads-mask`` and the zero scores of ``module-scores`` are made here, in the call's
dtype. A module is the object ``maker`` builds for the call's head count (one per count,
kept for the turn: every call of a head count goes to the same module); a module signature
declared without ``init`` builds ``target()``, one per head count, as a model builds a layer.
"""

from __future__ import annotations

import functools

try:
    import torch
except ImportError:
    torch = None

DTYPE_CODES = ("float32", "float16", "bfloat16", "float64")  # grid.DTYPE_CODES: a request names a dtype by index
DEFAULT_SIGNATURES = {"alibi-slopes": "heads", "alibi-bias": "heads-length"}
MODULE_SIGNATURES = ("module-ij", "module-scores")  # signatures.MODULE_SIGNATURES: the target is a class


def _causal_mask(q_len: int, k_len: int):
    """The ``(q_len, k_len)`` causal mask of the last ``q_len`` queries, int64, 1 where a key is kept."""
    keys = torch.arange(k_len)
    queries = torch.arange(k_len - q_len, k_len)
    return (keys[None, :] <= queries[:, None]).to(torch.int64)


def adapt(target, how: dict, maker):
    """A callable taking a request's arguments and returning what the target returned."""
    # Imported here: posenc_spec.gate.child.adapters imports this module while it loads.
    from posenc_spec.gate.child.adapters import plain, quiet

    signature = how.get("signature") or "canonical"
    if signature == "canonical":
        signature = DEFAULT_SIGNATURES[how.get("api", "alibi-bias")]
    bias_max = (how.get("sizes") or {}).get("alibi_bias_max", 8.0)
    built: dict = {}  # a module signature's objects built without init, one per head count

    def module(num_heads):
        """The object a module signature calls: ``maker``'s (from ``init``), else ``target()``."""
        if how.get("init") is not None or signature not in MODULE_SIGNATURES:
            return maker(num_heads=num_heads)
        if num_heads not in built:
            made = built[num_heads] = target()
            if isinstance(made, torch.nn.Module):
                made.eval()
        made = built[num_heads]
        made = made if how.get("method") is None else getattr(made, how["method"])
        return functools.partial(made, **how["kwargs"]) if how.get("kwargs") else made

    def call(num_heads, q_len, k_len, dtype_code, attention_mask=None):
        dtype = getattr(torch, DTYPE_CODES[dtype_code])
        with quiet(maker) if how.get("init") is not None or signature not in MODULE_SIGNATURES else torch.no_grad():
            function = module(num_heads)
            if signature == "heads":
                return plain(function(num_heads))
            if signature == "heads-length":
                return plain(function(num_heads, k_len))
            if signature == "heads-length-max":
                return plain(function(num_heads, k_len, bias_max))
            if signature == "mask-heads-dtype":
                return plain(function(attention_mask, num_heads, dtype))
            if signature == "heads-mask":
                return plain(function(num_heads, _causal_mask(q_len, k_len)))
            if signature == "module-ij":
                return plain(function(q_len, k_len))
            if signature == "module-scores":  # zero scores: what comes back is the bias added to them
                return plain(function(torch.zeros(1, num_heads, q_len, k_len, dtype=dtype)))
        raise ValueError(f"no ALiBi signature {signature!r}")

    return call
