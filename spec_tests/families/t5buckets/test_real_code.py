"""Real code against the family: what each implementation computes, recorded in
``spec_tests/data/t5buckets_real_code.json`` (with the versions it was recorded with), held
against the installed library where it is installed and against the oracle always.

Found (the record, and the tests below, say it): every implementation computes the exact
buckets at its settings, at every relative position in [-4M, 4M] and at the largest distances
its dtype holds, int32 and int64 alike; and each gives a wrong bucket at ``-2**(b-1)``, the one
input where ``abs()`` and negation overflow (never a difference of two non-negative
positions). transformers' T5 copies return the input itself there (negative: an embedding
lookup raises), ProphetNet, LayoutLMv2/v3 causal and x-transformers causal bucket 0 (a
distant key as the query itself), ProphetNet bidirectional in int64 bucket 16 (the wrong
half), CPM-Ant in int64 bucket 0 (its int32 cast). Beyond the function, MPNet's encoder
computes its buckets for 32 whatever its config's ``relative_attention_num_buckets`` says: at
64 it puts the key one after the query in bucket 17, where 64 buckets put it in 33.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from posenc_spec.families.t5buckets import grid, judge, oracle
from posenc_spec.families.t5buckets.conventions import BucketConvention
from spec_tests.families.t5buckets import real_code
from spec_tests.families.t5buckets.real_code import MPNET_64, TARGETS, VERSIONS, key

FACTS = json.loads(real_code.RECORD.read_text(encoding="utf-8"))
CASES = [(target, convention) for target in TARGETS for convention in target.conventions]
IDS = [key(target, convention) for target, convention in CASES]
# What each positions target returns at -2**(b-1) in (int32, int64): (first - 2**(b-1)) through
# abs() or negation, 0 where a clamp or a cast swallows it, or 16 (the upper half's first bucket).
INT_MIN_BUCKETS = {
    "transformers.layoutlmv2.relative_position_bucket @ t5-decoder": (0, 0),
    "transformers.MPNetEncoder.relative_position_bucket @ t5-encoder": (16 - 2**31, 16 - 2**63),
    "transformers.prophetnet.compute_relative_buckets @ t5-decoder": (0, 0),
    "transformers.prophetnet.compute_relative_buckets @ t5-encoder": (16 - 2**31, 16),
    "transformers.CpmAntSegmentPositionEmbedding._position_bucket @ cpmant": (-(2**31), 0),
    "x-transformers.RelativePositionBias._relative_position_bucket @ t5-encoder": (16 - 2**31, 16 - 2**63),
    "x-transformers.RelativePositionBias._relative_position_bucket @ t5-decoder": (0, 0),
}


def _skip_unless_installed(target):
    version = target.installed()
    if version is None:
        pytest.skip(f"{target.library} is not installed; to check {target.id}: {real_code.INSTALL[target.library]}")
    if version != VERSIONS[target.library] and target.library != "transformers":
        pytest.skip(f"{target.id} was recorded with {target.library} {VERSIONS[target.library]}, {version} is "
                    f"installed: {real_code.INSTALL[target.library]}")


def test_every_case_is_recorded():
    """The record holds exactly the targets and conventions this module names."""
    assert sorted(FACTS["entries"]) == sorted(IDS)
    assert {library: FACTS["recorded_with"][library] for library in VERSIONS} == VERSIONS


@pytest.mark.parametrize(("target", "convention"), CASES, ids=IDS)
def test_installed_library_computes_the_record(target, convention):
    """The installed library computes what the record says, run for run and extreme for extreme
    (transformers whatever its version: its T5 function has not changed since 2020, and a
    release that changes it is a result to review)."""
    _skip_unless_installed(target)
    recorded = {name: value for name, value in FACTS["entries"][key(target, convention)].items()
                if name not in ("library", "version", "function", "signature")}
    assert real_code.record(target, convention) == recorded, f"{target.id} at {convention.name()}: not the record"


@pytest.mark.parametrize(("target", "convention"), CASES, ids=IDS)
def test_record_agrees_with_the_oracle(target, convention):
    """The recorded buckets are the oracle's over the dense grid (a table's over its diagonals)
    and at the extremes; at ``-2**(b-1)`` each differs from the oracle as listed. MPNet's encoder
    at 64 buckets alone deviates inside the grid: its smallest input is the key one after the
    query (bucket 17, not 33)."""
    facts = FACTS["entries"][key(target, convention)]
    assert BucketConvention(**facts["convention"]) == convention
    starts = [start for start, _ in facts["runs"]]
    relative = np.arange(starts[0], -starts[0] + 1) if facts.get("shape") is None else \
        np.arange(starts[0], facts["shape"][1])
    got, expected = real_code.expand_runs(facts["runs"], relative), oracle.buckets(relative, convention)
    differing = relative[got != expected]
    if (target.id, convention) == ("transformers.MPNetEncoder.compute_position_bias", MPNET_64):
        smallest = int(differing[np.argmin(np.abs(differing))])
        assert (smallest, int(got[relative == 1][0]), int(expected[relative == 1][0])) == (1, 17, 33)
        return
    assert not differing.size, f"{target.id}: differs from the oracle at {differing[:5].tolist()}"
    if "extremes" not in facts:
        return
    for dtype, values in facts["extremes"].items():
        for relative_position, bucket in values.items():
            assert bucket == oracle.exact_bucket(int(relative_position), convention), \
                f"{target.id} at {dtype} {relative_position}: {bucket}"
    int_min = tuple(facts["int-min"][dtype][str(np.iinfo(dtype).min)] for dtype in ("int32", "int64"))
    exact = oracle.exact_bucket(np.iinfo(np.int64).min, convention)
    assert int_min == INT_MIN_BUCKETS.get(key(target, convention), (-(2**31), -(2**63))) and exact not in int_min
    assert facts["int32_runs_equal"], f"{target.id}: int32 positions give other buckets than int64 ones"


@pytest.mark.parametrize(("target", "convention"), CASES, ids=IDS)
def test_grid_verdicts_on_real_code(target, convention):
    """The family's whole grid on the installed code: every check passes but ``int-min[D]``,
    which every positions target is noted for (never failed), and MPNet's encoder at 64
    buckets, which fails ``formula``, ``exact-small``, ``halves`` and ``saturation`` on its
    130x130 table (its 1x1 table is r = 0, bucket 0 at any count)."""
    _skip_unless_installed(target)
    failed, noted = [], []
    probes = grid.probes_for(convention, target.signature, target.query_offset, target.square_only)
    results = {}
    for probe in probes:
        buckets = real_code.call(target, probe, convention)
        if probe.role == "repeat":
            verdicts = [judge.judge_repeat(results[probe.slot], buckets)]
        else:
            results[probe.slot] = buckets
            verdicts = judge.judge_call(probe, buckets, convention)
        failed += [result.name for result in verdicts if result.status == "failed"]
        noted += [result.name for result in verdicts if result.status == "noted"]
    if (target.id, convention) == ("transformers.MPNetEncoder.compute_position_bias", MPNET_64):
        assert failed == [f"{name}[130x130]" for name in ("formula", "exact-small", "halves", "saturation")], failed
    else:
        assert failed == [], f"{target.id} at {convention.name()}: {failed}"
    positions = target.signature in ("static", "method")
    assert noted == (["int-min[int32]", "int-min[int64]"] if positions else []), f"{target.id}: {noted}"
