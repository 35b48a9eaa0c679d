"""The expected slopes and biases: exactly (mpmath) and fast (float64, one rounding each).

A bias is ``m_h * d`` with ``d`` an integer (:func:`distances`), so everything inexact is in
the slopes ``m_h = 2 ** -e_h``, ``e_h`` a rational (:meth:`AlibiConvention.slope_terms`).

:func:`exact_slopes` evaluates them with mpmath at :data:`EXACT_DIGITS` significant digits;
:func:`slopes` is those values rounded once to float64 (cached per head count: at most a few
thousand values). :func:`bias` multiplies them by the integer distances in float64, one more
rounding, so each element is within ``2 u_64 |m d|`` of the exact value (``u_64 = 2**-53``);
:func:`exact_bias` forms ``m d`` from the mpmath slope and rounds once.
``spec_tests/families/alibi/test_oracle.py`` holds both to that, and the slopes to an
independent computation (Python's ``decimal``).

The float64 slopes of 1 .. 128 heads at ``alibi_bias_max`` 8 under both slope rules (5,022
exponents: the gate's every head count, which mpmath takes a few tenths of a second to
evaluate) are shipped in ``posenc_spec/data/alibi_slopes.json``, written by
:func:`write_slope_table` from :func:`slope_table`; the test above recomputes them. Other
exponents are evaluated as they come.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np

from .conventions import AlibiConvention, check_heads, get_convention

EXACT_DIGITS = 50
MAX_LENGTH = 2**24  # every position below is an exact float32 integer


@dataclass(frozen=True, eq=False)
class Positions:
    """The positions one call covers: ``queries`` (one per row the convention's table has),
    ``keys`` (one per column) and ``valid`` (the keys an attention mask keeps), int64."""

    queries: np.ndarray
    keys: np.ndarray
    valid: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.queries.size, self.keys.size


def check_length(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if not 0 <= value <= MAX_LENGTH:
        raise ValueError(f"{name} must be from 0 to 2**24, got {value}")
    return int(value)


def call_positions(q_len: int, k_len: int, convention: str | AlibiConvention = "paper") -> Positions:
    """The positions of a call of ``q_len`` queries over keys ``0 .. k_len - 1``: the queries
    the ``last`` (or ``first``) ``q_len``; a key-only form has one row, the last query's."""
    conv = get_convention(convention)
    q_len, k_len = check_length(q_len, "q_len"), check_length(k_len, "k_len")
    if q_len > k_len:
        raise ValueError(f"q_len must not exceed k_len, got {q_len} > {k_len}")
    keys = np.arange(k_len, dtype=np.int64)
    if conv.key_only:
        queries = keys[-1:].copy()
    elif conv.query_positions == "last":
        queries = np.arange(k_len - q_len, k_len, dtype=np.int64)
    else:
        queries = np.arange(q_len, dtype=np.int64)
    return Positions(queries, keys, np.ones(k_len, dtype=bool))


def mask_positions(mask, convention: str | AlibiConvention = "bloom") -> Positions:
    """The positions one row of a ``(k_len,)`` attention mask (1 keep, 0 pad) gives a key-only
    form: ``(cumsum(mask) - 1) * mask`` under ``mask-cumsum`` (BLOOM), ``0 .. k_len - 1`` under
    ``index``; the padded keys are not judged."""
    conv = get_convention(convention)
    values = np.asarray(mask)
    if values.ndim != 1 or values.size == 0 or not np.isin(values, (0, 1)).all():
        raise ValueError(f"mask must be a non-empty 1-D array of 0 and 1, got {values!r}")
    if not conv.key_only:
        raise ValueError(f"an attention mask positions a key-only bias_form, got {conv.bias_form!r}")
    valid = values.astype(bool)
    if conv.key_positions == "mask-cumsum":
        keys = (np.cumsum(valid, dtype=np.int64) - 1) * valid
    else:
        keys = np.arange(values.size, dtype=np.int64)
    last = keys[valid].max() if valid.any() else np.int64(0)
    return Positions(np.array([last], dtype=np.int64), keys, valid)


def distances(convention: str | AlibiConvention, positions: Positions) -> np.ndarray:
    """The integer ``d`` of every row and key (int64), as the convention's ``bias_form`` says."""
    conv = get_convention(convention)
    q, k = positions.queries[:, None], positions.keys[None, :]
    if conv.bias_form == "causal":
        return k - q
    if conv.bias_form == "symmetric":
        return -np.abs(k - q)
    if conv.bias_form == "key":
        return np.broadcast_to(k, positions.shape).copy()
    return k - q  # key-last: the one row is the last query's


def judged(convention: str | AlibiConvention, positions: Positions) -> np.ndarray:
    """Which elements a table is judged on: every key the query may attend (the ``causal``
    region: at or before it; ``full``: all), never a padded key."""
    conv = get_convention(convention)
    valid = np.broadcast_to(positions.valid[None, :], positions.shape)
    if conv.bias_region == "full" or conv.key_only:
        return valid.copy()
    return valid & (positions.keys[None, :] <= positions.queries[:, None])


@functools.lru_cache(maxsize=8192)
def _exact_power(exponent: Fraction):
    """``2 ** -exponent`` at :data:`EXACT_DIGITS` digits. Cached by exponent: the head counts
    of a grid share their slopes' exponents (under the default rule and ``alibi_bias_max`` 8,
    all 8,256 slopes of 1 .. 128 heads are 128 powers ``2 ** -(j / 16)``)."""
    with mpmath.workdps(EXACT_DIGITS):
        return mpmath.power(2, -mpmath.mpf(exponent.numerator) / exponent.denominator)


@functools.lru_cache(maxsize=512)
def _exact_slopes(count: int, rule: str, bias_max: float) -> tuple:
    from .conventions import slope_terms
    return tuple(_exact_power(term.exponent) for term in slope_terms(count, rule, bias_max))


def exact_slopes(num_heads, convention: str | AlibiConvention = "paper") -> list:
    """The slope of every head as an mpmath number (0 for a head without a bias)."""
    conv = get_convention(convention)
    num_heads = check_heads(num_heads)
    biased = _exact_slopes(conv.biased_heads(num_heads), conv.slope_rule, conv.alibi_bias_max)
    return list(biased) + [mpmath.mpf(0)] * (num_heads - len(biased))


# The package's data folder, by path: the gate reads the table after its first target
# started, when it may import no more modules (importlib.resources would).
DATA = Path(__file__).resolve().parents[2] / "data"
SLOPE_TABLE = "alibi_slopes.json"
TABLE_HEADS = 128
TABLE_BIAS_MAX = 8.0


def _key(exponent: Fraction) -> str:
    return f"{exponent.numerator}/{exponent.denominator}"


def slope_table() -> dict[str, float]:
    """``2 ** -e`` correctly rounded to float64 for every exponent ``e`` ("p/q") of 1 ..
    TABLE_HEADS heads at ``alibi_bias_max`` TABLE_BIAS_MAX under every slope rule, from mpmath."""
    from .conventions import SLOPE_RULES, slope_terms
    exponents = {term.exponent for rule in SLOPE_RULES for count in range(1, TABLE_HEADS + 1)
                 for term in slope_terms(count, rule, TABLE_BIAS_MAX)}
    return {_key(exponent): float(_exact_power(exponent)) for exponent in sorted(exponents)}


def write_slope_table(path=None) -> None:
    """Write :func:`slope_table` to the package's data folder (or ``path``)."""
    path = path or DATA / SLOPE_TABLE
    about = (f"2 ** -e correctly rounded to float64 (mpmath at {EXACT_DIGITS} digits) for every exponent e = p/q of "
             f"ALiBi's slopes, 1 .. {TABLE_HEADS} heads, alibi_bias_max {TABLE_BIAS_MAX}, each slope rule; written "
             "by posenc_spec.families.alibi.oracle.write_slope_table; spec_tests/families/alibi/test_oracle.py "
             "recomputes them")
    Path(path).write_text(json.dumps({"about": about, "slopes": slope_table()}, indent=0) + "\n", encoding="utf-8")


@functools.cache
def shipped_slopes() -> dict[str, float]:
    """The float64 slopes of ``posenc_spec/data/alibi_slopes.json`` by exponent ("p/q")."""
    return json.loads((DATA / SLOPE_TABLE).read_text(encoding="utf-8"))["slopes"]


@functools.lru_cache(maxsize=512)
def _slopes(num_heads: int, convention: AlibiConvention) -> np.ndarray:
    from .conventions import slope_terms
    terms = slope_terms(convention.biased_heads(num_heads), convention.slope_rule, convention.alibi_bias_max)
    table = shipped_slopes() if convention.alibi_bias_max == TABLE_BIAS_MAX else {}
    if all(_key(term.exponent) in table for term in terms):
        values = np.zeros(num_heads)
        values[:len(terms)] = [table[_key(term.exponent)] for term in terms]
    else:
        values = np.array([float(value) for value in exact_slopes(num_heads, convention)])
    values.setflags(write=False)
    return values


def slopes(num_heads, convention: str | AlibiConvention = "paper") -> np.ndarray:
    """The slopes correctly rounded to float64, head order (read-only; 0 for unbiased heads)."""
    return _slopes(check_heads(num_heads), get_convention(convention))


def bias(num_heads, positions: Positions, convention: str | AlibiConvention = "paper") -> np.ndarray:
    """The ``(num_heads, rows, keys)`` bias in float64: :func:`slopes` times :func:`distances`."""
    conv = get_convention(convention)
    return slopes(num_heads, conv)[:, None, None] * distances(conv, positions)[None, :, :]


def exact_bias(num_heads, positions: Positions, convention: str | AlibiConvention = "paper") -> np.ndarray:
    """The bias with each element formed exactly and rounded once to float64 (slow: for a few
    thousand elements)."""
    conv = get_convention(convention)
    d = distances(conv, positions)
    out = np.empty((check_heads(num_heads), *d.shape))
    with mpmath.workdps(EXACT_DIGITS):
        for h, slope in enumerate(exact_slopes(num_heads, conv)):
            for index, value in np.ndenumerate(d):
                out[(h, *index)] = float(slope * int(value))
    return out
