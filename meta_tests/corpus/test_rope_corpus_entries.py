"""The RoPE corpus, without the gate: the registry is complete and validated, every correct
entry is within ``rope_cache_tolerance``/``rope_apply_tolerance`` of the float64 oracle on a
small copy of the gate's grid, and every wrong entry misses somewhere on it by a margin (or,
for state bugs, shows the behaviour its class names).

The grid, per head size the entry covers: calls with positions 0..63, 0..63 plus the two
positions below ``L0`` (a call of length ``L0``), plus ``L0 - 1`` and ``L0`` (length
``L0 + 1``), and a long call (powers of two +-1 up to 131072, around ``L0``, seeded random
ones); ``length`` calls take 64, ``L0``, ``L0 + 1`` and 8193. Apply and ``x-positions``
calls run with float32, bfloat16 and float16 x. Length-dependent types (dynamic, longrope)
and ``history`` entries are also called in the order 2 L0, 131072, 64, ``L0`` + 1 from one
process, so that a result kept from an earlier call shows.
"""

import re

import numpy as np
import pytest
import torch

from meta_tests.corpus import rope_registry
from meta_tests.corpus.rope_registry import (
    READ_BY,
    ROPE_APIS,
    ROPE_BUG_CLASSES,
    ROPE_CORRECT,
    ROPE_ENTRIES,
    ROPE_WRONG,
    rope_correct,
    rope_wrong,
)
from posenc_spec.families.rope import oracle
from posenc_spec.families.rope.conventions import ATTENTION_FACTOR_PLACEMENTS, ROPE_TYPES, ROTARY_FEATURES
from posenc_spec.families.rope.spec import CACHE_CALLS, CACHE_FORMS, CACHE_LAYOUTS, ROPE_LAYOUTS, X_LAYOUTS
from posenc_spec.families.rope.tolerance import rope_apply_tolerance, rope_cache_tolerance
from posenc_spec.gate.declaration import declare
from posenc_spec.tolerance import compare, dtype_name

MIN_WRONG, MIN_CORRECT = 25, 10
# A wrong entry must miss by at least this multiple of its bound somewhere: a bug that only
# just crosses the bound would be a statement about the bound, not about the entry.
MISS_MARGIN = 4.0
LONGEST = 131072
LONGEST_LENGTH = 8193  # the longest length-call of the grid
X_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
HEADS = 2
SEED = 20240613
REPOSITORY = re.compile(r"[\w.-]+/[\w.-]+")


def _numpy(value) -> tuple[np.ndarray, str]:
    """float64 (or complex128) values and the dtype they are judged in (complex64 -> float32)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_complex():
            name = "float32" if value.dtype == torch.complex64 else "float64"
            return value.to(torch.complex128).numpy(), name
        return value.to(torch.float64).numpy(), dtype_name(value.dtype)
    array = np.asarray(value)
    if np.iscomplexobj(array):
        return array.astype(np.complex128), "float32" if array.dtype == np.complex64 else "float64"
    return array.astype(np.float64), dtype_name(array.dtype)


def _rows(array: np.ndarray) -> np.ndarray:
    """Leading axes of size 1 dropped, down to (L, width)."""
    while array.ndim > 2 and array.shape[0] == 1:
        array = array[0]
    return array


def cache_from_output(result, form: str) -> tuple[np.ndarray, np.ndarray, str, bool]:
    """``(cos, sin, dtype, holds_factor)`` from a cache in any declared form; ``angles`` hold
    no attention factor, the other forms hold it when it is in-cache."""
    if form == "cos-sin":
        (cos, name), (sin, _) = _numpy(result[0]), _numpy(result[1])
        return _rows(cos), _rows(sin), name, True
    array, name = _numpy(result)
    if form == "complex":
        return _rows(array.real), _rows(array.imag), name, True
    if form == "angles":
        return np.cos(_rows(array)), np.sin(_rows(array)), name, False
    if form == "stacked":
        return _rows(array[..., 0]), _rows(array[..., 1]), name, True
    first, second = np.split(array, 2, axis=-1)
    cos, sin = (first, second) if form == "cos-sin-cat" else (second, first)
    return _rows(cos), _rows(sin), name, True


def _expected_cache(conv, head_dim, positions, dtype, layout, seq_len=None):
    cos, sin = oracle.cache(positions, conv, head_dim, seq_len)
    tol = rope_cache_tolerance(positions, conv, head_dim, dtype, seq_len=seq_len)
    if layout == "compact":
        return cos, sin, tol
    return oracle.expand(cos, layout), oracle.expand(sin, layout), oracle.expand(tol, layout)


def worst_ratio(actual, expected, tol) -> tuple[float, tuple]:
    """The largest error/tolerance ratio and where (:func:`~posenc_spec.tolerance.compare`'s
    rules: NaN is infinite, a zero bound admits only a zero error); a wrong shape is infinite."""
    if actual.shape != expected.shape:
        return np.inf, ("shape", actual.shape, "expected", expected.shape)
    result = compare(actual, expected, tol)
    return result.max_ratio, result.worst_index


def judge_cache(entry, conv, head_dim, positions, x_dtype=None):
    """One cache call, in the declared call shape and form, against the oracle."""
    fn, call = entry.function(), entry.setting("cache_call")
    if call == "length":
        result = fn(positions.size, head_dim)
    elif call == "batched":
        result = fn(torch.as_tensor(positions)[None], head_dim)
    elif call == "x-positions":
        x = torch.zeros(1, positions.size, head_dim, dtype=x_dtype)
        result = fn(x, torch.as_tensor(positions)[None])
    else:
        result = fn(torch.as_tensor(positions), head_dim)
    cos, sin, dtype, holds_factor = cache_from_output(result, entry.setting("cache_form"))
    judged = conv if holds_factor else conv.replace(attention_factor_placement="separate")
    exp_cos, exp_sin, tol = _expected_cache(judged, head_dim, positions, dtype, entry.setting("cache_layout"))
    return max(worst_ratio(cos, exp_cos, tol), worst_ratio(sin, exp_sin, tol))


def judge_freqs(entry, conv, head_dim, positions):
    """``fn(head_dim)``'s frequencies (and factor) as a float64 cache at the positions, judged by
    the float32 cache bound at the length they stand for (``L0``: dynamic's and longrope's initial table)."""
    result = entry.function()(head_dim)
    inv_freq, factor = result if isinstance(result, tuple) else (result, 1.0)
    inv_freq = _numpy(inv_freq)[0]
    if conv.attention_factor_placement == "separate":
        factor = 1.0
    theta = positions[:, None].astype(np.float64) * inv_freq[None, :]
    seq_len = conv.original_length() if conv.rope_type in ("dynamic", "longrope") else None
    exp_cos, exp_sin, tol = _expected_cache(conv, head_dim, positions, "float32", "compact", seq_len)
    return max(worst_ratio(float(factor) * np.cos(theta), exp_cos, tol),
               worst_ratio(float(factor) * np.sin(theta), exp_sin, tol))


_TO_HEADS_LAST = {"bshd": (0, 2, 1, 3), "bhsd": (0, 1, 2, 3), "sbhd": (1, 2, 0, 3), "thd": (1, 0, 2)}


def judge_apply(entry, conv, head_dim, positions, x_dtype):
    """``fn(x, positions)`` on seeded random x in the declared x_layout, against the float64
    rotation; a feature outside the rotated block must come back bit for bit (ratio inf if not)."""
    layout, order = entry.setting("x_layout"), _TO_HEADS_LAST[entry.setting("x_layout")]
    shape = {"bshd": (1, positions.size, HEADS, head_dim), "bhsd": (1, HEADS, positions.size, head_dim),
             "sbhd": (positions.size, 1, HEADS, head_dim), "thd": (positions.size, HEADS, head_dim)}[layout]
    x = torch.as_tensor(np.random.default_rng(SEED).standard_normal(shape)).to(x_dtype)
    result = entry.function()(x, torch.as_tensor(positions))
    if tuple(result.shape) != shape:
        return np.inf, ("shape", tuple(result.shape), "expected", shape)
    out, out_dtype = _numpy(result)
    x_exact = x.to(torch.float64).numpy().transpose(order)
    pairing = entry.setting("rope_layout")
    expected = oracle.apply(x_exact, positions, conv, head_dim, pairing)
    tol = rope_apply_tolerance(x_exact, positions, conv, head_dim, pairing, dtype_name(x_dtype), out_dtype)
    out = out.transpose(order)
    passthrough = oracle.columns_for(conv, head_dim, pairing).passthrough
    changed = np.argwhere(out[..., passthrough] != x_exact[..., passthrough])
    if changed.size:  # the features outside the rotated block pass bit for bit
        return np.inf, ("passthrough changed", *map(int, changed[0][:-1]), int(passthrough[changed[0][-1]]))
    return worst_ratio(out, expected, tol)


def position_sets(conv, order="grid") -> list[tuple[str, np.ndarray]]:
    """The calls' positions by name, in the grid order or the history order."""
    scaled = conv.rope_type in ("dynamic", "yarn", "llama3", "longrope")
    l0 = (conv.original_length() if scaled else None) or 4096
    short = np.arange(64)
    rng = np.random.default_rng(SEED)
    powers = [2**k + offset for k in range(8, 18) for offset in (-1, 0, 1)]
    long = np.unique(np.r_[short, powers, l0 - 2, l0 - 1, l0, l0 + 1, rng.integers(0, LONGEST, 16)])
    sets = {"0..63": short, "to L0": np.r_[short, l0 - 2, l0 - 1], "to L0+1": np.r_[short, l0 - 1, l0],
            "to 131072": long[long <= LONGEST], "to 2 L0": np.r_[short, 2 * l0 - 1]}
    names = ["0..63", "to L0", "to L0+1", "to 131072"] if order == "grid" else ["to 2 L0", "to 131072", "0..63",
                                                                               "to L0+1"]
    limit = conv.max_position_embeddings or np.inf  # the model's range caps the grid
    return [(name, sets[name][sets[name] < limit]) for name in names]


def calls(entry, order="grid"):
    """Every (where, judge) of the entry's grid: the judge returns (ratio, index)."""
    conv = entry.convention()
    for head_dim in entry.head_dims():
        sets = position_sets(conv, order)
        if entry.api == "rope-cache" and entry.setting("cache_call") == "length":
            sets = [(f"length {n}", np.arange(n)) for n in (min(int(s.max()) + 1, LONGEST_LENGTH) for _, s in sets)]
        for name, positions in sets:
            where = f"head_dim {head_dim}, positions {name}"
            if entry.api == "rope-freqs":
                yield where, lambda h=head_dim, p=positions: judge_freqs(entry, conv, h, p)
            elif entry.api == "rope-apply" or entry.setting("cache_call") == "x-positions":
                judge = judge_apply if entry.api == "rope-apply" else judge_cache
                for dtype in X_DTYPES:
                    yield f"{where}, x {dtype_name(dtype)}", (
                        lambda h=head_dim, p=positions, d=dtype, j=judge: j(entry, conv, h, p, d))
            else:
                yield where, lambda h=head_dim, p=positions: judge_cache(entry, conv, h, p)


def _length_dependent(entry) -> bool:
    return entry.convention().rope_type in ("dynamic", "longrope") or "history" in entry.bug_classes


def _global_state():
    return (torch.get_default_dtype(), torch.is_grad_enabled(), torch.is_autocast_enabled("cpu"),
            torch.get_rng_state().numpy().tobytes())


def _worst(entry, order, stop_at=np.inf):
    """The largest ratio over the entry's calls and where; stops at the first one >= ``stop_at``."""
    worst = (-1.0, "", ())
    for where, judge in calls(entry, order):
        ratio, index = judge()
        if ratio > worst[0]:
            worst = (ratio, where, index)
        if ratio >= stop_at:
            break
    return worst


# -- the registry -------------------------------------------------------------------------------


def test_corpus_is_big_enough():
    """At least 25 wrong and 10 correct RoPE implementations."""
    assert len(ROPE_WRONG) >= MIN_WRONG, f"{len(ROPE_WRONG)} wrong RoPE entries, need {MIN_WRONG}"
    assert len(ROPE_CORRECT) >= MIN_CORRECT, f"{len(ROPE_CORRECT)} correct RoPE entries, need {MIN_CORRECT}"


def test_ids_are_unique_and_name_callables():
    """Every id is unique and names a callable in its module."""
    ids = [entry.id for entry in ROPE_ENTRIES]
    assert len(ids) == len(set(ids)), f"duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}"
    not_callable = [entry.target for entry in ROPE_ENTRIES if not callable(entry.function())]
    assert not not_callable, f"targets that are not callable: {not_callable}"


def test_every_bug_class_is_covered_and_most_bugs_are_cited():
    """Each class of ROPE_BUG_CLASSES has a wrong entry; correct entries have none; at least
    two thirds of the wrong entries name the public thread where the slip was seen."""
    covered = {name for entry in ROPE_WRONG for name in entry.bug_classes}
    assert covered == set(ROPE_BUG_CLASSES), f"classes without a wrong entry: {sorted(set(ROPE_BUG_CLASSES) - covered)}"
    assert not [entry.id for entry in ROPE_CORRECT if entry.bug_classes]
    cited = [entry for entry in ROPE_WRONG if entry.seen_in]
    assert 3 * len(cited) >= 2 * len(ROPE_WRONG), f"only {len(cited)} of {len(ROPE_WRONG)} wrong entries cite a thread"


# Where the gate's declaration holds each key a registration may state.
READ_BACK = {
    "rope_theta": lambda d: d.spec.convention.theta,
    "rope_type": lambda d: d.spec.convention.rope_type,
    "rope_parameters": lambda d: d.spec.convention.params_dict(),
    "partial_rotary_factor": lambda d: d.spec.convention.partial_rotary_factor,
    "rotary_dim": lambda d: d.spec.convention.rotary_dim,
    "rotary_features": lambda d: d.spec.convention.rotary_features,
    "attention_factor": lambda d: d.spec.convention.attention_factor_placement,
    "max_positions": lambda d: (d.max_positions, d.spec.convention.max_position_embeddings),
    "head_dim": lambda d: d.spec.head_dims,
    **{key: (lambda d, key=key: getattr(d.spec, key)) for key in ("rope_layout", "x_layout", "cache_layout",
                                                                  "cache_form", "cache_call")},
}
# A declared value as READ_BACK finds it, where the gate holds it in another form.
AS_HELD = {"max_positions": lambda value: (value, value), "head_dim": lambda value: (value,)}


@pytest.mark.parametrize("entry", ROPE_ENTRIES, ids=[entry.id for entry in ROPE_ENTRIES])
def test_entry_is_described_and_its_table_reads_back(entry):
    """A one-line description, a sighting that names a repository, and a ``[[targets]]``
    table of TOML values that the gate reads as the entry's api, with every declared key
    held at the value declared (a key the gate dropped or read as another would fail)."""
    assert entry.description and len(entry.description) <= 300, f"{entry.id}: {len(entry.description)} characters"
    assert not entry.seen_in or REPOSITORY.search(entry.seen_in), f"{entry.id}: seen_in {entry.seen_in!r}"
    table = entry.config_table()
    assert table["target"] == f"{entry.module}:{entry.id}" and table["api"] == entry.api

    def toml_value(value):
        if isinstance(value, dict):
            return all(isinstance(key, str) and toml_value(item) for key, item in value.items())
        if isinstance(value, list):
            return all(toml_value(item) for item in value)
        return isinstance(value, (str, int, float, bool))

    assert toml_value(table), f"{entry.id}: not every value of {table} is a TOML value"
    declaration = declare(table)
    assert declaration.api == entry.api and declaration.target == entry.target
    for key, value in table.items():
        if key not in ("target", "api"):
            held = READ_BACK[key](declaration)
            assert held == AS_HELD.get(key, lambda v: v)(value), f"{entry.id}: {key} = {value!r} is held as {held!r}"


_SIGN = {"bug": "b", "classes": ("sign",)}


def _register_probe(decorator, **keys):
    def probe(positions, head_dim):
        return positions, head_dim
    return decorator(**keys)(probe)


@pytest.mark.parametrize("decorator, keys, message", [
    (rope_wrong, {**_SIGN}, "needs an api"),
    (rope_wrong, {**_SIGN, "api": "rope-table"}, "api must be one of"),
    (rope_wrong, {**_SIGN, "api": "rope-cache", "rope_scaling": {}}, "unknown key"),
    (rope_wrong, {**_SIGN, "api": "rope-cache", "x_layout": "bshd"}, "read only by rope-apply"),
    (rope_wrong, {**_SIGN, "api": "rope-cache", "cache_form": "polar"}, "cache_form must be"),
    (rope_wrong, {**_SIGN, "api": "rope-cache", "rope_type": "yarn"}, "yarn needs parameter"),
    (rope_wrong, {**_SIGN, "api": "rope-cache", "head_dim": 7}, "head_dim must be"),
    (rope_wrong, {"bug": "b", "classes": ("rounding",), "api": "rope-cache"}, "unknown bug classes"),
    (rope_wrong, {"bug": "b", "classes": "sign", "api": "rope-cache"}, "must be a tuple"),
    (rope_wrong, {"bug": "b", "classes": (), "api": "rope-cache"}, "at least one bug class"),
    (rope_correct, {"idiom": "i", "api": "rope-cache", "rope_type": "longrope",
                    "rope_parameters": {"short_factor": [1.0], "long_factor": [2.0], "factor": 4.0,
                                        "original_max_position_embeddings": 4096}}, "r/2"),
])
def test_registration_rejects_bad_declarations(decorator, keys, message):
    """Registration fails at import with a message naming the function and the problem."""
    before = len(ROPE_ENTRIES)
    with pytest.raises(ValueError, match=message) as raised:
        _register_probe(decorator, **keys)
    assert "probe" in str(raised.value)
    assert len(rope_registry.ROPE_ENTRIES) == before


# Each choice of the gate's interface, with what the gate accepts for it (its own tuples).
INTERFACE = {"cache_layout": CACHE_LAYOUTS, "cache_form": CACHE_FORMS, "cache_call": CACHE_CALLS,
             "x_layout": X_LAYOUTS, "rope_layout": ROPE_LAYOUTS, "rotary_features": ROTARY_FEATURES,
             "attention_factor": ATTENTION_FACTOR_PLACEMENTS}


def test_the_corpus_covers_the_interface():
    """Correct entries exercise every choice the gate accepts: api, cache layout, form and
    call, x layout, pairing, rope type, the last-features placement and a separate attention
    factor (each among the entries of the apis that read it); wrong ones every api."""
    for key, choices in INTERFACE.items():
        apis = READ_BY.get(key, ROPE_APIS)
        used = {entry.setting(key) for entry in ROPE_CORRECT if entry.api in apis}
        assert used == set(choices), f"correct entries leave {key} = {sorted(set(choices) - used)} untested"
    assert {entry.convention().rope_type for entry in ROPE_CORRECT} == set(ROPE_TYPES)
    assert {entry.api for entry in ROPE_CORRECT} == {entry.api for entry in ROPE_WRONG} == set(ROPE_APIS)


# -- each entry's nature, against the oracle ----------------------------------------------------


@pytest.mark.parametrize("entry", ROPE_CORRECT, ids=[entry.id for entry in ROPE_CORRECT])
def test_correct_entry_is_within_tolerance(entry):
    """Every call of the grid within bound (length-dependent types also in the history
    order), and the global state as it was."""
    before = _global_state()
    orders = ("grid", "history") if _length_dependent(entry) else ("grid",)
    for order in orders:
        ratio, where, index = _worst(entry, order)
        assert ratio <= 1, f"{entry.target} ({entry.describe()}): {where} ({order} order), ratio {ratio:.3g} at {index}"
    assert _global_state() == before, f"{entry.target} changed the global state"


@pytest.mark.parametrize("entry", ROPE_WRONG, ids=[entry.id for entry in ROPE_WRONG])
def test_wrong_entry_misses(entry):
    """Somewhere on the grid the entry is off by at least MISS_MARGIN times the bound; a
    ``history`` bug shows when calls come in the history order, a ``global-state`` bug
    leaves the global state changed."""
    if "global-state" in entry.bug_classes:
        before = _global_state()
        try:
            next(calls(entry))[1]()
            after = _global_state()
        finally:
            torch.set_default_dtype(before[0])
            torch.set_grad_enabled(before[1])
        assert after != before, f"{entry.target} left the global state as it was"
        return
    order = "history" if "history" in entry.bug_classes else "grid"
    ratio, where, index = _worst(entry, order, stop_at=MISS_MARGIN)
    assert ratio >= MISS_MARGIN, (f"survivor: {entry.target} ({entry.describe()}) is within {MISS_MARGIN}x its bound "
                                  f"on every call ({order} order; worst ratio {ratio:.3g} at {where} {index}); "
                                  f"its bug: {entry.description}")
