"""The grid a gate would call and the judge of each call: ids, inputs, and verdicts on exact,
broken and malformed results."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc_spec.families.t5buckets import grid, judge, oracle
from posenc_spec.families.t5buckets.conventions import PRESETS, BucketConvention
from posenc_spec.families.t5buckets.spec import BucketSpec
from posenc_spec.gate.calls import Outcome
from posenc_spec.gate.child.convert import BadResult
from posenc_spec.gate.judge import Results
from spec_tests.families.t5buckets.assertions import assert_status

ENCODER = PRESETS["t5-encoder"]


def _exact(probe, convention):
    return oracle.buckets(probe.relative_positions(convention), convention)


def test_static_plan_ids():
    """A positions target: import first, eight checks per slot (int64, int32, int64:2d), call and
    formula for the extremes of each dtype, call and int-min for -2**(b-1), then determinism,
    aliasing and global-state."""
    ids = grid.plan_ids(grid.probes_for(ENCODER, "static"))
    per_slot = [f"{name}[{slot}]" for slot in ("int64", "int32", "int64:2d") for name in grid.POSITION_CHECKS]
    assert ids[0] == "import" and ids[1:25] == per_slot
    assert ids[25:33] == [item for dtype in ("int32", "int64")
                          for item in (f"call[extremes:{dtype}]", f"formula[extremes:{dtype}]",
                                       f"call[int-min:{dtype}]", f"int-min[{dtype}]")]
    assert ids[33:] == ["determinism", "aliasing", "global-state"]


def test_table_plan_ids():
    """A table target: nine checks per shape (relative-only beside the eight), square shapes
    alone for a square-only target."""
    ids = grid.plan_ids(grid.probes_for(ENCODER, "bias", square_only=True))
    assert ids == ["import"] + [f"{name}[{slot}]" for slot in ("1x1", "130x130") for name in grid.TABLE_CHECKS] + \
        ["determinism", "aliasing", "global-state"]
    slots = [probe.slot for probe in grid.probes_for(PRESETS["cpmant"], "table")]
    assert slots == ["1x1", "5x9", "9x5", "1x2049", "2049x2049", "1x1"]


def test_positions_cover_the_range_and_the_extremes():
    """The dense slots hold every r in [-4M, 4M]; the 2-D slot is T5's (17, 4M + 1) matrix;
    the extremes are the largest distances of each dtype, -2**(b-1) apart."""
    probes = {probe.slot: probe for probe in grid.probes_for(ENCODER, "static")}
    assert probes["int64"].values.tolist() == list(range(-512, 513))
    assert probes["int32"].dtype == "int32" and np.array_equal(probes["int32"].values, probes["int64"].values)
    two_d = probes["int64:2d"].values
    assert two_d.shape == (17, 513) and two_d[0, 0] == -256 and two_d[16, 512] == 240
    assert probes["extremes:int32"].values.tolist() == [-(2**31 - 1), -(2**31 - 2), 2**31 - 2, 2**31 - 1]
    assert {-(2**53 + 1), 2**32, 2**63 - 1} <= set(probes["extremes:int64"].values.tolist())
    assert probes["int-min:int64"].values.tolist() == [-(2**63)]


def test_large_max_distance_samples_the_starts():
    """Beyond DENSE_LIMIT positions the dense slots hold each bucket start and its neighbour,
    both signs, and no int32 slot once the range leaves int32."""
    convention = BucketConvention(True, 64, 2**33)
    probes = grid.probes_for(convention, "static")
    positions = set(probes[0].values.tolist())
    assert all(start in positions and start - 1 in positions and -start in positions
               for start in oracle.bucket_starts(convention))
    assert len(positions) < grid.DENSE_LIMIT and "int32" not in [probe.slot for probe in probes]


@pytest.mark.parametrize("signature", grid.SIGNATURES)
@pytest.mark.parametrize("preset", ["t5-encoder", "t5-decoder", "gluonnlp-encoder"])
def test_exact_results_pass_every_check(signature, preset):
    """The oracle's own buckets, handed back for every probe, pass every check of the plan
    (int-min included: the oracle is right there too)."""
    convention = PRESETS[preset]
    for probe in grid.probes_for(convention, signature, query_offset="end"):
        if probe.role == "repeat":
            continue
        for result in judge.judge_call(probe, _exact(probe, convention), convention):
            assert result.status in ("passed", "skipped"), f"{probe.slot}: {result.name}: {result.message}"


def test_verdicts_are_named_by_the_plan():
    """The judge names its verdicts by the probe's ids, all but call[S]."""
    probe = grid.probes_for(ENCODER, "table")[2]
    names = [result.name for result in judge.judge_call(probe, _exact(probe, ENCODER), ENCODER)]
    assert names == probe.check_ids()[1:]


def test_wrong_shape_fails_every_check_of_the_slot():
    """A result of the wrong shape fails each check of its slot with one message naming both shapes."""
    probe = grid.probes_for(ENCODER, "static")[0]
    results = judge.judge_call(probe, np.zeros(7, dtype=np.int64), ENCODER)
    assert len(results) == 7 and all(result.status == "failed" for result in results)
    assert "returned shape (7,) where the relative positions have shape (1025,)" in results[0].message


def test_float_buckets_fail_integer_and_are_not_judged_further():
    """Float buckets (a bias read back without rounding) fail ``integer``; the rest says why it was not judged."""
    probe = grid.probes_for(ENCODER, "static")[0]
    results = judge.judge_call(probe, _exact(probe, ENCODER).astype(np.float32), ENCODER)
    assert_status(results[0], "failed", "integer", "float32")
    assert all(result.message.startswith("not judged further: buckets of dtype float32") for result in results[1:])


def _probe(slot):
    return next(probe for probe in grid.probes_for(ENCODER, "static") if probe.slot == slot)


def test_int_min_is_noted_with_the_input_the_bucket_and_why():
    """What every abs()-based implementation returns at -2**31, the input itself, is a note of
    ``int-min[int32]`` (no difference of two int32 positions is -2**31), never a failure."""
    [result] = judge.judge_call(_probe("int-min:int32"), np.array([-(2**31)], dtype=np.int64), ENCODER)
    assert_status(result, "noted", "int-min", "relative position -2147483648 got -2147483648, expected 15")
    assert "-2**31 is no difference of two int32 positions" in result.message
    assert result.name == "int-min[int32]"


def test_int_min_right_passes():
    """The exact bucket at -2**63 passes ``int-min[int64]``."""
    probe = _probe("int-min:int64")
    [result] = judge.judge_call(probe, _exact(probe, ENCODER), ENCODER)
    assert_status(result, "passed", "int-min")


def test_extremes_a_caller_can_pass_still_fail():
    """The largest distances a dtype holds are differences of two positions: a wrong bucket there fails."""
    probe = _probe("extremes:int32")
    wrong = _exact(probe, ENCODER)
    wrong[0] = 0  # -(2**31 - 1): the farthest key before the query, in the query's own bucket
    [result] = judge.judge_call(probe, wrong, ENCODER)
    assert_status(result, "failed", "extremes", "relative position -2147483647 got 0, expected 15")


@pytest.mark.parametrize(("status", "verdict"), [("raised", "noted"), ("died", "noted"), ("malformed", "failed")])
def test_a_call_on_int_min_that_raises_or_crashes_is_noted(status, verdict):
    """A call that raises or crashes on -2**31 alone is noted; a reply that breaks the protocol still fails."""
    results = Results()
    bucket_judge = judge.BucketJudge(BucketSpec(ENCODER), results)
    bucket_judge.judge(_probe("int-min:int32"), Outcome(status, "raised OverflowError: abs() overflowed"))
    assert_status(results.by_id["call[int-min:int32]"], verdict, "call", "int-min:int32")
    assert results.by_id["int-min[int32]"].status == "skipped"
    if verdict == "noted":
        assert "-2**31 is no difference of two int32 positions" in results.by_id["call[int-min:int32]"].message


def test_a_call_on_extremes_that_raises_fails():
    """A call that raises on the largest distances a dtype holds fails: a caller can pass them."""
    results = Results()
    judge.BucketJudge(BucketSpec(ENCODER), results).judge(_probe("extremes:int64"),
                                                          Outcome("raised", "raised OverflowError"))
    assert_status(results.by_id["call[extremes:int64]"], "failed", "call")


def test_determinism():
    """The repeat passes when equal, and names the first differing element otherwise."""
    first = np.arange(5)
    assert_status(judge.judge_repeat(first, first.copy()), "passed", "repeat")
    assert_status(judge.judge_repeat(first, np.array([0, 1, 2, 9, 4])), "failed", "repeat", "element 3: 3 then 9")
    with pytest.raises(ValueError, match="judge_repeat"):
        judge.judge_call(grid.probes_for(ENCODER)[-1], first, ENCODER)


def test_unknown_signature_is_refused():
    """A signature outside the four is named with them."""
    with pytest.raises(ValueError, match="signature must be one of static, method, table, bias, got 'module'"):
        grid.probes_for(ENCODER, "module")


def test_keyword_arguments_rename_negate_and_drop():
    """Roles go under the callee's names: ``"causal"`` gets the negated flag, ``""`` is not passed."""
    arguments = grid.keyword_arguments(PRESETS["t5-decoder"], {"bidirectional": "causal", "max_distance": "",
                                                                  "relative_position": "relative_positions"},
                                          relative_position="r")
    assert arguments == {"causal": True, "num_buckets": 32, "relative_positions": "r"}


class _Bias(torch.nn.Module):
    """A bias module reading its buckets through ``table``, its heads optionally made to differ."""

    def __init__(self, skew=0.0):
        super().__init__()
        self.table, self.skew = torch.nn.Embedding(32, 2), skew

    def forward(self, q_len, k_len):
        buckets = torch.tensor(oracle.table(q_len, k_len, ENCODER))
        return (self.table(buckets) + torch.tensor([0.0, self.skew])).permute(2, 0, 1)


def test_bias_buckets_read_back_the_table():
    """Row b of the embedding set to b: the bias read back is the bucket table, as int64; heads
    that disagree are refused; non-whole values come back as floats (``integer`` then fails)."""
    read = grid.bias_buckets(_Bias(), "table", lambda module: module(6, 9), 6, 9)
    assert read.dtype == np.int64 and np.array_equal(read, oracle.table(6, 9, ENCODER))
    with pytest.raises(BadResult, match="returned a bias whose heads differ"):
        grid.bias_buckets(_Bias(skew=1.0), "table", lambda module: module(6, 9), 6, 9)
    halves = grid.bias_buckets(_Bias(), "table", lambda module: module(6, 9)[:1] / 2, 6, 9)
    assert halves.dtype == np.float64


def test_decode_sequence_follows_the_grid_where_queries_are_the_last_keys():
    """A table or bias declared with the queries at the end plays a prefill and three one-query
    steps, judged as decode; none for queries at the start, a square-only target or a function."""
    probes = grid.decode_probes(ENCODER, "bias", "end", square_only=False)
    assert [probe.shape for probe in probes] == [(131, 131), (1, 132), (1, 133), (1, 134)]
    assert {probe.check_id for probe in probes} == {"decode"}
    step = probes[1].relative_positions(ENCODER)
    assert step[0, 0] == -131 and step[0, -1] == 0
    assert grid.plan_ids(grid.probes_for(ENCODER, "bias") + probes)[-3:] == ["decode", "aliasing", "global-state"]
    assert not grid.decode_probes(ENCODER, "bias", "start", False) and not grid.decode_probes(ENCODER, "bias", "end",
                                                                                              True)
    assert not grid.decode_probes(ENCODER, "static", "end", False)


@pytest.mark.parametrize("max_positions", [1, 2, 5, 17, 100, 130, 700, 2**40])
@pytest.mark.parametrize("signature", grid.SIGNATURES)
@pytest.mark.parametrize("preset", ["t5-encoder", "t5-decoder", "cpmant"])
def test_no_call_hands_a_relative_position_beyond_max_positions(max_positions, signature, preset):
    """Under max_positions N every call, the decode sequence's too, hands relative positions of
    at most N - 1 either way; the extremes reach it (within the dtype) and -2**(b-1) is not called."""
    convention = PRESETS[preset]
    probes = [*grid.probes_for(convention, signature, "end", max_positions=max_positions),
              *grid.decode_probes(convention, signature, "end", False, max_positions)]
    longest = max(int(np.abs(probe.relative_positions(convention)).max()) for probe in probes)
    assert longest <= max_positions - 1
    assert not any(probe.role == "int-min" for probe in probes)
    for probe in (probe for probe in probes if probe.role == "extremes"):
        assert int(np.abs(probe.values).max()) == min(max_positions - 1, np.iinfo(probe.dtype).max), probe.slot
