"""How a target is called: the signature its author gave it, and the object to build first.

The gate calls each API in one canonical form. Real code has other signatures; a
declaration names the one its target has, and the child calls it so
(:mod:`posenc_spec.gate.child.adapters` and the family's own ``adapters.py``), with no
wrapper to write. Each family lists its APIs' signatures, the first the canonical call, and
the sizes of a call that ``init`` and ``kwargs`` may name
(:attr:`~posenc_spec.gate.family.FamilyKeys.signatures`, ``sizes``); ``docs/declaring.md``
shows the declaration real code needs for each.

``kwargs`` passes keyword arguments on every call, as a caller fixes a function's options
(diffusers' ``get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0)``),
with the same ``"{name}"`` sizes as ``init``.

``init`` builds an object of a class target first, then ``method`` (default: the object
itself, its ``forward``) is called: keyword arguments, in which ``"{name}"`` stands for a
size of the call or of the declaration, or ``"config"``: ``Class(config=...)`` from the
model config the family's ``config_key`` names, as transformers builds its modules. A
module the gate builds runs in ``eval()`` mode under ``torch.no_grad()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from posenc_spec import registry

from .described import CallForm, parse_call
from .errors import UsageError
from .values import MAX_INT, choice, fail, integer, number, plain, shown

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")


@dataclass(frozen=True)
class Calling:
    """How the target is called: ``signature`` (see the module docstring), ``init`` (sorted
    ``(name, value)`` pairs, ``"config"``, or None: the target is called as it is),
    ``method`` and ``kwargs`` (sorted ``(name, value)`` pairs passed on every call), or
    ``form``: a call description, which says all of them (the signature then the API's own)."""

    signature: str
    init: tuple | str | None = None
    method: str | None = None
    kwargs: tuple = ()
    form: CallForm | None = None

    @property
    def adapted(self) -> bool:
        """Whether the child must adapt the call (False: the target takes the canonical call)."""
        return (self.signature not in DEFAULTS or self.init is not None or self.method is not None
                or bool(self.kwargs) or self.form is not None)

    @property
    def roles(self) -> frozenset[str]:
        """The roles a call description hands the target (empty without one)."""
        return self.form.roles if self.form is not None else frozenset()

    def describe(self) -> str:
        """``Class(dim={head_dim}).method, q-k-cos-sin`` (empty for the canonical call)."""
        if self.form is not None:
            return f"called as {self.form.text}"
        made = ""
        if self.init == "config":
            made = "built from its config"
        elif self.init:
            made = "built with " + ", ".join(f"{name}={value}" for name, value in self.init)
        given = ("called with " + ", ".join(f"{name}={value}" for name, value in self.kwargs)) if self.kwargs else ""
        parts = [part for part in (made, f"method {self.method}" if self.method else "", given,
                                   "" if self.signature in DEFAULTS else self.signature) if part]
        return "; ".join(parts)

    def as_dict(self) -> dict:
        if self.form is not None:
            return {"call": self.form.text}
        init = self.init if self.init is None or self.init == "config" else dict(self.init)
        return {"signature": self.signature, "init": init, "method": self.method,
                **({"kwargs": dict(self.kwargs)} if self.kwargs else {})}

    def sizes_handed(self) -> set[str]:
        """The sizes ``init`` and ``kwargs`` hand the target (``"{rope_theta}"`` hands the declared rope_theta),
        or the roles a call description hands it."""
        if self.form is not None:
            return set(self.form.roles)
        pairs = (*(self.init if isinstance(self.init, tuple) else ()), *self.kwargs)
        return {match.group(1) for _, value in pairs
                if isinstance(value, str) and (match := _PLACEHOLDER.match(value)) is not None}

    def declared_keys(self) -> dict:
        """The keys that declare this way of calling, those that differ from the API's own call
        (what ``identify``'s answer is written with)."""
        keys = {key: value for key, value in self.as_dict().items() if key != "signature" and value}
        return keys | ({"signature": self.signature} if self.signature not in DEFAULTS else {})

    def preset_form(self, api: str) -> CallForm | None:
        """The call description of the declared signature with ``init``, ``method`` and ``kwargs``
        spliced in, where the family says the signature as one
        (:attr:`~posenc_spec.gate.family.FamilyKeys.presets`) and every size they name is a
        role; None otherwise (the family's own adapter makes the call)."""
        names = registry.names_of_api(api)
        text = names.presets.get(api, {}).get(self.signature)
        if text is None or self.init == "config":
            return None
        roles = names.roles[api]
        preset = parse_call(text, roles, "signature", api)
        init = _described_arguments(self.init or (), roles)
        kwargs = _described_arguments(self.kwargs, roles)
        if init is None or kwargs is None:
            return None
        kind, arguments, keywords = preset.steps[0]
        steps = ((("call", (), init),) if self.init else ()) + ((("attr", self.method),) if self.method else ()) \
            + ((kind, arguments, tuple(sorted((*keywords, *kwargs)))), *preset.steps[1:])
        return CallForm(text, preset.head, steps)

    def for_child(self, api: str, sizes: dict, options: dict) -> dict | None:
        """What the child needs to call the target (None: call it as it is); ``options``:
        what the adapters read besides (``x_layout``, ``config``). A family whose adapters
        make every call (:attr:`~posenc_spec.gate.family.FamilyKeys.adapters`) is named in it.
        ``call``: the steps of the call description the child makes, the user's (signature
        :data:`DESCRIBED`) or the signature's preset; a target the family calls as it is
        (canonical, no ``init``, ``method`` or ``kwargs``) is still handed over as it is."""
        names = registry.names_of_api(api)
        if not self.adapted and not names.adapters:
            return None
        family = {"family": names.name} if names.adapters else {}
        if self.form is not None:
            return {"api": api, "signature": DESCRIBED, "call": self.form.as_json(), "init": None, "method": None,
                    "kwargs": {}, **options, "sizes": sizes, **family}
        signature = self.signature if self.signature not in DEFAULTS else "canonical"
        preset = self.preset_form(api)
        return {"api": api, "signature": signature, "init": dict(self.init) if isinstance(self.init, tuple)
                else self.init, "method": self.method, "kwargs": dict(self.kwargs), **options, "sizes": sizes,
                **family, **({"call": preset.as_json()} if preset is not None else {})}


# The signature the child is told for a call description the user wrote (no target takes it as it is).
DESCRIBED = "described"
DEFAULTS = frozenset(signatures[0] for names in registry.names() for signatures in names.signatures.values())


def _described_arguments(pairs, roles) -> tuple | None:
    """``init`` or ``kwargs`` pairs as a description's keywords: a ``"{size}"`` is that role,
    anything else a constant; None where a size is no role of the API."""
    made = []
    for argument, value in pairs:
        match = _PLACEHOLDER.match(value) if isinstance(value, str) else None
        if match is not None and match.group(1) not in roles:
            return None
        made.append((argument, ("role", match.group(1)) if match is not None else ("value", value)))
    return tuple(made)


def calling(keys: dict, api: str, name) -> Calling:
    """The :class:`Calling` of ``keys`` (``signature``, ``init``, ``method``, ``kwargs``) for
    ``api``, whose family names its signatures and sizes; each bad value a
    :class:`UsageError` naming its key (``name(key)``)."""
    names = registry.names_of_api(api)
    if "call" in keys:
        return Calling(names.signatures[api][0], form=_form(keys, api, name, names))
    signature = choice(name("signature"), keys.get("signature", names.signatures[api][0]), names.signatures[api])
    init = _init(keys["init"], api, name, names.config_key, names.config_key in keys) if "init" in keys else None
    kwargs = _arguments(keys["kwargs"], api, "kwargs", name) if "kwargs" in keys else ()
    method = keys.get("method")
    if method is not None and (not isinstance(method, str) or not _IDENTIFIER.fullmatch(method)):
        fail(name("method"), "the name of a method, such as forward or rotate_queries_or_keys", method)
    return Calling(signature, init, method, kwargs)


def _form(keys: dict, api: str, name, names) -> CallForm:
    """The validated call description of ``keys["call"]``, alone of the keys that say how a target is called."""
    given = [key for key in ("signature", "init", "method", "kwargs") if key in keys]
    if given:
        raise UsageError(f"{name('call')} says how the target is called, so {', '.join(map(name, given))} cannot "
                         "be given beside it (write their arguments into the call)")
    roles = names.roles.get(api)
    if not roles:
        raise UsageError(f"{name('call')}: the {api} API takes no call description; declare its signature "
                         f"({', '.join(names.signatures[api])})")
    return parse_call(keys["call"], roles, name("call"), api)


def _is_config(value) -> bool:
    """Whether ``value`` is the text "config" (never asking a caller's object)."""
    value = plain(value)
    return type(value) is str and value == "config"


def _init(value, api: str, name, config_key: str | None, has_config: bool):
    value = plain(value)
    if isinstance(value, (list, tuple)) and len(value) == 1 and _is_config(value[0]):  # --init config
        value = "config"
    if _is_config(value):
        if not has_config:
            needs = f"\"config\" with a {config_key} (a transformers config.json), or " if config_key else ""
            fail(name("init"), f"{needs}a table of keyword arguments", value)
        return "config"
    return _arguments(value, api, "init", name)


def _arguments(value, api: str, key: str, name) -> tuple:
    """Keyword arguments (``init``'s or ``kwargs``') as sorted pairs, each value plain or a
    size of the call."""
    if isinstance(value, (list, tuple)):  # the command line's repeated --KEY NAME=VALUE
        try:
            value = parse_keyword_texts(value)
        except ValueError as error:
            raise UsageError(f"{name(key)}: {error}") from None
    if not isinstance(value, dict) or not value:
        fail(name(key), "a table of keyword arguments, such as {dim = \"{head_dim}\"}"
                        + (", or \"config\"" if key == "init" else ""), value)
    known = registry.names_of_api(api).sizes[api]
    pairs = []
    for argument, item in value.items():
        argument, item = plain(argument), plain(item)
        if not isinstance(argument, str) or not _IDENTIFIER.fullmatch(argument):
            fail(name(key), "keyword argument names", argument)
        if not isinstance(item, (bool, int, float, str)):
            fail(f"{name(key)}.{argument}", "a number, true or false, a word, or a size such as \"{head_dim}\"", item)
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            number(f"{name(key)}.{argument}", item)  # finite, within a float64, not subnormal
            if isinstance(item, int):
                integer(f"{name(key)}.{argument}", item, minimum=-MAX_INT - 1)
        match = _PLACEHOLDER.match(item) if isinstance(item, str) else None
        if match is not None and match.group(1) not in known:
            fail(f"{name(key)}.{argument}", f"one of {', '.join('{' + size + '}' for size in known)} for the {api} API",
                 item)
        pairs.append((argument, item))
    return tuple(sorted(pairs))


def parse_keyword_texts(items) -> dict:
    """``KEY=VALUE`` texts (the command line's repeated ``--init`` or ``--kwarg``) as a table: a value that
    reads as a number, ``true`` or ``false`` is one, anything else a word."""
    table = {}
    for item in map(plain, items):
        key, equals, text = item.partition("=") if type(item) is str else ("", "", "")
        if not equals or not key.strip():
            raise ValueError(f"expected KEY=VALUE, got {shown(item)}")
        if key.strip() in table:
            raise ValueError(f"{key.strip()!r} given twice")
        table[key.strip()] = _literal(text.strip())
    return table


def _literal(text: str):
    if text in ("true", "false"):
        return text == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text
