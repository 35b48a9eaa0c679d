"""Targets whose results (or exceptions) break when the child reads them.

The child converts a result inside the call's own error handling: whatever the object's
methods raise becomes a reason on ``call[...]``, never a crash of the child. A tensor's
methods are never called: the child reads its storage.
"""

from __future__ import annotations

import torch
from hostile_tables import vaswani


class Unconvertible:
    """An object whose ``__array__`` raises."""

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("__array__ refuses")


def array_method_raises(num_positions, dim):
    """Returns an object whose ``__array__`` raises.

    Verdict: does not conform; ``call[50x8]`` names the type and the exception."""
    return Unconvertible()


class ExplodingTensor(torch.Tensor):
    """A tensor subclass whose every torch function raises (``detach``, ``dtype``, ...)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"ExplodingTensor refuses {getattr(func, '__name__', func)}")


def exploding_tensor(num_positions, dim):
    """Returns the correct table as an :class:`ExplodingTensor`.

    Verdict: conforms; the child reads the table from its storage, calling none of its
    functions, and ``call[50x8]`` names the class."""
    return torch.from_numpy(vaswani(num_positions, dim)).as_subclass(ExplodingTensor)


class UnprintableError(Exception):
    """An exception whose ``__str__`` raises."""

    def __str__(self):
        raise RuntimeError("__str__ refuses")


def exception_str_raises(num_positions, dim):
    """Raises an exception that cannot be turned into text.

    Verdict: does not conform; ``call[50x8]`` names the exception's type."""
    raise UnprintableError()
