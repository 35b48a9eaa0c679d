"""The family of rotary position embeddings (RoPE), as Hugging Face configs name it.

One class, :class:`RopeConvention`, holds every scaling type's formula and the validation of
its parameters; they are kept together because each type's parameters mean something only
beside its formula.

Head size ``d`` (even), rotary size ``r`` (even: ``int(d * partial_rotary_factor)``, or an
absolute ``rotary_dim`` as GPT-J states it), pairs ``i = 0 .. r/2 - 1``::

    f_i = theta ** (-2i / r)                       theta = rope_theta, the base

Each scaling type turns ``f`` into the frequencies ``f'`` and an attention factor ``A``
that multiplies cos and sin (``s`` = ``factor``, ``L0`` = ``original_max_position_embeddings``,
``L`` = the sequence length a call covers, ``max(positions) + 1``):

- ``default``: ``f' = f``, ``A = 1``.
- ``linear``: ``f' = f / s``, ``A = 1``.
- ``dynamic``: ``L' = max(L, L0)``, ``theta' = theta * (s L'/L0 - (s - 1)) ** (r / (r - 2))``,
  ``f'_i = theta' ** (-2i/r)``, ``A = 1``. ``L0`` is ``original_max_position_embeddings`` when
  given, else ``max_position_embeddings`` (transformers reads only the latter).
- ``yarn``: ``low = floor(r ln(L0 / (2 pi beta_fast)) / (2 ln theta))``, ``high = ceil(r
  ln(L0 / (2 pi beta_slow)) / (2 ln theta))`` (no floor/ceil when ``truncate`` is false),
  clamped to ``low >= 0``, ``high <= r - 1``; ``high += 0.001`` if ``low == high``;
  ``ramp_i = clamp((i - low) / (high - low), 0, 1)``, ``f'_i = f_i (1 - ramp_i) + (f_i / s) ramp_i``.
  ``beta_fast = 32``, ``beta_slow = 1`` by default. ``A = attention_factor`` if given; else
  ``g(s, mscale) / g(s, mscale_all_dim)`` if both are given and non-zero; else ``g(s, 1)``, with
  ``g(s, m) = 0.1 m ln s + 1`` for ``s > 1`` and 1 otherwise. Without ``factor``,
  ``s = max_position_embeddings / L0``.
- ``llama3``: wavelength ``lambda_i = 2 pi / f_i``; ``f'_i = f_i`` where ``lambda_i < L0 /
  high_freq_factor``, ``f_i / s`` where ``lambda_i > L0 / low_freq_factor``, otherwise
  ``(1 - sm) f_i / s + sm f_i`` with ``sm = (L0 / lambda_i - low_freq_factor) /
  (high_freq_factor - low_freq_factor)``. ``A = 1``.
- ``longrope``: ``f'_i = f_i / ext_i``, ``ext = long_factor`` when ``L > L0``, else
  ``short_factor`` (``r/2`` numbers each). ``A = attention_factor`` if given, else
  ``sqrt(1 + ln s / ln L0)`` for ``s > 1`` and 1 otherwise; ``s = factor`` or
  ``max_position_embeddings / L0``.
- ``proportional``: the encoding spans the head: ``d/2`` pairs, the first
  ``n = int(partial_rotary_factor * d // 2)`` with ``f'_i = theta ** (-2i/d) / s`` (the
  exponent runs over ``d``), the others with ``f'_i = 0``. ``s = factor`` (default 1), ``A = 1``.

A rotates the first ``r`` features or the last ones (``rotary_features``, DeepSeek's MLA);
``attention_factor_placement`` says whether ``A`` multiplies the cos/sin cache (``in-cache``,
transformers) or is applied elsewhere, e.g. to the softmax scale (``separate``).

The family leaves room for xPos (a per-pair decay ``zeta_i ** (p / scale)`` multiplying the
rotation: one more per-pair factor beside ``A``, taken by the cache as ``A`` is) and for
multi-axis RoPE (2-D/3-D positions, Qwen2-VL's ``mrope_section``: each pair takes its
position from one axis, so positions become one row per axis; ``f'`` and ``A`` are unchanged).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope", "proportional")
ROTARY_FEATURES = ("first", "last")
ATTENTION_FACTOR_PLACEMENTS = ("in-cache", "separate")

# Per type: (required keys, optional keys), by their Hugging Face names.
TYPE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "default": ((), ()),
    "linear": (("factor",), ()),
    "dynamic": (("factor",), ("original_max_position_embeddings",)),
    "yarn": (("original_max_position_embeddings",),
             ("factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate")),
    "llama3": (("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"), ()),
    "longrope": (("short_factor", "long_factor", "original_max_position_embeddings"), ("factor", "attention_factor")),
    "proportional": ((), ("factor",)),
}
_POSITIVE = ("factor", "attention_factor", "beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor")
_NON_NEGATIVE = ("mscale", "mscale_all_dim")
_FACTOR_LISTS = ("short_factor", "long_factor")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_positive_number(name: str, value) -> float:
    """A finite float64 above 0 and not subnormal (its reciprocal, a frequency divided by
    it, would overflow)."""
    try:
        finite = _is_number(value) and math.isfinite(float(value))
    except OverflowError:
        finite = False
    if not finite or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if value < sys.float_info.min:
        raise ValueError(f"{name} must be at least {sys.float_info.min:.4g} (a subnormal number loses precision), "
                         f"got {value!r}")
    return float(value)


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _check_param(rope_type: str, name: str, value):
    """A parameter's value in canonical, hashable form (lists become tuples of floats)."""
    where = f"{rope_type} parameter {name}"
    if name in _POSITIVE:
        return check_positive_number(where, value)
    if name in _NON_NEGATIVE:
        if not _is_number(value) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where} must be a finite number >= 0, got {value!r}")
        return float(value)
    if name == "truncate":
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{where} must be true or false, got {value!r}")
        return bool(value)
    if name == "original_max_position_embeddings":
        return check_positive_int(where, value)
    if name in _FACTOR_LISTS:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) == 0:
            raise ValueError(f"{where} must be a non-empty list of numbers, got {value!r}")
        return tuple(check_positive_number(f"{where}[{k}]", item) for k, item in enumerate(value))
    raise AssertionError(f"no rule for {name}")  # every key of TYPE_KEYS has a rule above


@dataclass(frozen=True)
class RopeConvention:
    """One member of the family. ``params`` takes a mapping by Hugging Face name (``None``
    values count as absent, as in Hugging Face configs) and stores it as a sorted tuple of
    ``(name, value)`` pairs; read it with :meth:`param` or :meth:`params_dict`."""

    rope_type: str = "default"
    theta: float = 10000.0
    params: tuple = ()
    partial_rotary_factor: float = 1.0
    rotary_dim: int | None = None
    max_position_embeddings: int | None = None
    rotary_features: str = "first"
    attention_factor_placement: str = "in-cache"

    def __post_init__(self):
        if self.rope_type not in ROPE_TYPES:
            raise ValueError(f"rope_type must be one of {', '.join(ROPE_TYPES)}; got {self.rope_type!r}")
        theta = check_positive_number("theta", self.theta)
        if theta == 1:
            raise ValueError("theta must not be 1 (ln theta divides the yarn range and is the log-frequency step)")
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "params", self._canonical_params(self.params))
        prf = self.partial_rotary_factor
        if not _is_number(prf) or not 0 < prf <= 1:
            raise ValueError(f"partial_rotary_factor must be a number in (0, 1], got {prf!r}")
        object.__setattr__(self, "partial_rotary_factor", float(prf))
        if self.rotary_dim is not None:
            check_positive_int("rotary_dim", self.rotary_dim, minimum=2)
            if self.rotary_dim % 2:
                raise ValueError(f"rotary_dim must be even, got {self.rotary_dim}")
        if self.max_position_embeddings is not None:
            check_positive_int("max_position_embeddings", self.max_position_embeddings)
        if self.rotary_features not in ROTARY_FEATURES:
            raise ValueError(f"rotary_features must be one of {', '.join(ROTARY_FEATURES)}; "
                             f"got {self.rotary_features!r}")
        if self.attention_factor_placement not in ATTENTION_FACTOR_PLACEMENTS:
            raise ValueError(f"attention_factor_placement must be one of {', '.join(ATTENTION_FACTOR_PLACEMENTS)}; "
                             f"got {self.attention_factor_placement!r}")
        self._check_relations()

    def _canonical_params(self, params) -> tuple:
        items = dict(params.items() if isinstance(params, Mapping) else params)
        items = {name: value for name, value in items.items() if value is not None}
        required, optional = TYPE_KEYS[self.rope_type]
        unknown = sorted(set(items) - set(required) - set(optional))
        if unknown:
            allowed = ", ".join(required + optional) or "none"
            raise ValueError(f"unknown {self.rope_type} parameter(s) {', '.join(unknown)}; allowed: {allowed}")
        missing = [name for name in required if name not in items]
        if missing:
            raise ValueError(f"{self.rope_type} needs parameter(s) {', '.join(missing)}")
        return tuple(sorted((name, _check_param(self.rope_type, name, value)) for name, value in items.items()))

    def _check_relations(self):
        kind = self.rope_type
        if kind == "dynamic" and self.param("original_max_position_embeddings") is None \
                and self.max_position_embeddings is None:
            raise ValueError("dynamic needs original_max_position_embeddings or max_position_embeddings (its L0)")
        if kind in ("yarn", "longrope") and self.param("factor") is None and self.max_position_embeddings is None:
            raise ValueError(f"{kind} needs factor or max_position_embeddings (s = max_position_embeddings / L0)")
        if kind == "llama3" and not self.param("high_freq_factor") > self.param("low_freq_factor"):
            raise ValueError(f"llama3 high_freq_factor must exceed low_freq_factor, got "
                             f"{self.param('high_freq_factor')!r} <= {self.param('low_freq_factor')!r}")
        if (kind == "longrope" and self.param("attention_factor") is None and self.scaling_factor() > 1
                and self.param("original_max_position_embeddings") == 1):
            raise ValueError("longrope original_max_position_embeddings must be >= 2 to derive "
                             "attention_factor (it divides by ln L0), got 1")

    # -- access -------------------------------------------------------------

    def param(self, name: str, default=None):
        """A type parameter by its Hugging Face name, or ``default`` when absent."""
        return dict(self.params).get(name, default)

    def params_dict(self) -> dict:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in self.params}

    def replace(self, **changes) -> RopeConvention:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        """Fields by name, ``params`` as a plain dict: JSON-ready for reports."""
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {**fields, "params": self.params_dict()}

    def describe(self) -> str:
        """One line for reports, e.g. ``llama3 theta=500000 factor=8 ...``."""
        parts = [self.rope_type, f"theta={self.theta:g}"]
        for name, value in self.params:
            if isinstance(value, tuple):
                parts.append(f"{name}=[{len(value)} values]")
            else:
                parts.append(f"{name}={value}" if isinstance(value, bool) else f"{name}={value:g}")
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        for name in ("partial_rotary_factor", "rotary_dim", "max_position_embeddings", "rotary_features",
                     "attention_factor_placement"):
            if getattr(self, name) != defaults[name]:
                parts.append(f"{name}={getattr(self, name)}")
        return " ".join(parts)

    # -- sizes --------------------------------------------------------------

    def rotary_dim_for(self, head_dim) -> int:
        """The rotated size ``r``: ``rotary_dim``, else ``int(head_dim * partial_rotary_factor)``;
        ``head_dim`` itself for ``proportional``, whose zero-frequency pairs span the rest."""
        head_dim = check_positive_int("head_dim", head_dim, minimum=2)
        if head_dim % 2:
            raise ValueError(f"head_dim must be even, got {head_dim}")
        if self.rope_type == "proportional":
            return head_dim
        r = self.rotary_dim if self.rotary_dim is not None else int(head_dim * self.partial_rotary_factor)
        if r < 2 or r % 2:
            raise ValueError(f"the rotary size must be an even int >= 2, got {r} "
                             f"(head_dim {head_dim} x partial_rotary_factor {self.partial_rotary_factor:g})")
        if r > head_dim:
            raise ValueError(f"rotary_dim {r} exceeds head_dim {head_dim}")
        return r

    def num_pairs(self, head_dim) -> int:
        """Pairs the encoding covers: ``r/2`` (``head_dim/2`` for ``proportional``)."""
        return self.rotary_dim_for(head_dim) // 2

    def rotated_pairs(self, head_dim) -> int:
        """Pairs with a non-zero frequency: all of them, except under ``proportional``."""
        if self.rope_type != "proportional":
            return self.num_pairs(head_dim)
        if self.rotary_dim is None:
            return int(self.partial_rotary_factor * head_dim // 2)
        if self.rotary_dim > head_dim:
            raise ValueError(f"rotary_dim {self.rotary_dim} exceeds head_dim {head_dim}")
        return self.rotary_dim // 2

    def exponents(self, head_dim) -> np.ndarray:
        """``2i / r`` for the rotated pairs (``2i / d`` under ``proportional``)."""
        return 2 * np.arange(self.rotated_pairs(head_dim)) / self.rotary_dim_for(head_dim)

    def scaling_factor(self) -> float:
        """``s``: ``factor``, else ``max_position_embeddings / L0`` (yarn, longrope), else 1."""
        factor = self.param("factor")
        if factor is not None:
            return factor
        if self.rope_type in ("yarn", "longrope"):
            return self.max_position_embeddings / self.param("original_max_position_embeddings")
        return 1.0

    def original_length(self) -> int | None:
        """``L0``: ``original_max_position_embeddings``, else (dynamic) ``max_position_embeddings``."""
        return self.param("original_max_position_embeddings", self.max_position_embeddings)

    # -- frequencies (float64) ------------------------------------------------

    def frequencies(self, head_dim, seq_len=None) -> tuple[np.ndarray, float]:
        """``(f', A)`` in float64: ``f'`` one value per pair (:meth:`num_pairs`).

        ``seq_len`` is the sequence length the call covers (``max(positions) + 1``); only
        ``dynamic`` and ``longrope`` read it, every other type ignores it. ``None`` stands
        for a call within the original length (dynamic's initial table, longrope's short
        factors).
        """
        if seq_len is not None:
            check_positive_int("seq_len", seq_len)
        kind, s = self.rope_type, self.scaling_factor()
        r = self.rotary_dim_for(head_dim)
        e = self.exponents(head_dim)
        f = self.theta ** -e
        if kind == "default":
            return f, 1.0
        if kind == "linear":
            return f / s, 1.0
        if kind == "proportional":
            return np.concatenate([f / s, np.zeros(self.num_pairs(head_dim) - e.size)]), 1.0
        if kind == "dynamic":
            return self.theta_dynamic(r, seq_len) ** -e, 1.0
        if kind == "llama3":
            return self._llama3(f, s), 1.0
        if kind == "longrope":
            return f / self.longrope_factors(head_dim, seq_len), self.attention_factor()
        low, high = self.yarn_range(r)
        ramp = np.clip((np.arange(e.size) - low) / (high - low), 0.0, 1.0)
        return f * (1 - ramp) + (f / s) * ramp, self.attention_factor()

    def theta_dynamic(self, rotary_dim: int, seq_len=None) -> float:
        """Dynamic NTK's base ``theta'`` at sequence length ``seq_len`` (``None``: ``L0``)."""
        if rotary_dim <= 2:
            raise ValueError(f"dynamic needs a rotary size > 2 (its exponent is r/(r-2)), got {rotary_dim}")
        s, l0 = self.scaling_factor(), self.original_length()
        longest = max(seq_len or l0, l0)
        return self.theta * (s * longest / l0 - (s - 1)) ** (rotary_dim / (rotary_dim - 2))

    def yarn_range(self, rotary_dim: int) -> tuple[float, float]:
        """YaRN's ``(low, high)`` pair indices under this convention (:func:`yarn_range`)."""
        return yarn_range(self.theta, rotary_dim, self.param("original_max_position_embeddings"),
                          self.param("beta_fast", 32.0), self.param("beta_slow", 1.0), self.param("truncate", True))

    def _llama3(self, f: np.ndarray, s: float) -> np.ndarray:
        l0, low_ff, high_ff = (self.param(name) for name in
                               ("original_max_position_embeddings", "low_freq_factor", "high_freq_factor"))
        wavelength = 2 * np.pi / f
        smooth = (l0 / wavelength - low_ff) / (high_ff - low_ff)
        blended = (1 - smooth) * f / s + smooth * f
        return np.where(wavelength < l0 / high_ff, f, np.where(wavelength > l0 / low_ff, f / s, blended))

    def longrope_factors(self, head_dim, seq_len=None) -> np.ndarray:
        """``long_factor`` when ``seq_len > L0``, else ``short_factor``; length checked against r/2."""
        pairs = self.num_pairs(head_dim)
        for name in _FACTOR_LISTS:
            if len(self.param(name)) != pairs:
                raise ValueError(f"longrope {name} has {len(self.param(name))} values; "
                                 f"head_dim {head_dim} needs r/2 = {pairs}")
        long = seq_len is not None and seq_len > self.param("original_max_position_embeddings")
        return np.array(self.param("long_factor" if long else "short_factor"))

    def attention_factor(self) -> float:
        """``A`` of the type (see the module docstring); 1 for the types that have none."""
        explicit = self.param("attention_factor")
        if explicit is not None:
            return explicit
        s = self.scaling_factor()
        if self.rope_type == "longrope":
            return math.sqrt(1 + math.log(s) / math.log(self.param("original_max_position_embeddings"))) \
                if s > 1 else 1.0
        if self.rope_type != "yarn":
            return 1.0

        def g(m):
            return 0.1 * m * math.log(s) + 1 if s > 1 else 1.0

        mscale, mscale_all_dim = self.param("mscale"), self.param("mscale_all_dim")
        return g(mscale) / g(mscale_all_dim) if mscale and mscale_all_dim else g(1.0)

    def cache_factor(self, attention_factor: float) -> float:
        """What multiplies the cos/sin cache: ``A`` in-cache, 1 when it is applied separately."""
        return attention_factor if self.attention_factor_placement == "in-cache" else 1.0


def yarn_range(theta: float, rotary_dim: int, original_length: int, beta_fast: float = 32.0, beta_slow: float = 1.0,
               truncate: bool = True) -> tuple[float, float]:
    """YaRN's ``(low, high)`` pair indices, after truncation, clamping and the ``0.001`` guard
    (see the module docstring): they depend on ``theta``, ``r``, ``L0`` and the betas, not on ``s``."""

    def correction(beta):
        return rotary_dim * math.log(original_length / (2 * math.pi * beta)) / (2 * math.log(theta))

    low, high = correction(beta_fast), correction(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rotary_dim - 1)
    return (low, high + 0.001) if low == high else (low, high)
