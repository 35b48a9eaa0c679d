"""ALiBi (attention with linear biases): the family of conventions, and its named members.

A head ``h`` of ``n`` adds ``m_h * d(i, j)`` to the attention score of query ``i`` and key
``j``: a slope ``m_h`` per head times an integer distance. Every slope is a power of two
with a rational exponent, ``m_h = 2 ** -e_h``; with ``B = alibi_bias_max`` (8 in the paper):

- ``paper`` (Press et al.'s code; BLOOM, MPT, Falcon, x-transformers): for ``n`` a power of
  two, ``e_h = B h / n`` (``h = 1 .. n``). Otherwise, with ``P = 2 ** floor(log2 n)``: the
  ``P`` slopes of ``P`` heads, ``e_h = B h / P``, then the odd members of the sequence for
  ``2P`` heads, ``e = B (2k - 1) / (2P)`` for ``k = 1 .. n - P`` (BLOOM-176B's 112 heads:
  64 of the first kind, 48 of the second; Falcon-7B's 71: 64 and 7).
- ``geometric`` (the paper's prose, and code that never special-cases ``n``):
  ``e_h = B h / n`` for every ``n``.

Each slope is also the power ``a_h`` of the finest ratio the rule uses, ``r = 2 ** (-B / c)``
(``c = n`` for a power of two or under ``geometric``, else ``2P``): ``m_h = r ** a_h``. The
slopes' error bound grows with ``a_h`` (:mod:`.tolerance`), so it is kept beside ``e_h``.

Partial ALiBi (``alibi_heads = k < n``, x-transformers' ``alibi_num_heads``): the first
``k`` heads take the slopes of ``k`` heads; the other ``n - k`` add nothing.

The distance ``d`` (``q``, ``k``: the positions of query ``i`` and key ``j``):

- ``causal``: ``d = k - q`` (the paper's ``-m (i - j)``: 0 on the diagonal, negative into the past);
- ``symmetric``: ``d = -|k - q|`` (bidirectional: x-transformers, MosaicBERT, Jina);
- ``key``: ``d = k``, one row for every query (BLOOM, Falcon, the paper's fairseq code);
- ``key-last``: ``d = k - k_last``, one row, 0 at the last key (MPT, keras-hub).

The two key-only forms differ from ``causal`` by a constant in each query row (``m q`` and
``m (q - k_last)``), so softmax gives the same attention; ``up_to_row_constant`` declares
that only this is promised, and any constant per row is then accepted.

``bias_region``: ``causal`` judges the keys at or before each query (the rest is masked by
the attention anyway), ``full`` every key. ``query_positions``: a call of ``q_len`` queries
over ``k_len`` keys puts them at the ``last`` positions (decoding: one query at
``k_len - 1``) or the ``first``. ``key_positions``: ``index`` (key ``j`` is at ``j``) or
``mask-cumsum`` (BLOOM:
``(cumsum(mask) - 1) * mask``, so padding takes no position; padded keys are not judged).
``bias_dtype``: the precision the bias is formed in, declared where a model was trained
with one (Falcon: ``bfloat16``); ``None`` holds a bias to float32 arithmetic.

Everything that needs a slope asks :meth:`AlibiConvention.slope_terms`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

SLOPE_RULES = ("paper", "geometric")
BIAS_FORMS = ("causal", "symmetric", "key", "key-last")
KEY_FORMS = ("key", "key-last")  # one row for every query
REGIONS = ("causal", "full")
QUERIES = ("last", "first")
POSITIONS = ("index", "mask-cumsum")
COMPUTE_DTYPES = ("float64", "float32", "float16", "bfloat16")
MAX_HEADS = 4096
MAX_BIAS_MAX = 64.0  # 2 ** -64 is the smallest slope then: far below any use, still a normal float32


def _choice(name: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def check_heads(value, name: str = "num_heads") -> int:
    """A head count: an int from 1 to :data:`MAX_HEADS` (bool and floats refused)."""
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    count = int(value.__index__()) if not isinstance(value, int) else value
    if not 1 <= count <= MAX_HEADS:
        raise ValueError(f"{name} must be from 1 to {MAX_HEADS}, got {count}")
    return count


class SlopeTerm(NamedTuple):
    """One head's slope ``2 ** -exponent`` (exact), and ``power``: the ``a`` of ``r ** a``."""

    exponent: Fraction
    power: int


@dataclass(frozen=True)
class AlibiConvention:
    """One member of the family. Fields are validated on construction; an error is one line
    naming the field and the value."""

    slope_rule: str = "paper"
    alibi_bias_max: float = 8.0
    alibi_heads: int | None = None
    bias_form: str = "causal"
    bias_region: str = "causal"
    query_positions: str = "last"
    key_positions: str = "index"
    bias_dtype: str | None = None
    up_to_row_constant: bool = False

    def __post_init__(self):
        _choice("slope_rule", self.slope_rule, SLOPE_RULES)
        _choice("bias_form", self.bias_form, BIAS_FORMS)
        _choice("bias_region", self.bias_region, REGIONS)
        _choice("query_positions", self.query_positions, QUERIES)
        _choice("key_positions", self.key_positions, POSITIONS)
        bias_max = self.alibi_bias_max
        if isinstance(bias_max, bool) or not isinstance(bias_max, (int, float)) or not math.isfinite(bias_max) \
                or not 0 < bias_max <= MAX_BIAS_MAX:
            raise ValueError(f"alibi_bias_max must be a number in (0, {MAX_BIAS_MAX:g}], got {bias_max!r}")
        object.__setattr__(self, "alibi_bias_max", float(bias_max))
        if self.alibi_heads is not None:
            object.__setattr__(self, "alibi_heads", check_heads(self.alibi_heads, "alibi_heads"))
        if self.bias_dtype is not None:
            _choice("bias_dtype", self.bias_dtype, COMPUTE_DTYPES)
        if not isinstance(self.up_to_row_constant, bool):
            raise ValueError(f"up_to_row_constant must be true or false, got {self.up_to_row_constant!r}")
        if self.key_positions == "mask-cumsum" and self.bias_form not in KEY_FORMS:
            raise ValueError(f"key_positions 'mask-cumsum' goes with a key-only bias_form ({', '.join(KEY_FORMS)}): "
                             f"an attention mask gives key positions, got bias_form {self.bias_form!r}")
        if self.bias_form == "symmetric" and self.up_to_row_constant:
            raise ValueError("up_to_row_constant does not apply to bias_form 'symmetric': -m|k - q| differs from "
                             "the causal form by more than a constant per row over the full region")

    # -- access ---------------------------------------------------------------

    def replace(self, **changes) -> AlibiConvention:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def key_only(self) -> bool:
        """Whether the bias is one row of keys, the same for every query."""
        return self.bias_form in KEY_FORMS

    def name(self) -> str:
        """The preset's name when this convention is one, else its non-default fields."""
        for preset_name, preset in PRESETS.items():
            if preset == self:
                return preset_name
        defaults = AlibiConvention()
        changed = [f"{field.name}={getattr(self, field.name)}" for field in dataclasses.fields(self)
                   if getattr(self, field.name) != getattr(defaults, field.name)]
        return " ".join(changed) or "paper"

    # -- slopes ----------------------------------------------------------------

    def biased_heads(self, num_heads) -> int:
        """How many of ``num_heads`` heads carry a bias: ``alibi_heads``, else all."""
        num_heads = check_heads(num_heads)
        if self.alibi_heads is None:
            return num_heads
        if self.alibi_heads > num_heads:
            raise ValueError(f"alibi_heads {self.alibi_heads} exceeds num_heads {num_heads}")
        return self.alibi_heads

    def slope_terms(self, num_heads) -> tuple[SlopeTerm, ...]:
        """The exact exponent and the power of each biased head's slope, head order."""
        return slope_terms(self.biased_heads(num_heads), self.slope_rule, self.alibi_bias_max)


@functools.lru_cache(maxsize=1024)
def slope_terms(count: int, rule: str = "paper", bias_max: float = 8.0) -> tuple[SlopeTerm, ...]:
    """The slopes of ``count`` heads under ``rule`` (see the module docstring), exactly:
    ``bias_max`` enters as the exact binary value of the float (cached: the judge asks for
    the same head counts call after call)."""
    count = check_heads(count, "heads")
    bound = Fraction(bias_max)
    closest = 1 << (count.bit_length() - 1)  # 2 ** floor(log2 count), exactly
    if rule == "geometric" or closest == count:
        return tuple(SlopeTerm(bound * h / count, h) for h in range(1, count + 1))
    _choice("slope_rule", rule, SLOPE_RULES)
    first = [SlopeTerm(bound * h / closest, 2 * h) for h in range(1, closest + 1)]
    extra = [SlopeTerm(bound * (2 * k - 1) / (2 * closest), 2 * k - 1) for k in range(1, count - closest + 1)]
    return tuple(first + extra)


PRESETS: dict[str, AlibiConvention] = {
    # The paper's bias as its text writes it, the slopes of its code.
    "paper": AlibiConvention(),
    # transformers' BLOOM: build_alibi_tensor(attention_mask, num_heads, dtype), slopes * key positions.
    "bloom": AlibiConvention(bias_form="key", key_positions="mask-cumsum"),
    # transformers' Falcon (RW, ALiBi variants): BLOOM's bias, formed in bfloat16.
    "falcon": AlibiConvention(bias_form="key", key_positions="mask-cumsum", bias_dtype="bfloat16"),
    # MPT (llm-foundry, transformers' build_mpt_alibi_tensor), keras-hub's AlibiBias: 0 at the last key.
    "mpt": AlibiConvention(bias_form="key-last"),
    # x-transformers' AlibiPositionalBias, OpenNMT-py, MosaicBERT: -m|i - j| over every pair.
    "bidirectional": AlibiConvention(bias_form="symmetric", bias_region="full"),
    # The paper's fairseq code: slopes * arange(maxpos), added to the causal mask.
    "fairseq": AlibiConvention(bias_form="key"),
    # labml's annotated ALiBi: slopes * cumsum of the causal mask (keys counted from 1).
    "labml": AlibiConvention(bias_form="key", up_to_row_constant=True),
    # Code that never special-cases head counts that are not powers of two (and the paper's prose).
    "geometric": AlibiConvention(slope_rule="geometric"),
}

FIELDS = tuple(field.name for field in dataclasses.fields(AlibiConvention))


def get_convention(name: str | AlibiConvention = "paper", **overrides) -> AlibiConvention:
    """A preset by name (or a convention) with fields replaced by ``overrides``; ``None``
    values are ignored, so parsed flags pass straight in."""
    if isinstance(name, AlibiConvention):
        convention = name
    elif isinstance(name, str) and name in PRESETS:
        convention = PRESETS[name]
    else:
        raise ValueError(f"alibi_convention must be one of {', '.join(PRESETS)}, got {name!r}")
    changes = {key: value for key, value in overrides.items() if value is not None}
    unknown = sorted(set(changes) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown ALiBi key(s) {', '.join(unknown)}; known: {', '.join(FIELDS)}")
    return convention.replace(**changes) if changes else convention


def from_keys(keys: Mapping) -> AlibiConvention:
    """The convention a declaration's keys state: ``alibi_convention`` (a preset, default
    ``paper``) and any field of :class:`AlibiConvention` by name."""
    if not isinstance(keys, Mapping):
        raise ValueError(f"the ALiBi keys must be a table, got {keys!r}")
    keys = dict(keys)
    return get_convention(keys.pop("alibi_convention", "paper"), **keys)
