"""The call sequences the gate plays after its grid, and the aliasing check: which sequences
each call pattern gets, that their ids do not move with the grid's options, that they stay
below ``--max-positions`` and small, that they start clean (after the grid at a size it
never asks, before it at a declared head size), that a view argument is a view, that a
result rewritten under the caller fails ``aliasing``, and that ``check --help`` and the
docs name every id."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_spec import registry
from posenc_spec.commands.check import check_epilog
from posenc_spec.commands.keys import family_text
from posenc_spec.families.rope import sequences as rope_sequences
from posenc_spec.families.rope.read import Unreadable, read_cache
from posenc_spec.families.sinusoidal import grid as sinusoidal_grid
from posenc_spec.families.sinusoidal import judge as sinusoidal_judge
from posenc_spec.families.sinusoidal import sequences as table_sequences
from posenc_spec.gate.calls import ArrayArg, Outcome
from posenc_spec.gate.child.serve import _arguments
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import Calls, plan, probes, sequence_probes
from posenc_spec.gate.wire import encode_args
from reference_impls.family import sinusoidal_encoding
from spec_tests.assertions import check_named, failure_summary

HERE = Path(__file__).resolve()
CHECKS_DOC = HERE.parents[2] / "docs" / "checks.md"  # where the docs list the check ids
RECORD = "POSENC_SEQUENCES_RECORD"
_CALLS: list[int] = []  # the calls whose positions jumped, in this process
_BUFFER = {"table": torch.empty(0)}
_SAME: dict = {}


def _rope(api, max_positions=None, **keys):
    return declare({"target": "m:f", "api": api, "max_positions": max_positions, **keys})


# name -> (declaration keys, the sequences it is played)
PATTERNS = {
    "cache positions": ({"api": "rope-cache"}, {"decode", "offsets", "grow"}),
    "cache length": ({"api": "rope-cache", "cache_call": "length"}, {"decode", "grow"}),
    "cache batched": ({"api": "rope-cache", "cache_call": "batched"}, {"decode", "offsets", "grow", "batch", "rows"}),
    "cache x-positions": ({"api": "rope-cache", "cache_call": "x-positions"},
                          {"dtype-order", "decode", "offsets", "grow", "batch", "rows"}),
    "apply": ({"api": "rope-apply"}, {"dtype-order", "decode", "offsets", "grow", "batch", "view"}),
    "apply thd": ({"api": "rope-apply", "x_layout": "thd"}, {"dtype-order", "decode", "offsets", "grow", "view"}),
    "apply q-k-cos-sin": ({"api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": "bhsd"},
                          {"dtype-order", "decode", "offsets", "grow", "batch", "rows", "view"}),
    "apply freqs-cis": ({"api": "rope-apply", "signature": "xq-xk-freqs-cis"},
                        {"dtype-order", "decode", "offsets", "grow", "batch", "view"}),
    "apply x-offset": ({"api": "rope-apply", "signature": "x-offset", "x_layout": "bhsd"},
                       {"dtype-order", "decode", "offsets", "grow", "batch", "view"}),
    "apply x-input-pos": ({"api": "rope-apply", "signature": "x-input-pos"},
                          {"dtype-order", "decode", "offsets", "grow", "batch", "rows", "view"}),
    "freqs": ({"api": "rope-freqs"}, set()),
    "table": ({"api": "table"}, {"grow"}),
    "timesteps": ({"api": "timesteps"}, {"dtype-order", "memo"}),
}


def _played(declaration) -> set[str]:
    return {probe.check_id.split("[")[0] for probe in sequence_probes(declaration)}


@pytest.mark.parametrize("name", PATTERNS)
def test_each_call_pattern_gets_the_sequences_it_can_carry(name):
    """A dtype-order where the call carries a dtype, offsets where it carries positions, batch
    and rows where x or positions have a batch axis (rows: where each row has its own
    positions), view where x is handed over; none for a frequencies target."""
    keys, expected = PATTERNS[name]
    assert _played(declare({"target": "m:f", **keys})) == expected


@pytest.mark.parametrize("name", PATTERNS)
def test_sequence_ids_do_not_depend_on_the_cap(name):
    """An xfails file keyed on ``decode[d=64]`` keeps working when --max-positions changes: the
    sizes shrink with it, the ids do not."""
    keys, _ = PATTERNS[name]
    default = plan(declare({"target": "m:f", **keys}))
    for cap in (8, 40, 300):
        assert plan(declare({"target": "m:f", **keys, "max_positions": cap})) == default, cap


@pytest.mark.parametrize("cap", [3, 30, 100, None])
@pytest.mark.parametrize("name", ["cache x-positions", "apply q-k-cos-sin", "cache length"])
def test_sequences_stay_below_the_cap_and_small(name, cap):
    """Every position below --max-positions; no call of a sequence longer than 96 positions;
    the decode steps one position each, after a prefill that ends just before them."""
    keys, _ = PATTERNS[name]
    made = sequence_probes(declare({"target": "m:f", **keys, "max_positions": cap}))
    assert all(int(probe.positions.max()) < (cap or np.inf) for probe in made)
    assert max(probe.positions.shape[-1] for probe in made) <= max(rope_sequences.GROW)
    decode = [probe for probe in made if probe.check_id.startswith("decode[")]
    if keys.get("cache_call") != "length":
        prefill, *steps = decode
        assert steps and all(step.positions.tolist() == [int(prefill.positions.max()) + 1 + number]
                             for number, step in enumerate(steps))


def test_dtype_order_calls_half_precision_first_and_rows_differ():
    """bfloat16, float16, then float32 of the same and of a shorter length; the rows of the rows
    sequence at different positions, those of the batch at the same."""
    made = sequence_probes(declare({"target": "m:f", "api": "rope-apply", "signature": "q-k-cos-sin",
                                    "x_layout": "bhsd"}))
    order = [probe for probe in made if probe.check_id.startswith("dtype-order[")]
    assert [probe.x_dtype for probe in order] == ["bfloat16", "float16", "float32", "float32"]
    assert order[3].positions.size < order[2].positions.size == order[0].positions.size
    batch, rows = (next(probe for probe in made if probe.check_id.startswith(name)) for name in ("batch[", "rows["))
    assert np.array_equal(*batch.positions) and not np.array_equal(*rows.positions)
    cos = rows.inputs[0].values  # q-k-cos-sin hands cos (batch, seq, r): a row for each row of positions
    assert cos.shape[0] == 2 and not np.array_equal(cos[0], cos[1])


def test_the_timestep_sequences_hold_their_dtypes_values():
    """The bfloat16 and float16 calls carry values those dtypes hold exactly, all within [0, t_max]."""
    made = table_sequences.timestep_sequences(1000.0)
    for probe in made:
        values = probe.timesteps.astype(np.float64)
        assert values.min() >= 0 and values.max() <= 1000.0
        if probe.input_dtype == "float16":
            assert np.array_equal(values, probe.timesteps.astype(np.float16).astype(np.float64))
        if probe.input_dtype == "bfloat16":
            assert np.array_equal(probe.timesteps.view(np.uint32) & 0xFFFF, np.zeros(probe.length, np.uint32))


@pytest.mark.parametrize("name", [name for name in PATTERNS if PATTERNS[name][0]["api"].startswith("rope")])
def test_rotary_sequences_hand_x_only_in_the_dtypes_the_grid_requires(name):
    """No rotary sequence asks for an x dtype the grid does not ask for: a sequence requires nothing the grid
    does not."""
    declaration = declare({"target": "m:f", **PATTERNS[name][0]})
    grid_dtypes = {probe.x_dtype for probe in probes(declaration)}
    assert {probe.x_dtype for probe in sequence_probes(declaration)} <= grid_dtypes


def _dtype_order_call(input_dtype):
    return next(probe for probe in table_sequences.timestep_sequences(1000.0) if probe.input_dtype == input_dtype
                and probe.check_id.startswith("dtype-order["))


@pytest.mark.parametrize("input_dtype", ["bfloat16", "float16"])
def test_a_timesteps_target_refusing_half_precision_is_noted(input_dtype):
    """A dtype-order call in a dtype the grid does not require that raises is a note naming the refusal and the
    dtypes the grid requires."""
    declaration = declare({"target": "m:f", "api": "timesteps"})
    required = sinusoidal_grid.input_dtypes(probes(declaration))
    refused = Outcome("raised", "raised TypeError: Got unsupported ScalarType BFloat16")
    result = sinusoidal_judge.judge_sequence_call(_dtype_order_call(input_dtype), refused,
                                                  declaration.spec.convention, required)
    assert required == {"int64", "float32"}
    assert result.status == "noted" and result.name == "dtype-order[64x32]", result
    assert "raised TypeError: Got unsupported ScalarType BFloat16" in result.message
    assert f"the grid requires float32 and int64 timesteps, not {input_dtype}" in result.message


def test_a_timesteps_target_refusing_float32_or_erring_in_half_precision_fails():
    """A raise on float32 timesteps (the grid's), and wrong values for bfloat16 timesteps it took, fail dtype-order."""
    declaration = declare({"target": "m:f", "api": "timesteps"})
    required = sinusoidal_grid.input_dtypes(probes(declaration))
    float32_call = next(probe for probe in table_sequences.timestep_sequences(1000.0)
                        if probe.check_id.startswith("dtype-order[") and probe.input_dtype is None)
    raised = sinusoidal_judge.judge_sequence_call(float32_call, Outcome("raised", "raised TypeError"),
                                                  declaration.spec.convention, required)
    half = _dtype_order_call("bfloat16")
    zeros = np.zeros((half.length, half.width), dtype=np.float32)
    wrong = sinusoidal_judge.judge_sequence_call(half, Outcome("ok", "float32", [zeros], ["float32"]),
                                                 declaration.spec.convention, required)
    assert raised.status == "failed" and wrong.status == "failed", (raised, wrong)


@pytest.mark.parametrize("keys, head, first", [({"api": "rope-apply", "head_dim": 64}, 64, True),
                                               ({"api": "rope-cache"}, 32, False),
                                               ({"api": "table"}, None, False), ({"api": "timesteps"}, None, False)])
def test_the_sequences_start_clean(keys, head, first):
    """At a size the grid never asks (width 16 or 32; head size 32 beside the grid's 8, 64
    and 128) the sequences come after the grid; at the one head size a declaration names,
    before it. The judge reads the outcomes back in the probes' order either way."""
    declaration = declare({"target": "m:f", **keys})
    made, grid = sequence_probes(declaration), probes(declaration)
    sizes = {getattr(probe, "width", getattr(probe, "head_dim", None)) for probe in made}
    assert head is None or sizes == {head}
    assert first == bool(sizes & {getattr(probe, "width", getattr(probe, "head_dim", None)) for probe in grid})
    calls = Calls.of(declaration)
    labels = [request.label for request in calls.requests()]
    assert labels == [probe.slot for probe in (made + grid if first else grid + made)]
    outcomes, _ = calls.split(labels)
    assert outcomes == [probe.slot for probe in grid + made]


def test_a_view_argument_is_a_non_contiguous_view_of_the_same_values():
    """``order`` lays x out in memory in that order of axes and hands over a view: transposed
    strides, the values unchanged (as transformers' ``q``)."""
    values = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    specs, payloads = encode_args((ArrayArg(values, "float32", "torch", "x", (0, 2, 1, 3)),))
    [tensor], _ = _arguments(specs, [payload.tobytes() for payload in payloads])
    assert not tensor.is_contiguous() and tensor.stride() == (60, 5, 15, 1)
    assert np.array_equal(tensor.numpy(), values)


def test_a_cache_for_a_batch_is_read_per_row_or_broadcast():
    """Positions of two rows: (2, seq, width) is read as is, one (seq, width) cache for both;
    anything else is unreadable, with the shape it came in."""
    one = np.arange(12.0).reshape(3, 4)
    outcome = type("Outcome", (), {"arrays": [one[None], one[None]], "dtypes": ["float32"] * 2})
    (cos, sin), _ = read_cache(outcome, "cos-sin", "compact", 3, 4, batch=2)
    assert cos.shape == (2, 3, 4) and np.array_equal(cos[1], one)
    outcome.arrays = [np.zeros((1, 6, 4)), np.zeros((1, 6, 4))]
    with pytest.raises(Unreadable, match=r"1x6x4 for positions of 2 rows"):
        read_cache(outcome, "cos-sin", "compact", 3, 4, batch=2)


# -- through the gate ---------------------------------------------------------------------------


def rotary_wrong_after_the_grid(x, positions):
    """Rotary embeddings (half pairs, theta 10000), doubled for bfloat16 x in a process that has
    made a call whose positions jump (as the grid's relative call does, after its bfloat16
    calls, and no sequence does): right only if the sequences come before the grid."""
    tainted = bool(_CALLS)
    if positions.numel() > 1 and bool((positions.diff() != 1).any()):
        _CALLS.append(len(positions))
    if os.environ.get(RECORD):
        with open(os.environ[RECORD], "a") as record:
            record.write(f"{os.getpid()}\n")
    half = x.shape[-1] // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, x.shape[-1], 2, dtype=torch.int64).float() / x.shape[-1]))
    angles = torch.outer(positions.float(), inv_freq)
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    rotated = x * cos[None, :, None, :].to(x.dtype) + torch.cat((-x[..., half:], x[..., :half]), -1) * sin[
        None, :, None, :].to(x.dtype)
    return 2 * rotated if tainted and x.dtype == torch.bfloat16 else rotated


def table_in_one_buffer(n, d):
    """A right table, written into one buffer for every call and returned as a view of it."""
    if _BUFFER["table"].numel() < n * d:
        _BUFFER["table"] = torch.empty(n * d)
    table = _BUFFER["table"][: n * d].view(n, d)
    table.copy_(torch.from_numpy(sinusoidal_encoding(n, d, "vaswani", dtype=np.float32)))
    return table


def the_same_tensor_for_a_size(n, d):
    """A right table, the same tensor object returned for a size asked again (never written)."""
    if (n, d) not in _SAME:
        _SAME[n, d] = torch.from_numpy(sinusoidal_encoding(n, d, "vaswani", dtype=np.float32))
    return _SAME[n, d]


ROTARY = {"target": f"{HERE}:rotary_wrong_after_the_grid", "api": "rope-apply", "head_dim": 8, "max_positions": 64}


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    """The reports of the three targets above, and the process ids ``rotary_wrong_after_the_grid``
    recorded, one a call."""
    folder = tmp_path_factory.mktemp("sequences")
    folder.chmod(0o777)  # the targets' users write here
    record = folder / "record"
    os.environ[RECORD] = str(record)
    try:
        reports = check_named({"rotary_wrong_after_the_grid": declare(ROTARY), **{
            name: declare({"target": f"{HERE}:{name}", "max_positions": 64, "odd": "skip"})
            for name in ("table_in_one_buffer", "the_same_tensor_for_a_size")}})
    finally:
        os.environ.pop(RECORD)
    return reports, record.read_text().split()


def test_at_a_declared_head_size_the_sequences_come_before_the_grid(gated):
    """A target that turns wrong after the grid's calls conforms at its declared head size:
    its sequences ran first, with none of the grid's state, in the grid's process."""
    reports, records = gated
    report = reports["rotary_wrong_after_the_grid"]
    assert report.conforms and report.result("dtype-order[d=8]").passed, failure_summary(report)
    assert len(set(records)) == 1, records


def test_a_result_rewritten_by_the_next_call_fails_aliasing(gated):
    """The table handed out as a view of a buffer the next call rewrites: ``aliasing`` fails,
    naming the call that changed it and the call whose result it was; nothing else fails."""
    report = gated[0]["table_in_one_buffer"]
    assert [check.name for check in report.failures()] == ["aliasing"], failure_summary(report)
    assert re.match(r"the call for 50x4 changed the result of the call for 50x8", report.result("aliasing").message)


def test_a_result_handed_out_again_unchanged_passes_aliasing(gated):
    """The same tensor returned for a size asked twice, never written: no result changed."""
    report = gated[0]["the_same_tensor_for_a_size"]
    assert report.conforms and report.result("aliasing").passed, failure_summary(report)


# -- the documentation names every id -----------------------------------------------------------


def _id_names() -> set[str]:
    """The check ids (without their slots) of the plans of the patterns above and of every
    registered family's APIs, declared with their defaults."""
    names = set()
    for keys, _ in [*PATTERNS.values(), *(({"api": api}, None) for api in registry.apis())]:
        names |= {check_id.split("[")[0] for check_id in plan(declare({"target": "m:f", **keys}))}
    return names


def test_check_help_and_the_docs_name_every_check():
    """Every check id the plans hold, the sequences' and aliasing included, is named in
    ``check --help``'s epilog or the family's ``posenc-spec keys FAMILY``, and in docs/checks.md."""
    docs = CHECKS_DOC.read_text(encoding="utf-8")
    help_text = " ".join(" ".join([check_epilog(), *(family_text(names) for names in registry.names())]).split())
    missing = {name: [where for where, text in (("check --help", help_text), ("docs/checks.md", docs))
                      if not re.search(rf"\b{re.escape(name)}\b", text)] for name in _id_names()}
    assert not {name: where for name, where in missing.items() if where}
