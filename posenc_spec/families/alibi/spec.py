"""An ALiBi declaration: the preset, the fields that override it, and the model's head count.

Keys (:mod:`.keys` names them; :mod:`.conventions` says what each field means)::

    convention          a preset (default "paper"); the keys below override its fields
    slope_rule          "paper" | "geometric"
    alibi_bias_max      a number in (0, 64]                                 (default 8)
    alibi_heads         partial ALiBi: an int from 1 to 4096, at most num_heads
    bias_form           "causal" | "symmetric" | "key" | "key-last"
    bias_region         "causal" | "full"
    query_positions     "last" | "first"
    key_positions       "index" | "mask-cumsum"
    compute_dtype       "float64" | "float32" | "float16" | "bfloat16" (the field bias_dtype)
    up_to_row_constant  true | false
    num_heads           the model's head count (1 to 4096): the grid calls only it

The ``alibi-slopes`` API judges slopes alone: the keys that describe the bias are refused
there, naming the API that reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.values import boolean, choice, integer, number

from .conventions import (
    BIAS_FORMS,
    COMPUTE_DTYPES,
    MAX_BIAS_MAX,
    MAX_HEADS,
    POSITIONS,
    PRESETS,
    QUERIES,
    REGIONS,
    SLOPE_RULES,
    AlibiConvention,
)
from .grid import HEAD_COUNTS
from .keys import BIAS_API, BIAS_FIELDS, BIAS_KEYS, FIELD_KEYS, SLOPES_API

DEFAULT_PRESET = "paper"


def _short(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class AlibiSpec:
    """The declared convention (``preset`` and its fields), the API's signature, and the
    model's head count when one is declared (``num_heads``)."""

    convention: AlibiConvention
    preset: str = DEFAULT_PRESET
    signature: str = "heads"
    attention_heads: int | None = None

    @property
    def slopes_only(self) -> bool:
        return self.signature == "heads"

    def changed(self) -> list[str]:
        """``key=value`` for each field that differs from the preset's."""
        preset = PRESETS[self.preset]
        fields = [field for field in FIELD_KEYS if not (self.slopes_only and field in BIAS_FIELDS)]
        return [f"{FIELD_KEYS[field]}={_short(getattr(self.convention, field))}" for field in fields
                if getattr(self.convention, field) != getattr(preset, field)]

    def describe(self) -> str:
        """The preset's name, with the fields that differ from it and the declared head count."""
        changed = self.changed() + ([f"num_heads={self.attention_heads}"] if self.attention_heads else [])
        return self.preset + (f" ({', '.join(changed)})" if changed else "")

    def as_dict(self) -> dict:
        fields = self.convention.as_dict()
        if self.slopes_only:
            fields = {key: value for key, value in fields.items() if key not in BIAS_FIELDS}
        return {**fields, "attention_heads": self.attention_heads}

    def header_parts(self) -> list[str]:
        return [self.describe()]

    def child_sizes(self) -> dict:
        return {"alibi_bias_max": self.convention.alibi_bias_max}

    def child_options(self) -> dict:
        return {}


# The calls a call description's roles ask of the grid (docs/declaring.md, "Call descriptions"):
# the signature whose calls hand the same arguments, the first role found deciding.
SIGNATURE_OF_ROLES = (("attention_mask", "mask-heads-dtype"), ("scores", "module-scores"),
                      ("query_length", "module-ij"), ("causal_mask", "module-ij"))


def grid_signature(calling, api: str) -> str:
    """The signature whose calls the grid makes and whose results it reads: the declared one,
    or for a call description the one handing the same arguments (:data:`SIGNATURE_OF_ROLES`;
    a bias call of ``num_heads`` and ``key_length`` alone: ``heads-length``)."""
    if calling.form is None:
        return calling.signature
    if api == SLOPES_API:
        return "heads"
    return next((signature for role, signature in SIGNATURE_OF_ROLES if role in calling.roles), "heads-length")


def declare(keys: dict, context) -> AlibiSpec:
    """The :class:`AlibiSpec` of ``keys`` (see the module docstring)."""
    name, api = context.name, context.api
    if "x_layout" in keys:
        raise UsageError(f"{name('x_layout')}: the {api} API takes no x")
    if api == SLOPES_API:
        given = [key for key in BIAS_KEYS if key in keys]
        if given:
            raise UsageError(f"{name(given[0])} is read by --api {BIAS_API}, not by --api {SLOPES_API} (slopes alone)")
    preset = choice(name("convention"), keys.get("convention", DEFAULT_PRESET), tuple(PRESETS))
    choices = {"slope_rule": SLOPE_RULES, "bias_form": BIAS_FORMS, "bias_region": REGIONS,
               "query_positions": QUERIES, "key_positions": POSITIONS, "bias_dtype": COMPUTE_DTYPES}
    fields = {field: choice(name(FIELD_KEYS[field]), keys[FIELD_KEYS[field]], options)
              for field, options in choices.items() if FIELD_KEYS[field] in keys}
    if "alibi_bias_max" in keys:
        fields["alibi_bias_max"] = float(number(name("alibi_bias_max"), keys["alibi_bias_max"], above=0,
                                                maximum=MAX_BIAS_MAX))
    if "alibi_heads" in keys:
        fields["alibi_heads"] = integer(name("alibi_heads"), keys["alibi_heads"], maximum=MAX_HEADS)
    if "up_to_row_constant" in keys:
        fields["up_to_row_constant"] = boolean(name("up_to_row_constant"), keys["up_to_row_constant"])
    heads = integer(name("num_heads"), keys["num_heads"], maximum=MAX_HEADS) if "num_heads" in keys else None
    try:
        convention = PRESETS[preset].replace(**fields)
    except ValueError as error:
        raise UsageError(f"{context.where}ALiBi keys: {error}") from None
    if heads is None and convention.alibi_heads is not None and convention.alibi_heads > HEAD_COUNTS[-1]:
        raise UsageError(f"{name('alibi_heads')} {convention.alibi_heads} is more than the {HEAD_COUNTS[-1]} heads the "
                         f"grid calls: declare the model's {name('num_heads')}")
    if heads is not None and convention.alibi_heads is not None and convention.alibi_heads > heads:
        raise UsageError(f"{name('alibi_heads')} {convention.alibi_heads} exceeds {name('num_heads')} {heads}: "
                         "partial ALiBi biases some of the model's heads")
    signature = grid_signature(context.calling, api)
    if signature == "mask-heads-dtype" and not convention.key_only:
        key = name("call") if context.calling.form is not None else f"{name('signature')} mask-heads-dtype"
        raise UsageError(f"{key} returns one row of keys for every query (BLOOM, "
                         f"Falcon): declare a key-only bias_form (key or key-last; convention bloom or falcon), "
                         f"got bias_form {convention.bias_form!r}")
    return AlibiSpec(convention, preset, signature, heads)
