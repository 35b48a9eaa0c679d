"""The ALiBi gate's power, measured on the ALiBi corpus and on real code, through the real gate:
every wrong entry is rejected with a failed check that names its slip's call (and, where its
values can show it, a hint naming the slip), every correct entry conforms, each under the
declaration a user would write (``entry.config_table()``, read by :func:`declare` as a
``[[targets]]`` table is); the real implementations that install are declared as their users
would and conform, or fail with their known deviation.

The corpus and the real code go through one ``check_many`` call under ``--fail-fast`` (each
target in a sealed child; a sample is run in full and held to the same verdicts, and every wrong
entry to the same hints); each entry
is then its own test, so that a survivor or a false alarm is named in the test id.
"""

import importlib.util

import pytest

from meta_tests.corpus.alibi_registry import ALIBI_CORRECT, ALIBI_ENTRIES, ALIBI_WRONG
from posenc_spec.gate.declaration import declare
from spec_tests.assertions import (
    assert_advice_conforms,
    assert_fail_fast_agrees,
    assert_hint,
    assert_same_hints,
    check_named,
)
from spec_tests.assertions import failure_summary as _summary

CALL_FAILS = "the call fails (raises, or returns another shape): no values to show the slip"
# The check that rejects each wrong entry, and the slip its hint names (or why none can).
WRONG = {
    "geometric_for_every_head_count": ("formula[h=1-128]", "alibi-geometric-slopes"),
    "slopes_from_head_zero": ("formula[h=1-128]", "alibi-slope-rule"),
    "interleave_even_members": ("formula[h=1-128]", "alibi-slope-rule"),
    "extra_slopes_without_stride": ("formula[h=1-128]", "alibi-slope-rule"),
    "closest_power_rounded_up": ("formula[h=1-128]", "alibi-slope-rule"),
    "mpt_base_over_num_heads": ("call[L=7]", CALL_FAILS),
    "undefined_name_for_other_head_counts": ("call[h=1-128]", CALL_FAILS),
    "slopes_reversed": ("formula[L=7]", "alibi-slopes-reversed"),
    "tensor_parallel_first_slice": ("formula[L=7]", "alibi-slope-rule"),  # heads 56..111 repeat heads 0..55
    "tensor_parallel_local_head_count": ("formula[L=7]", "alibi-slope-rule"),  # the slopes of 56 heads, twice
    "bias_in_bfloat16_whatever_dtype": ("formula[L=258:float32]", "alibi-bfloat16"),
    "PositionsInComputeDtype": ("formula[64x64:float16]", "alibi-low-precision-positions"),
    "NoBiasWhenDecoding": ("formula[p=7]", "alibi-no-decode-bias"),
    "BiasFromQueryWindow": ("formula[p=7:float32]", "alibi-no-decode-bias"),
    "CacheSlicedFromTopLeft": ("formula[p=7]", "alibi-cache-corner"),
    "QueriesAtTheStart": ("formula[p=7]", "alibi-queries-first"),
    "CacheKeptWhenTooShort": ("call[64x64]", CALL_FAILS),  # the cached 8 keys returned for 64
    "OffsetPastTheContext": ("formula[8x8:float32]", "alibi-form"),
    "sign_flipped": ("formula[L=7]", "alibi-form"),
    "NonsymmetricBidirectional": ("formula[8x8]", "alibi-form"),
    "causal_row_for_bidirectional": ("formula[L=7]", "alibi-form"),
    "padding_ignored": ("formula[mask-left:float32]", "alibi-padding"),
    "bias_max_hard_coded": ("formula[L=7]", "alibi-bias-max"),
    "PartialSlopesOfAllHeads": ("formula[8x8]", "alibi-partial-heads"),
    "PartialUnbiasedHeadsFirst": ("formula[8x8]", "alibi-partial-heads"),
    "slopes_from_float16_buffer": ("formula[h=1-128]", "alibi-float16-slopes"),
    "BiasFromFloat16Slopes": ("formula[8x8]", "alibi-float16-slopes"),
}

BLOOM, FALCON, MPT = (f"transformers.models.{name}.modeling_{name}" for name in ("bloom", "falcon", "mpt"))
XT = "x_transformers.x_transformers:AlibiPositionalBias"
# Real code as its users declare it: (id, library module, declaration keys, the check its known
# deviation fails or None when it conforms).
REAL = [
    ("bloom-slopes", "transformers", {"target": f"{BLOOM}:_get_alibi_slopes", "api": "alibi-slopes",
                                      "kwargs": {"device": "cpu"}}, None),
    ("bloom", "transformers", {"target": f"{BLOOM}:build_alibi_tensor", "api": "alibi-bias",
                               "signature": "mask-heads-dtype", "alibi_convention": "bloom"}, None),
    ("falcon", "transformers", {"target": f"{FALCON}:build_alibi_tensor", "api": "alibi-bias",
                                "signature": "mask-heads-dtype", "alibi_convention": "falcon"}, None),
    ("falcon-as-bloom", "transformers", {"target": f"{FALCON}:build_alibi_tensor", "api": "alibi-bias",
                                         "signature": "mask-heads-dtype", "alibi_convention": "bloom"},
     "formula[L=258:float32]"),
    ("mpt", "transformers", {"target": f"{MPT}:build_mpt_alibi_tensor", "api": "alibi-bias",
                             "signature": "heads-length-max", "alibi_convention": "mpt"}, None),
    ("mpt-rows", "transformers", {"target": f"{MPT}:build_mpt_alibi_tensor", "api": "alibi-bias",
                                  "signature": "heads-length-max", "up_to_row_constant": True}, None),
    ("mpt-rows-16", "transformers", {"target": f"{MPT}:build_mpt_alibi_tensor", "api": "alibi-bias",
                                     "signature": "heads-length-max", "up_to_row_constant": True,
                                     "alibi_bias_max": 16}, None),
    ("x-transformers", "x_transformers", {"target": XT, "api": "alibi-bias", "signature": "module-ij",
                                          "init": {"heads": "{num_heads}"}, "alibi_convention": "bidirectional"},
     None),
    ("x-transformers-partial", "x_transformers", {"target": XT, "api": "alibi-bias", "signature": "module-ij",
                                                  "init": {"heads": 4, "total_heads": "{num_heads}"},
                                                  "alibi_convention": "bidirectional", "alibi_heads": 4}, None),
    ("x-transformers-slopes", "x_transformers", {"target": f"{XT}._get_slopes", "api": "alibi-slopes"}, None),
    ("labml-slopes", "labml_nn", {"target": "labml_nn.transformers.alibi:get_slopes", "api": "alibi-slopes"}, None),
    ("labml", "labml_nn", {"target": "labml_nn.transformers.alibi:get_alibi_biases", "api": "alibi-bias",
                           "signature": "heads-mask", "alibi_convention": "labml"}, None),
    ("labml-rows", "labml_nn", {"target": "labml_nn.transformers.alibi:get_alibi_biases", "api": "alibi-bias",
                                "signature": "heads-mask", "up_to_row_constant": True}, None),
    ("labml-as-fairseq", "labml_nn", {"target": "labml_nn.transformers.alibi:get_alibi_biases", "api": "alibi-bias",
                                      "signature": "heads-mask", "alibi_convention": "fairseq"}, "formula[8x8]"),
]
INSTALLED = [real for real in REAL if importlib.util.find_spec(real[1]) is not None]
# The real code's modules, imported once in the root template rather than in each target's child.
PRELOAD = tuple(dict.fromkeys(keys["target"].split(":")[0] for _, _, keys, _ in INSTALLED))


def _declarations(entries) -> dict:
    return {entry.id: entry.declaration() for entry in entries}


@pytest.fixture(scope="module")
def reports():
    """The corpus's and the installed real code's reports, from one fail-fast run in two lanes."""
    real = {real_id: declare(keys) for real_id, _, keys, _ in INSTALLED}
    return check_named({**_declarations(ALIBI_ENTRIES), **real}, jobs=2, preload=PRELOAD, fail_fast=True)


def test_the_corpus_is_listed_as_declarations():
    """The corpus holds at least 20 wrong and 8 correct entries, each declaring an ALiBi API, and
    every wrong entry has its expected check here."""
    kinds = [entry.kind for entry in ALIBI_ENTRIES]
    assert kinds.count("wrong") >= 20 and kinds.count("correct") >= 8, kinds
    assert {entry.id for entry in ALIBI_WRONG} == set(WRONG)
    assert all(entry.declaration().api in ("alibi-slopes", "alibi-bias") for entry in ALIBI_ENTRIES)
    described = {entry.id: entry.describe() for entry in ALIBI_ENTRIES}
    assert (described["geometric_for_every_head_count"], described["tensor_parallel_first_slice"]) == (
        "paper", "mpt (num_heads=112)")


def test_fail_fast_gives_the_full_runs_verdicts(reports):
    """A sample of wrong and correct entries, run in full: the same verdicts, and every check the
    fail-fast run failed fails in the full run too."""
    assert_fail_fast_agrees(reports, _declarations([*ALIBI_WRONG[::24], *ALIBI_CORRECT[::13]]))


def test_hints_are_those_of_a_full_run(reports):
    """Every wrong entry run in full names the slips this fail-fast run named, word for word: a
    hint does not depend on the run mode."""
    assert_same_hints({entry.id: reports[entry.id] for entry in ALIBI_WRONG}, _declarations(ALIBI_WRONG),
                      fail_fast=False)


@pytest.mark.parametrize("entry", ALIBI_WRONG, ids=[entry.id for entry in ALIBI_WRONG])
def test_wrong_alibi_is_rejected_by_the_check_of_its_slip(entry, reports):
    """The gate rejects a wrong entry through the failed check of the call its slip shows in,
    never because it could not import it."""
    report = reports[entry.id]
    failed = [check.name for check in report.failures()]
    assert failed and "import" not in failed, (
        f"survivor: {entry.target} passed the gate; its bug: {entry.description}")
    assert WRONG[entry.id][0] in failed, f"{entry.target}: {_summary(report)}"


@pytest.mark.parametrize("entry", ALIBI_WRONG, ids=[entry.id for entry in ALIBI_WRONG])
def test_hint_names_the_planted_slip(entry, reports):
    """The failure's hint names the slip planted in the entry, or stays silent where the calls
    cannot show it."""
    assert_hint(reports[entry.id], WRONG[entry.id][1], entry.description)


@pytest.mark.parametrize("entry", ALIBI_CORRECT, ids=[entry.id for entry in ALIBI_CORRECT])
def test_correct_alibi_conforms(entry, reports):
    """The gate accepts a correct entry written in another library's idiom, on every head count."""
    report = reports[entry.id]
    assert report.conforms, f"false alarm: {entry.target} ({entry.description}) was rejected: {_summary(report)}"


@pytest.mark.parametrize("real", REAL, ids=[real[0] for real in REAL])
def test_real_code_conforms_or_fails_with_its_known_deviation(real, reports):
    """Each real implementation, declared as its users would, conforms to its own convention;
    declared with the convention it departs from, it fails its known deviation (Falcon's
    bfloat16 product at key 257; labml's keys counted from 1)."""
    real_id, module, _keys, deviation = real
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    report = reports[real_id]
    if deviation is None:
        assert report.conforms, f"{real_id}: {_summary(report)}"
    else:
        assert deviation in [check.name for check in report.failures()], f"{real_id}: {_summary(report)}"


def test_each_hints_advice_applied_conforms(reports):
    """Every hint that names keys, pasted into its entry's declaration, makes every call the
    hint reads conform and fails nothing new: a hint is true or absent."""
    assert assert_advice_conforms(reports, ALIBI_WRONG) > 0, "no hint of the corpus names keys: nothing was replayed"
