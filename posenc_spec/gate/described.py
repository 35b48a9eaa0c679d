"""A call description: how the gate calls a target and reads its result, written as the call.

``call = "precompute_freqs_cis(head_dim, num_positions, theta=10000.0)"`` says which argument
gets which *role*: each name in the arguments is a role of the declared API (its family
lists them, :attr:`~posenc_spec.gate.family.FamilyKeys.roles`), any other value a constant.
The grammar, read with :mod:`ast` (nothing is evaluated here)::

    call      := head step*
    head      := NAME                         the target (any name: the one it has in its module)
    step      := "(" arguments ")"            a call
               | "." NAME                     an attribute (a method, or a table kept as ``pe``)
               | "[" INT | STRING "]"         one element of a returned tuple, list or dict
    arguments := value ("," value)* ("," NAME "=" value)*   positional first, then keywords
    value     := ROLE | NUMBER | STRING | True | False | None

At least one step is a call. A call followed by an attribute or another call builds an
object (``Class(dim=head_dim).forward(positions)[0]``, ``Class(d_model=dim, max_len=num_positions).pe``):
the child keeps one per distinct set of arguments for the whole turn, in ``eval()`` mode,
and runs every call of such a description under ``torch.no_grad()``, as a model keeps and
runs its modules. A subscript picks the element that holds the result; the others are
ignored. Anything else (an expression, ``*args``, a slice, a name that is no role) is a
:class:`UsageError` naming the offending part and the API's roles.

The description travels to the child as :meth:`CallForm.steps`, plain JSON; the child's
:mod:`posenc_spec.gate.child.described` makes the call with the request's role values.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import math
from dataclasses import dataclass

from .errors import UsageError
from .values import plain, shown

LITERALS = (int, float, str, bool, type(None))


@dataclass(frozen=True)
class CallForm:
    """A validated call description: ``text`` as written, ``steps`` (each ``("call", args,
    keywords)``, ``("attr", name)`` or ``("item", key)``; an argument ``("role", name)`` or
    ``("value", constant)``; keywords sorted ``(name, argument)`` pairs), ``head`` the name the
    target is written under."""

    text: str
    head: str
    steps: tuple

    @property
    def roles(self) -> frozenset[str]:
        """The roles the call hands the target."""
        return frozenset(argument[1] for step in self.steps if step[0] == "call"
                         for argument in (*step[1], *(value for _, value in step[2])) if argument[0] == "role")

    def as_json(self) -> list:
        """The steps as the child reads them (lists and plain values)."""
        made = []
        for step in self.steps:
            if step[0] == "call":
                made.append(["call", [list(argument) for argument in step[1]],
                             {name: list(argument) for name, argument in step[2]}])
            else:
                made.append(list(step))
        return made

    def builds(self) -> bool:
        """Whether the call builds an object first (a call followed by an attribute or a call)."""
        kinds = [step[0] for step in self.steps]
        return any(kind == "call" and following in ("attr", "call") for kind, following in itertools.pairwise(kinds))


def parse_call(text, roles: tuple[str, ...], key: str, api: str) -> CallForm:
    """The :class:`CallForm` of ``text`` for an API whose roles are ``roles``; a
    :class:`UsageError` naming ``key`` and the offending part otherwise."""
    text = plain(text)
    if type(text) is not str or not text.strip():
        raise UsageError(f"{key} must be a call such as \"fn({', '.join(roles[:2])})\", got {shown(text)}")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise UsageError(f"{key}: {text!r} is not a call ({error.msg})") from None
    reader = _Reader(text.strip(), roles, key, api)
    head, steps = reader.chain(tree)
    if not any(step[0] == "call" for step in steps):
        raise UsageError(f"{key}: {text!r} calls nothing: write the call, such as {head}({', '.join(roles[:2])})")
    return CallForm(text.strip(), head, tuple(steps))


class _Reader:
    """Reads one description's tree into steps, refusing every other kind of node."""

    def __init__(self, text: str, roles: tuple[str, ...], key: str, api: str):
        self.text, self.roles, self.key, self.api = text, roles, key, api

    def refuse(self, node, problem: str):
        part = ast.get_source_segment(self.text, node) or ast.dump(node)
        raise UsageError(f"{self.key}: {part!r} {problem}; a call description takes the roles of the {self.api} "
                         f"API ({', '.join(self.roles)}), numbers, strings, True, False and None")

    def chain(self, node) -> tuple[str, list]:
        steps = []
        while not isinstance(node, ast.Name):
            if isinstance(node, ast.Call):
                steps.append(self.call(node))
                node = node.func
            elif isinstance(node, ast.Attribute):
                steps.append(("attr", node.attr))
                node = node.value
            elif isinstance(node, ast.Subscript):
                steps.append(("item", self.index(node.slice)))
                node = node.value
            else:
                self.refuse(node, "is not a name, a call, an attribute or a subscript")
        return node.id, steps[::-1]

    def call(self, node: ast.Call) -> tuple:
        arguments = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                self.refuse(argument, "unpacks arguments")
            arguments.append(self.value(argument))
        keywords = []
        for keyword in node.keywords:
            if keyword.arg is None:
                self.refuse(keyword.value, "unpacks keyword arguments")
            keywords.append((keyword.arg, self.value(keyword.value)))
        return ("call", tuple(arguments), tuple(sorted(keywords)))

    def value(self, node) -> tuple:
        if isinstance(node, ast.Name):
            if node.id in self.roles:
                return ("role", node.id)
            close = difflib.get_close_matches(node.id, self.roles, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"{self.key}: {node.id!r} is no role of the {self.api} API{hint}; its roles: "
                             f"{', '.join(self.roles)}")
        constant = self.constant(node)
        if constant is None and not (isinstance(node, ast.Constant) and node.value is None):
            self.refuse(node, "is neither a role nor a constant")
        if type(constant) is float and not math.isfinite(constant):
            self.refuse(node, "is not a finite number")
        return ("value", constant)

    @staticmethod
    def constant(node):
        """A literal's value (a number with its sign), else None."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and type(node.operand.value) in (int, float):
            return -node.operand.value
        if isinstance(node, ast.Constant) and type(node.value) in LITERALS:
            return node.value
        return None

    def index(self, node):
        value = self.constant(node)
        if type(value) not in (int, str):
            self.refuse(node, "is not an element's index or key (an integer or a string)")
        return value
