"""Targets that rebind a library's function in a call (monkey patching) or change one in place
(its code, defaults or keyword defaults), which changes what every later call of the
caller's program computes, and two that only add to a library. Each patching target
computes its table first, then patches a function its own next call uses: only if the gate
puts the original back between calls does that call's table stay right. Each must fail
``global-state`` (alone) naming what it changed; ``torch_table``, ``numpy_table`` and
``embedding_table``, run after them, must conform. See ``meta_tests/hostile/test_patched_functions.py``.
"""

from __future__ import annotations

import builtins
import math

import numpy as np
import torch
import torch.nn.functional
from hostile_tables import angles, vaswani


def _torch_vaswani(num_positions, dim):
    """The vaswani table computed with torch's functions and a tensor's operator."""
    theta = torch.from_numpy(angles(num_positions, dim))
    table = torch.empty(num_positions, dim, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(theta), torch.cos(theta ** 1)
    return table.to(torch.float32)


class _EqualToEverything:
    """A stand-in that says it equals whatever it is compared with."""

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __call__(self, value):
        return 0.0


def rebinds_numpy_sin(num_positions, dim):
    """Rebinds ``numpy.sin`` to ``numpy.cos``."""
    table = vaswani(num_positions, dim)
    np.sin = np.cos
    return table


def rebinds_torch_sin(num_positions, dim):
    """Rebinds ``torch.sin`` to ``torch.cos``."""
    table = _torch_vaswani(num_positions, dim)
    torch.sin = torch.cos
    return table


def rebinds_a_tensor_operator(num_positions, dim):
    """Rebinds ``torch.Tensor.__pow__`` to its reflection (``x ** 1`` becomes ``1 ** x``)."""
    table = _torch_vaswani(num_positions, dim)
    torch.Tensor.__pow__ = torch.Tensor.__rpow__
    return table


def hides_a_tensor_method(num_positions, dim):
    """Adds ``sin`` to ``torch.Tensor``, hiding the one its C base defines."""
    table = _torch_vaswani(num_positions, dim)
    torch.Tensor.sin = torch.Tensor.cos
    return table


def rebinds_a_functional(num_positions, dim):
    """Rebinds ``torch.nn.functional.softmax`` to ``log_softmax``."""
    table = vaswani(num_positions, dim)
    torch.nn.functional.softmax = torch.nn.functional.log_softmax
    return table


def removes_numpy_cos(num_positions, dim):
    """Deletes ``numpy.cos``: the next ``np.cos`` raises."""
    table = vaswani(num_positions, dim)
    del np.cos
    return table


def rebinds_math_sqrt_to_an_equal_fake(num_positions, dim):
    """Rebinds ``math.sqrt`` to an object that says it equals the original."""
    table = vaswani(num_positions, dim)
    math.sqrt = _EqualToEverything()
    return table


def rebinds_print(num_positions, dim):
    """Rebinds ``builtins.print`` to a function that prints nothing."""
    table = vaswani(num_positions, dim)
    builtins.print = lambda *values, **options: None
    return table


def _stacked_vaswani(num_positions, dim):
    """The vaswani table, its sines and cosines interleaved by ``numpy.stack`` (a Python
    function behind NumPy's dispatcher) on its default axis, in its default dtype."""
    theta = angles(num_positions, dim)
    stacked = np.stack([np.sin(theta), np.cos(theta)])
    return stacked.transpose(1, 2, 0).reshape(num_positions, dim).astype(np.float32)


def _reversed_stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return arrays[::-1]


def changes_code_in_place(num_positions, dim):
    """Replaces the code of ``numpy.stack``'s implementation (no attribute rebound): the
    next stack returns its list reversed."""
    table = _stacked_vaswani(num_positions, dim)
    np.stack._implementation.__code__ = _reversed_stack.__code__
    return table


def changes_defaults_in_place(num_positions, dim):
    """Replaces the defaults of ``numpy.stack``'s implementation: the default axis becomes 1."""
    table = _stacked_vaswani(num_positions, dim)
    np.stack._implementation.__defaults__ = (1, None)
    return table


def replaces_keyword_defaults(num_positions, dim):
    """Replaces the keyword defaults of ``numpy.stack``'s implementation: it stacks in float16."""
    table = _stacked_vaswani(num_positions, dim)
    np.stack._implementation.__kwdefaults__ = {"dtype": np.float16, "casting": "same_kind"}
    return table


def changes_a_keyword_default(num_positions, dim):
    """Changes one entry of ``numpy.stack``'s keyword defaults, the dictionary kept: it
    stacks in float16."""
    table = _stacked_vaswani(num_positions, dim)
    np.stack._implementation.__kwdefaults__["dtype"] = np.float16
    return table


def _embedded_vaswani(num_positions, dim):
    """The vaswani table looked up, row by row, in a ``torch.nn.Embedding`` holding it."""
    embedding = torch.nn.Embedding.from_pretrained(torch.from_numpy(vaswani(num_positions, dim)))
    return embedding(torch.arange(num_positions)).detach()


def rebinds_an_embedding_forward(num_positions, dim):
    """Rebinds ``torch.nn.Embedding.forward`` (a subclass of ``torch.nn.Module`` in
    ``torch.nn``): every later lookup reads the rows in reverse."""
    table = _embedded_vaswani(num_positions, dim)
    torch.nn.Embedding.forward = lambda self, positions: self.weight.flip(0)[positions]
    return table


def adds_a_helper(num_positions, dim):
    """Adds a new attribute to NumPy and to ``torch.Tensor`` (hiding nothing): no change."""
    np.posenc_hostile_helper = vaswani
    torch.Tensor.posenc_hostile_helper = vaswani
    return vaswani(num_positions, dim)


def reaches_torch_compiler(num_positions, dim):
    """Reaches ``torch._dynamo`` through torch's lazy ``__getattr__``: importing it binds
    new attributes and rewraps ``torch.manual_seed``, which is that import's doing, kept as
    the caller's program would keep it. Verdict: conforms."""
    assert torch._dynamo.is_compiling() is False
    return vaswani(num_positions, dim)


def torch_table(num_positions, dim):
    """A correct table computed with ``torch.sin``, ``torch.cos`` and ``Tensor.__pow__``,
    run after the patching targets of the same run. Verdict: conforms."""
    return _torch_vaswani(num_positions, dim)


def numpy_table(num_positions, dim):
    """A correct table computed with ``numpy.sin``, ``numpy.cos`` and ``numpy.stack``, run
    after the patching targets of the same run. Verdict: conforms."""
    return _stacked_vaswani(num_positions, dim)


def embedding_table(num_positions, dim):
    """A correct table looked up in a ``torch.nn.Embedding``, run after the patching
    targets of the same run. Verdict: conforms."""
    return _embedded_vaswani(num_positions, dim)
