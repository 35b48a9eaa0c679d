"""Each T5-bucket signature's call, in the sealed child (:func:`adapt`, imported once with the
template: NumPy, torch and :mod:`posenc_spec.gate.child` only).

The gate's requests carry the canonical arguments of :mod:`.grid`: the relative positions
as one int32 or int64 tensor (``static``, ``method``), or ``(query_length, key_length)``
(``table``, ``bias``). ``how`` says the rest (:meth:`.spec.BucketSpec.child_options`):
``args``, each role the signature hands over under the target's name for it (``"causal"``
passes ``not bidirectional``, ``""`` passes nothing), ``settings`` the declared
``bidirectional``, ``num_buckets`` and ``max_distance``, ``embedding`` the ``nn.Embedding``
a bias is looked up in. Every argument goes by keyword but the method's one position.

A bias module's buckets are read back through its embedding: the gate sets row ``b`` of
every head to ``b`` (exact in float32 for every bucket count the family allows), calls it,
and returns the bias of the first head as int64 where every head agrees and every value
is whole; otherwise the floats as they came (``integer`` then fails, naming them).
"""

from __future__ import annotations

import functools

import numpy as np

# The core's adapters import this module while they load: read their helpers at call time.
from posenc_spec.gate.child import adapters as core
from posenc_spec.gate.child.convert import BadResult

try:
    import torch
except ImportError:
    torch = None


def keywords(names: dict, settings: dict, **values) -> dict:
    """The settings and ``values`` under the target's names (see the module docstring)."""
    arguments = {}
    for role, value in {**settings, **values}.items():
        name = names.get(role, "")
        if name == "causal":
            arguments[name] = not value
        elif name:
            arguments[name] = value
    return arguments


def _module_of(call):
    """The object a bound method belongs to (the object itself when it is called as it is)."""
    return getattr(call, "__self__", call)


def fill_embedding(module, embedding: str) -> None:
    """Row ``b`` of ``module``'s embedding ``embedding`` (a dotted attribute) set to ``b`` in every column."""
    table = module
    for part in embedding.split("."):
        if not hasattr(table, part):
            raise BadResult(f"has no embedding {embedding!r} to read its buckets through (declare bucket_embedding)")
        table = getattr(table, part)
    weight = getattr(table, "weight", None)
    if torch is None or not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise BadResult(f"{embedding} is no nn.Embedding (a 2-D weight), so its buckets cannot be read back")
    with torch.no_grad():
        rows = torch.arange(weight.shape[0], dtype=weight.dtype)[:, None]
        weight.copy_(rows.expand_as(weight))


def bias_buckets(result, q_len: int, k_len: int):
    """The buckets a bias ``(..., q_len, k_len)`` was looked up from (see the module docstring)."""
    bias = core.plain(result)
    bias = bias.double().numpy() if torch is not None and isinstance(bias, torch.Tensor) else bias.astype(np.float64)
    if bias.size % (q_len * k_len) or bias.shape[-2:] != (q_len, k_len):
        raise BadResult(f"returned a bias of shape {tuple(bias.shape)} where (..., {q_len}, {k_len}) was asked")
    heads = bias.reshape(-1, q_len, k_len)
    if heads.shape[0] and not (heads == heads[:1]).all():
        raise BadResult("returned a bias whose heads differ although every head's embedding row b holds b")
    first = heads[0] if heads.shape[0] else np.zeros((q_len, k_len))
    if np.isfinite(first).all() and np.array_equal(first, np.rint(first)):
        return first.astype(np.int64)
    return first


def adapt(target, how: dict, maker):
    """A callable that takes the grid's canonical arguments and calls ``target`` as its
    signature says."""
    names, settings = how.get("args") or {}, how.get("settings") or {}
    # "{config}" in a table of init: the object bucket_config builds, beside other arguments
    # (T5Attention(config=..., has_relative_attention_bias=True)); built on the first call, kept.
    # (The core's Maker keys its objects by their arguments, and a config is not hashable.)
    with_config = isinstance(how.get("init"), dict) and "{config}" in how["init"].values()
    objects = {}

    def made(**sizes):
        if not with_config:
            return maker(**sizes)
        config = maker._config()
        arguments = {name: config if value == "{config}" else maker._value(value, sizes)
                     for name, value in how["init"].items()}
        key = tuple(sorted((name, value) for name, value in arguments.items() if value is not config))
        if key not in objects:
            objects[key] = target(**arguments)
            if torch is not None and isinstance(objects[key], torch.nn.Module):
                objects[key].eval()
        call = objects[key] if maker.method is None else getattr(objects[key], maker.method)
        extra = {name: maker._value(value, sizes) for name, value in maker.kwargs.items()}
        return functools.partial(call, **extra) if extra else call
    signature, embedding = how.get("signature"), how.get("embedding")

    def static(relative_position):
        with core.quiet(maker):
            return made()(**keywords(names, settings, relative_position=relative_position))

    def method(relative_position):
        with core.quiet(maker):
            return made()(relative_position)

    def table(query_length, key_length):
        with core.quiet(maker):
            call = made(query_length=query_length, key_length=key_length)
            return call(**keywords(names, settings, query_length=query_length, key_length=key_length))

    def bias(query_length, key_length):
        sizes = {"query_length": query_length, "key_length": key_length}
        if torch is None:
            raise BadResult("a bias module needs torch, which does not import here")
        with torch.no_grad():
            call = made(**sizes)
            fill_embedding(_module_of(call), embedding)
            result = call(**keywords(names, {}, x=torch.zeros(1, key_length, 1), **sizes))
        return bias_buckets(result, query_length, key_length)

    # The core names the first signature of an API "canonical".
    return {"canonical": static, "static": static, "method": method, "table": table, "bias": bias}[signature]
