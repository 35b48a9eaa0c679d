"""The stateful corpus, without the gate: the registry is complete, and each entry is judged by
the float64 oracle under call sequences played here, in this process, on a fresh instance.

The sequences are written out below as real code makes them, apart from the gate's
(``posenc_spec.families.sinusoidal.sequences``): a bfloat16, a float16, then float32 calls of 24 and 12
positions; a prefill of 40 then decode steps at 40 and 41; 8 positions at offset 0 then
20; 16, 96 and 16 positions; a batch of two at the same positions, and rows at different
ones; ``x`` as a transposed view; for timesteps the same dtypes and two batches of one
shape; for tables 24, 24, 80 and 40 rows of width 16. After every call the result of the
one before is compared with a copy taken when it came back (aliasing). A wrong entry must
miss by ``MISS_MARGIN`` times its bound, raise, or change an earlier result, under the
sequence it names; a correct one stays within bounds under every sequence its call can
express.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from meta_tests.corpus.stateful_registry import (
    SEQUENCES,
    STATEFUL_BUG_CLASSES,
    STATEFUL_CORRECT,
    STATEFUL_ENTRIES,
    STATEFUL_WRONG,
)
from posenc_spec.families.rope import oracle
from posenc_spec.families.rope.tolerance import rope_angle_tolerance, rope_apply_tolerance, rope_cache_tolerance
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.tolerance import compare, dtype_name

MIN_WRONG, MIN_CORRECT = 25, 12
MISS_MARGIN = 4.0
SEED = 20250607
HEADS = 2
REPOSITORY = re.compile(r"[\w.-]+/[\w.-]+")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Call:
    """One call of a sequence: rotary positions (``(seq,)``, or ``(batch, seq)``), or timesteps,
    or a table's length; the dtype of ``x`` (or of the timesteps); ``x`` as a transposed view."""

    positions: np.ndarray
    dtype: str = "float32"
    view: bool = False


def _calls(*specs) -> list[Call]:
    return [spec if isinstance(spec, Call) else Call(np.asarray(spec)) for spec in specs]


PACKED = np.r_[29:35, 0:6]
ROPE_SEQUENCES = {
    "dtype-order": _calls(Call(np.arange(24), "bfloat16"), Call(np.arange(24), "float16"), np.arange(24),
                          np.arange(12)),
    "decode": _calls(np.arange(40), [40], [41]),
    "offsets": _calls(np.arange(8), np.arange(20, 28)),
    "grow": _calls(np.arange(16), np.arange(96), np.arange(16)),
    "batch": _calls(np.stack([np.arange(12)] * 2)),
    "rows": _calls(np.stack([np.arange(12), PACKED])),
    "view": _calls(Call(np.arange(12), view=True)),
    "aliasing": _calls(np.arange(16), np.arange(40, 64), np.arange(8)),
}


def timestep_sequences(t_max: float) -> dict:
    """Timesteps in [0, t_max]: float draws in the three dtypes, then two batches of one shape."""
    drawn = np.random.default_rng(SEED).uniform(0, 0.99 * t_max, 64).astype(np.float32)
    steps = [np.random.default_rng(SEED + seed).uniform(0, t_max, 48).astype(np.float32) for seed in (1, 2)]
    if t_max >= 48:
        steps = [values.astype(np.int64) for values in steps]
    return {"dtype-order": _calls(Call(drawn, "bfloat16"), Call(drawn, "float16"), drawn, drawn[:32]),
            "memo": _calls(*steps), "aliasing": _calls(drawn[:50], drawn[10:60])}


TABLE_SEQUENCES = {"grow": _calls(24, 24, 80, 40), "aliasing": _calls((50, 8), (20, 16), (30, 4))}
TABLE_WIDTH, TIMESTEP_WIDTH = 16, 32  # a table's call gives its length, or (length, width)


class Inexpressible(Exception):
    """The entry's call cannot carry this call (per-row positions for a single offset, say)."""


def _instances(entry):
    """``call(**sizes)``: the entry's target as its table builds it, one object per size, kept."""
    table, target, objects = entry.config_table(), entry.function(), {}
    init, method = table.get("init"), table.get("method")

    def call(**sizes):
        if init is None:
            return target if method is None else getattr(target, method)
        arguments = {name: sizes[value[1:-1]] if isinstance(value, str) and value.startswith("{") else value
                     for name, value in init.items()}
        key = tuple(sorted(arguments.items()))
        if key not in objects:
            objects[key] = target(**arguments)
            if isinstance(objects[key], nn.Module):
                objects[key].eval()
        return objects[key] if method is None else getattr(objects[key], method)

    return call


def _x(positions: np.ndarray, dtype: str, head_dim: int, seed: int) -> torch.Tensor:
    """Seeded (batch, heads, seq, head_dim) values exact in ``dtype``."""
    rows = positions if positions.ndim == 2 else positions[None]
    values = np.random.default_rng(seed).standard_normal((rows.shape[0], HEADS, rows.shape[1], head_dim))
    return torch.as_tensor(values, dtype=torch.float32).to(DTYPES[dtype])


def _float64(tensor) -> np.ndarray:
    return tensor.detach().to(torch.float64).numpy()


class RopePlayer:
    """Plays calls on a fresh rotary entry the way its signature's real callers do, and judges
    each result against the oracle: ``(worst ratio, result)``."""

    def __init__(self, entry):
        self.entry, self.declaration = entry, entry.declaration()
        self.spec, self.conv = self.declaration.spec, self.declaration.spec.convention
        self.head = self.spec.head_dims[0]
        self.make = _instances(entry)
        self.sizes = {"head_dim": self.head, "max_positions": self.declaration.max_positions}
        self.seed = SEED

    def __call__(self, call: Call):
        self.seed += 1
        target = self.make(**self.sizes)
        if self.entry.api == "rope-cache":
            return self._cache(target, call)
        return self._apply(target, call)

    def _cache(self, target, call: Call):
        positions = call.positions
        form = self.spec.cache_call
        if form == "length":
            positions = np.arange(int(positions.max()) + 1)
            result = target(positions.size, self.head)
        elif form == "batched":
            result = target(torch.as_tensor(positions if positions.ndim == 2 else positions[None]), self.head)
        else:
            x = _x(positions, call.dtype, self.head, self.seed)[:, 0]
            result = target(x, torch.as_tensor(positions if positions.ndim == 2 else positions[None]))
        rows = positions if positions.ndim == 2 else positions[None]
        parts = [result] if self.spec.cache_form == "angles" else list(result)
        ratio = 0.0
        for index, part in enumerate(parts):
            got = _float64(part)
            while got.ndim > 3 and got.shape[0] == 1:
                got = got[0]
            got = got[None] if got.ndim == 2 else got
            if got.shape[0] not in (1, rows.shape[0]) or got.shape[1] != rows.shape[1]:
                return np.inf, result  # not a row of cos and sin for each row of positions
            got = np.broadcast_to(got, (rows.shape[0], *got.shape[1:]))
            out_dtype = dtype_name(part.dtype)
            length = int(rows.max()) + 1
            for positions_row, values in zip(rows, got, strict=True):
                if self.spec.cache_form == "angles":
                    expected, _, _ = oracle.angles(positions_row, self.conv, self.head, length)
                    bound = rope_angle_tolerance(positions_row, self.conv, self.head, out_dtype, seq_len=length)
                else:
                    expected = oracle.cache(positions_row, self.conv, self.head, length)[index]
                    bound = rope_cache_tolerance(positions_row, self.conv, self.head, out_dtype, seq_len=length)
                ratio = max(ratio, compare(values, oracle.expand(expected, "half"), oracle.expand(bound, "half"))
                            .max_ratio)
        return ratio, result

    def _apply(self, target, call: Call):
        positions, signature, layout = call.positions, self.declaration.calling.signature, self.spec.x_layout
        if signature in ("x-offset", "xq-xk-freqs-cis") and positions.ndim == 2 and len(set(map(tuple, positions))) > 1:
            raise Inexpressible(f"{signature} takes one run of positions for every row")
        if signature == "x-positions" and positions.ndim == 2:
            if len(set(map(tuple, positions))) > 1:
                raise Inexpressible("x-positions takes positions of one row")
        x = _x(positions, call.dtype, self.head, self.seed)  # (batch, heads, seq, head_dim)
        handed = x if layout == "bhsd" else x.transpose(1, 2)
        if call.view:  # the same values in memory of the other order, viewed back
            handed = handed.transpose(1, 2).contiguous().transpose(1, 2)
        shared = positions[0] if positions.ndim == 2 else positions
        if signature == "x-offset":
            result = target(handed, offset=int(shared[0]))
        elif signature == "x-input-pos":
            result = target(handed, input_pos=torch.as_tensor(positions if positions.ndim == 2 else positions[None]))
        elif signature == "q-k-cos-sin":  # cos and sin as the model's rotary module hands them: (batch, seq, r)
            rows = positions if positions.ndim == 2 else positions[None]
            cos, sin = zip(*(oracle.cache(row, self.conv, self.head, int(rows.max()) + 1) for row in rows), strict=True)
            cos, sin = (torch.as_tensor(oracle.expand(np.stack(part), "half")).to(DTYPES[call.dtype])
                        for part in (cos, sin))
            q, k = handed.split(1, dim=1)
            result = torch.cat(target(q, k, cos, sin), dim=1)
        else:
            result = target(handed, torch.as_tensor(shared))
        got = _float64(result if layout == "bhsd" else result.transpose(1, 2))
        exact = _float64(x)
        if got.shape != exact.shape:
            return np.inf, result
        rows = positions if positions.ndim == 2 else [positions] * exact.shape[0]
        length, layout = int(positions.max()) + 1, self.spec.rope_layout
        expected = np.stack([oracle.apply(values, row, self.conv, self.head, layout, length)
                             for values, row in zip(exact, rows, strict=True)])
        bound = np.stack([rope_apply_tolerance(values, row, self.conv, self.head, layout, call.dtype,
                                               dtype_name(result.dtype), seq_len=length)
                          for values, row in zip(exact, rows, strict=True)])
        return compare(got, expected, bound).max_ratio, result


class SinusoidalPlayer:
    """Plays tables (``fn(n, d)`` or a module adding its table to x) and timestep batches."""

    def __init__(self, entry):
        self.entry, self.declaration = entry, entry.declaration()
        self.make = _instances(entry)

    def __call__(self, call: Call):
        convention = self.declaration.spec.convention
        if self.entry.api == "timesteps":
            timesteps = torch.as_tensor(call.positions)
            timesteps = timesteps.to(DTYPES[call.dtype]) if timesteps.is_floating_point() else timesteps
            width = TIMESTEP_WIDTH
            result = self.make(num_positions=timesteps.numel(), dim=width, t_max=self.declaration.t_max)(
                timesteps, width)
            table, positions = result, _float64(timesteps)
        else:
            length, width = (int(call.positions), TABLE_WIDTH) if call.positions.ndim == 0 else call.positions
            maker = self.make(num_positions=length, dim=width)
            if self.declaration.calling.signature == "adds-to-x":
                result = maker(torch.zeros(length, 1, width))
                table = result.reshape(length, width)
            else:
                result = table = maker(length, width)
            positions = length
        expectation = checks.expectation(positions, int(width), convention, dtype_name(table.dtype))
        if tuple(table.shape) != expectation.table.shape:
            return np.inf, result
        return compare(_float64(table), expectation.table, expectation.tolerance).max_ratio, result


def _player(entry):
    return RopePlayer(entry) if entry.api.startswith("rope-") else SinusoidalPlayer(entry)


def _sequences(entry) -> dict:
    if entry.api == "table":
        return TABLE_SEQUENCES
    return timestep_sequences(entry.declaration().t_max) if entry.api == "timesteps" else ROPE_SEQUENCES


def play(entry, name: str) -> tuple[float, str]:
    """The worst ratio of sequence ``name`` on a fresh instance and where; ``inf`` when a call
    raised or changed the result of the call before it."""
    player, worst, kept = _player(entry), (0.0, ""), None
    for number, call in enumerate(_sequences(entry)[name], 1):
        try:
            ratio, result = player(call)
        except Inexpressible:
            raise
        except Exception as error:  # a call real code makes that the entry cannot take
            return np.inf, f"call {number} raised {type(error).__name__}: {error}"
        if kept is not None and not all(np.array_equal(_float64(part), copy, equal_nan=True) for part, copy in kept):
            return np.inf, f"call {number} changed the result of call {number - 1}"
        kept = [(part, _float64(part)) for part in (result if isinstance(result, tuple) else (result,))]
        if ratio > worst[0]:
            worst = (ratio, f"call {number} ({call})")
    return worst


# -- the registry -------------------------------------------------------------------------------


def test_corpus_is_big_enough():
    """At least 25 wrong and 12 correct stateful implementations."""
    assert len(STATEFUL_WRONG) >= MIN_WRONG, f"{len(STATEFUL_WRONG)} wrong entries, need {MIN_WRONG}"
    assert len(STATEFUL_CORRECT) >= MIN_CORRECT, f"{len(STATEFUL_CORRECT)} correct entries, need {MIN_CORRECT}"


def test_every_class_and_sequence_has_a_wrong_entry_and_most_are_cited():
    """Every bug class and every sequence is shown by a wrong entry; correct entries have none;
    at least two thirds of the wrong entries cite the public thread they are modelled on."""
    assert {name for entry in STATEFUL_WRONG for name in entry.bug_classes} == set(STATEFUL_BUG_CLASSES)
    assert {entry.sequence for entry in STATEFUL_WRONG} == set(SEQUENCES)
    assert not [entry.id for entry in STATEFUL_CORRECT if entry.bug_classes or entry.sequence]
    cited = [entry for entry in STATEFUL_WRONG if entry.seen_in]
    assert 3 * len(cited) >= 2 * len(STATEFUL_WRONG), f"{len(cited)} of {len(STATEFUL_WRONG)} cite a thread"


@pytest.mark.parametrize("entry", STATEFUL_ENTRIES, ids=[entry.id for entry in STATEFUL_ENTRIES])
def test_entry_is_described_and_declared(entry):
    """A one-line description, a sighting that names a repository, and a table the gate reads
    as the entry's api and target."""
    assert entry.description and len(entry.description) <= 300, f"{entry.id}: {len(entry.description)} characters"
    assert not entry.seen_in or REPOSITORY.search(entry.seen_in), f"{entry.id}: seen_in {entry.seen_in!r}"
    declaration = entry.declaration()
    assert (declaration.api, declaration.target) == (entry.api, entry.target)


# -- each entry's nature, against the oracle ----------------------------------------------------


@pytest.mark.parametrize("entry", STATEFUL_WRONG, ids=[entry.id for entry in STATEFUL_WRONG])
def test_wrong_entry_misses_under_its_sequence(entry):
    """Played on a fresh instance, the sequence the entry names misses the oracle by a margin,
    raises, or changes an earlier result."""
    ratio, where = play(entry, entry.sequence)
    assert ratio >= MISS_MARGIN, (f"{entry.target} is within {MISS_MARGIN}x its bound under {entry.sequence} "
                                  f"(worst {ratio:.3g} at {where}); its bug: {entry.description}")


@pytest.mark.parametrize("entry", STATEFUL_CORRECT, ids=[entry.id for entry in STATEFUL_CORRECT])
def test_correct_entry_is_within_bounds_under_every_sequence(entry):
    """Each sequence its call can carry, on a fresh instance: every call within bound, no
    earlier result changed."""
    played = []
    for name in _sequences(entry):
        try:
            ratio, where = play(entry, name)
        except Inexpressible:
            continue
        played.append(name)
        assert ratio <= 1, f"{entry.target} under {name}: ratio {ratio:.3g} at {where}"
    assert played, f"{entry.target}: no sequence played"
