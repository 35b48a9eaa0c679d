"""A call description made in the sealed child (:mod:`posenc_spec.gate.described` reads and
validates it in the parent; this module gets its steps as JSON).

:class:`Described` calls the target with a request's role values: each ``("role", name)``
argument takes the value the family's adapter computed for that role, each ``("value", v)``
is the constant. A call followed by an attribute or another call builds an object, kept for
the turn per distinct set of arguments (one ``torch.nn.Module`` in ``eval()`` mode), and the
whole description then runs under ``torch.no_grad()``. An element of a returned tuple, list
or dict is read with the base type's own methods (:mod:`.convert`'s rule: none of a result's
own code runs while the gate reads it); anything else has no element to pick and is a
:class:`~.convert.BadResult` naming what came back. An attribute is read with ``getattr``:
it belongs to an object the target's own code made, as the methods it calls do.
"""

from __future__ import annotations

import contextlib
import itertools

from .convert import BadResult

try:
    import torch
except ImportError:
    torch = None

_HASHABLE = (int, float, str, bool, type(None))


def _key(values) -> tuple | None:
    """The arguments of a building call as a key (None: a tensor among them, nothing kept)."""
    if all(type(value) in _HASHABLE or (torch is not None and type(value) is torch.dtype) for value in values):
        return tuple(values)
    return None


def _element(result, index):
    """``result[index]`` where ``result`` is a tuple, list or dict, read by the base type."""
    cls = type(result)
    try:
        if issubclass(cls, tuple):
            return tuple.__getitem__(result, index)
        if issubclass(cls, list):
            return list.__getitem__(result, index)
        if issubclass(cls, dict):
            return dict.__getitem__(result, index)
    except (IndexError, KeyError, TypeError):
        size = len(tuple.__getitem__(result, slice(None))) if issubclass(cls, tuple) else None
        held = f" of {size} element(s)" if size is not None else ""
        raise BadResult(f"returned a {type.__getattribute__(cls, '__name__')}{held} that has no element "
                        f"[{index!r}]") from None
    raise BadResult(f"returned a {type.__getattribute__(cls, '__name__')} where [{index!r}] picks an element of a "
                    "tuple, list or dict")


class Described:
    """The target called as its description says (see the module docstring)."""

    def __init__(self, target, steps: list):
        self.target, self.steps = target, steps
        kinds = [step[0] for step in steps]
        self.building = {index for index, (kind, following) in enumerate(itertools.pairwise(kinds))
                         if kind == "call" and following in ("attr", "call")}
        self.objects: dict = {}

    def quiet(self):
        """``torch.no_grad()`` where the description builds an object (a module judged on its values)."""
        return torch.no_grad() if self.building and torch is not None else contextlib.nullcontext()

    def __call__(self, roles: dict):
        """What the described call returns, given each role's value."""
        with self.quiet():
            made = self.target
            for index, step in enumerate(self.steps):
                if step[0] == "attr":
                    made = getattr(made, step[1])
                elif step[0] == "item":
                    made = _element(made, step[1])
                else:
                    made = self._call(made, index, step, roles)
            return made

    def _call(self, function, index: int, step: list, roles: dict):
        arguments = [self._value(argument, roles) for argument in step[1]]
        keywords = {name: self._value(argument, roles) for name, argument in step[2].items()}
        if index not in self.building:
            return function(*arguments, **keywords)
        key = _key([index, *arguments, *(part for pair in sorted(keywords.items()) for part in pair)])
        if key is not None and key in self.objects:
            return self.objects[key]
        made = function(*arguments, **keywords)
        if torch is not None and isinstance(made, torch.nn.Module):
            made.eval()
        if key is not None:
            self.objects[key] = made
        return made

    @staticmethod
    def _value(argument, roles: dict):
        kind, value = argument
        if kind == "value":
            return value
        if roles.get(value) is None:  # a declared size the declaration leaves out (max_positions)
            raise ValueError(f"the role {value} has no value in this call")
        return roles[value]
