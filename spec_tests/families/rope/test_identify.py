"""identify --api rope-* from the calls' results alone (no process): every rope type's cache,
float64 from the oracle and float32 as torch computes it, comes back with its parameters;
unit vectors through a rotation give back the pairing (half or interleaved, first or last
features, the rotary size); a random result, a pairing other than the declared one and an
answer that fails on calls it was not fitted on give "none" with the nearest convention."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from meta_tests.corpus.rope_registry import cache_outcome
from posenc_spec.families.rope import grid, oracle
from posenc_spec.families.rope.conventions import RopeConvention
from posenc_spec.families.rope.identify import CallShape, answer, probes, read
from posenc_spec.gate.calls import Outcome

CACHE = CallShape("rope-cache")
PHI3_LIKE = {"short_factor": [round(1.08 ** (i / 31), 4) for i in range(32)],
             "long_factor": [round(48.0 ** (i / 31), 4) for i in range(32)],
             "original_max_position_embeddings": 4096}
LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
# name -> (convention, the declared head size or None for the fit's 64 and 128)
TYPES = {
    "default": (RopeConvention(), None),
    "theta 1e6, partial 0.25": (RopeConvention(theta=1e6, partial_rotary_factor=0.25), None),
    "linear": (RopeConvention("linear", params={"factor": 4.0}), None),
    "dynamic": (RopeConvention("dynamic", params={"factor": 2.0, "original_max_position_embeddings": 4096}), None),
    "yarn": (RopeConvention("yarn", params={"factor": 4.0, "original_max_position_embeddings": 4096}), None),
    "yarn untruncated (gpt-oss)": (RopeConvention("yarn", 150000.0, {"factor": 32.0, "truncate": False,
                                                                     "original_max_position_embeddings": 4096}), None),
    "yarn with attention_factor": (RopeConvention("yarn", params={"factor": 8.0, "attention_factor": 1.2,
                                                                  "original_max_position_embeddings": 2048}), None),
    "llama3 (Llama 3.1)": (RopeConvention("llama3", 500000.0, LLAMA31), None),
    "longrope (Phi-3-like)": (RopeConvention("longrope", params=PHI3_LIKE, max_position_embeddings=131072), 64),
    "proportional (Gemma 4)": (RopeConvention("proportional", 1e6, partial_rotary_factor=0.25), None),
}


def _cache(conv, head_dim, positions, dtype):
    """The compact (cos, sin): the float64 oracle, or float32 as torch computes it from float32 inv_freq."""
    if dtype == "float64":
        return oracle.cache(positions, conv, head_dim)
    inv_freq, factor = conv.frequencies(head_dim, int(positions.max()) + 1)
    angles = torch.outer(torch.as_tensor(positions).float(), torch.as_tensor(inv_freq, dtype=torch.float32))
    held = conv.cache_factor(factor)
    return (angles.cos() * held).numpy(), (angles.sin() * held).numpy()


def cache_outcome_of(conv, dtype="float64", layout="half"):
    def call(probe):
        return cache_outcome(*_cache(conv, probe.head_dim, probe.positions, dtype), layout, dtype)
    return call


def apply_outcome(conv, layout):
    def call(probe):
        rotated = oracle.apply(probe.x, probe.positions, conv, probe.head_dim, layout)
        return Outcome("ok", "", arrays=[grid.to_layout(rotated, probe.x_layout).astype(np.float32)],
                       dtypes=["float32"])
    return call


def identify(outcome_of, shape=CACHE, head_dim=None, max_positions=None, validation_of=None):
    """The answer from the calls identify makes, each answered by ``outcome_of(probe)``."""
    fits, checks = probes(shape, head_dim, max_positions)
    fit_results = []
    for call in fits:
        outcome = outcome_of(call.probe)
        fit_results.append((call, outcome, read(call, outcome, shape)[0]))
    validation_of = validation_of or outcome_of
    with np.errstate(all="ignore"):
        return answer(fit_results, [(call, validation_of(call.probe)) for call in checks], shape, max_positions)


def expected(conv, layout, heads=(64, 128)):
    return {**conv.as_dict(), "layout": layout, "head_dim": list(heads)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", TYPES)
def test_cache_of_every_type_is_recovered(name, dtype):
    """Type, theta, rotary size and every parameter come back exactly, and within bound."""
    conv, head_dim = TYPES[name]
    found = identify(cache_outcome_of(conv, dtype), head_dim=head_dim, max_positions=conv.max_position_embeddings)
    assert found["convention"] == expected(conv, "half", (head_dim,) if head_dim else (64, 128)), found["message"]
    assert found["name"] == conv.rope_type and found["max_error_ratio"] <= 1, found["message"]


@pytest.mark.parametrize("layout", ["interleaved", "compact"])
def test_cache_layout_is_read_from_the_columns(layout):
    conv = RopeConvention("linear", params={"factor": 2.0})
    found = identify(cache_outcome_of(conv, "float32", layout))
    assert found["convention"] == expected(conv, layout), found["message"]


APPLY = {  # name -> (convention, pairing, head size, x layout)
    "half": (RopeConvention(), "half", None, "bshd"),
    "interleaved": (RopeConvention(theta=500000.0), "interleaved", None, "bhsd"),
    "partial 0.5, linear, sbhd (Megatron)": (RopeConvention("linear", params={"factor": 2.0},
                                                            partial_rotary_factor=0.5), "half", None, "sbhd"),
    "last 64 of 192, interleaved yarn (DeepSeek MLA)": (
        RopeConvention("yarn", params={"factor": 40.0, "original_max_position_embeddings": 4096}, rotary_dim=64,
                       rotary_features="last"), "interleaved", 192, "thd"),
    "proportional (Gemma 4)": (RopeConvention("proportional", 1e6, partial_rotary_factor=0.25), "half", None, "bshd"),
}


@pytest.mark.parametrize("name", APPLY)
def test_apply_pairing_is_recovered(name):
    """Unit vectors through the rotation show which features pair, which rotate, and each angle."""
    conv, layout, head_dim, x_layout = APPLY[name]
    shape = CallShape("rope-apply", x_layout=x_layout)
    found = identify(apply_outcome(conv, layout), shape, head_dim)
    assert found["convention"] == expected(conv, layout, (head_dim,) if head_dim else (64, 128)), found["message"]


def test_frequencies_with_their_attention_factor():
    """rope-freqs returning (inv_freq, attention_factor) in float32: gpt-oss's untruncated yarn."""
    conv = TYPES["yarn untruncated (gpt-oss)"][0]

    def outcome(probe):
        inv_freq, factor = conv.frequencies(probe.head_dim)
        return Outcome("ok", "", arrays=[inv_freq.astype(np.float32), np.float32(factor).reshape(())],
                       dtypes=["float32", "float32"], is_tuple=True)

    found = identify(outcome, CallShape("rope-freqs"))
    assert found["convention"] == expected(conv, None), found["message"]
    assert "rope-freqs shows the frequencies at no call length" in found["message"]


def test_per_pair_factors_without_a_length_are_none():
    """rope-freqs shows one set of per-pair factors: whether they switch is not determined, so
    it is no longrope; the nearest is the longrope with those factors, within bound."""
    conv = RopeConvention("longrope", params=PHI3_LIKE, max_position_embeddings=131072)

    def outcome(probe):
        return Outcome("ok", "", arrays=[conv.frequencies(probe.head_dim)[0].astype(np.float32)], dtypes=["float32"])

    found = identify(outcome, CallShape("rope-freqs"), head_dim=64, max_positions=131072)
    assert found["name"] == "none" and found["nearest"]["name"] == "longrope", found["message"]
    assert found["nearest"]["convention"]["params"]["short_factor"] == PHI3_LIKE["short_factor"]
    assert "whether they switch with the length is not determined" in found["message"]


def test_random_values_are_none_with_the_nearest():
    generator = np.random.default_rng(11)

    def outcome(probe):
        width = probe.head_dim
        values = [generator.uniform(-1, 1, (probe.positions.size, width)).astype(np.float32) for _ in range(2)]
        return Outcome("ok", "", arrays=values, dtypes=["float32", "float32"])

    found = identify(outcome)
    assert found["name"] == "none" and found["convention"] is None
    assert found["nearest"]["max_error_ratio"] > 1 and found["nearest"]["name"], found["message"]
    assert found["message"].startswith("none: no rotary convention fits; nearest ")


def test_a_pairing_other_than_the_declared_one_is_none():
    """Interleaved rotation judged as the declared half pairing: none, saying what the calls show."""
    found = identify(apply_outcome(RopeConvention(), "interleaved"), CallShape("rope-apply", rope_layout="half"))
    assert found["name"] == "none" and found["nearest"]["convention"]["layout"] == "half", found["message"]
    assert 1 < found["max_error_ratio"] < np.inf, found["message"]
    assert "the calls pair the features as interleaved, not as the declared half" in found["message"]


def test_a_cache_in_the_other_layout_than_declared_is_none():
    """Meta's pair order (c0 c0 c1 c1 ...) read as the declared half layout fits no convention."""
    found = identify(cache_outcome_of(RopeConvention(), "float32", "interleaved"),
                     CallShape("rope-cache", cache_layout="half"))
    assert found["name"] == "none" and found["nearest"]["max_error_ratio"] > 1, found["message"]


def test_an_answer_that_fails_elsewhere_is_none_with_it_as_nearest():
    """Fit calls of theta 10000, validation calls of theta 10001: the fit is named only as the
    nearest, with its error/tolerance on the call it failed."""
    found = identify(cache_outcome_of(RopeConvention()), validation_of=cache_outcome_of(RopeConvention(theta=10001.0)))
    assert found["name"] == "none" and found["nearest"]["convention"]["theta"] == 10000, found["message"]
    assert found["nearest"]["max_error_ratio"] > 1
    assert "fails the gate's formula check on a call it was not fitted on" in found["message"]
