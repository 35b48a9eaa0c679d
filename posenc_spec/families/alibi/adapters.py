"""The ALiBi target as its author wrote it, called in the sealed child (NumPy, torch and
:mod:`posenc_spec.gate.child` only: this module is imported in the template, before any target).

Every request carries ``(num_heads, q_len, k_len, dtype index[, attention_mask])``
(:meth:`posenc_spec.families.alibi.grid.AlibiProbe.request`); :func:`adapt` makes the call
the declared signature names (:mod:`posenc_spec.families.alibi.grid` lists them) and
hands back what it returned, read through :mod:`posenc_spec.gate.child.convert`: the causal
mask of ``heads-mask`` and the zero scores of ``module-scores`` are made here, in the call's
dtype. A module is the object ``maker`` builds for the call's head count (one per count,
kept for the turn: every call of a head count goes to the same module); a module signature
declared without ``init`` builds ``target()``, one per head count, as a model builds a layer.
"""

from __future__ import annotations

import functools

from posenc_spec.gate.child.adapters import plain, quiet
from posenc_spec.gate.child.described import Described

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


# How each signature calls what the maker gives: (function, num_heads, q_len, k_len, dtype, mask,
# alibi_bias_max) -> what it returned. module-scores gets zero scores: what comes back is the bias.
CALLS = {
    "heads": lambda f, h, q, k, dtype, mask, b: f(h),
    "heads-length": lambda f, h, q, k, dtype, mask, b: f(h, k),
    "heads-length-max": lambda f, h, q, k, dtype, mask, b: f(h, k, b),
    "mask-heads-dtype": lambda f, h, q, k, dtype, mask, b: f(mask, h, dtype),
    "heads-mask": lambda f, h, q, k, dtype, mask, b: f(h, _causal_mask(q, k)),
    "module-ij": lambda f, h, q, k, dtype, mask, b: f(q, k),
    "module-scores": lambda f, h, q, k, dtype, mask, b: f(torch.zeros(1, h, q, k, dtype=dtype)),
}


class _Built:
    """The objects a module signature declared without ``init`` calls: ``target()``, one per
    head count, in ``eval()`` mode, with ``method`` and ``kwargs`` applied."""

    def __init__(self, target, how: dict):
        self.target, self.how, self.objects = target, how, {}

    def __call__(self, num_heads: int):
        if num_heads not in self.objects:
            made = self.objects[num_heads] = self.target()
            if isinstance(made, torch.nn.Module):
                made.eval()
        made = self.objects[num_heads]
        made = made if self.how.get("method") is None else getattr(made, self.how["method"])
        return functools.partial(made, **self.how["kwargs"]) if self.how.get("kwargs") else made


# The roles a call description may hand (keys.NAMES.roles), each made from a request's
# (num_heads, q_len, k_len, dtype, attention_mask) only when the description names it.
ROLE_VALUES = {
    "num_heads": lambda h, q, k, dtype, mask: h,
    "query_length": lambda h, q, k, dtype, mask: q,
    "key_length": lambda h, q, k, dtype, mask: k,
    "dtype": lambda h, q, k, dtype, mask: dtype,
    "attention_mask": lambda h, q, k, dtype, mask: mask,
    "causal_mask": lambda h, q, k, dtype, mask: _causal_mask(q, k),
    "scores": lambda h, q, k, dtype, mask: torch.zeros(1, h, q, k, dtype=dtype),
}


def described(target, how: dict):
    """A request's call of a target declared with a call description (``how["call"]``)."""
    made = Described(target, how["call"])
    named = {argument[1] for step in how["call"] if step[0] == "call"
             for argument in (*step[1], *step[2].values()) if argument[0] == "role"}
    bias_max = (how.get("sizes") or {}).get("alibi_bias_max", 8.0)

    def call(num_heads, q_len, k_len, dtype_code, attention_mask=None):
        dtype = getattr(torch, DTYPE_CODES[dtype_code])
        roles = {role: ROLE_VALUES[role](num_heads, q_len, k_len, dtype, attention_mask)
                 for role in named if role in ROLE_VALUES}
        return plain(made({**roles, "alibi_bias_max": bias_max}))

    return call


def adapt(target, how: dict, maker):
    """A callable taking a request's arguments and returning what the target returned."""
    if how.get("call"):
        return described(target, how)
    signature = how.get("signature") or "canonical"
    if signature == "canonical":
        signature = DEFAULT_SIGNATURES[how.get("api", "alibi-bias")]
    if signature not in CALLS:
        raise ValueError(f"no ALiBi signature {signature!r}")
    bias_max = (how.get("sizes") or {}).get("alibi_bias_max", 8.0)
    built = _Built(target, how) if how.get("init") is None and signature in MODULE_SIGNATURES else None

    def call(num_heads, q_len, k_len, dtype_code, attention_mask=None):
        dtype = getattr(torch, DTYPE_CODES[dtype_code])
        with torch.no_grad() if built is not None else quiet(maker):
            function = built(num_heads) if built is not None else maker(num_heads=num_heads)
            return plain(CALLS[signature](function, num_heads, q_len, k_len, dtype, attention_mask, bias_max))

    return call
