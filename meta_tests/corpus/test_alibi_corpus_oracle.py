"""The ALiBi corpus against the family's oracle and bounds, in this process: every wrong entry
fails under its own declaration, and the test names the smallest input that shows it (the
first failing call of the smallest head count, in the grid's order); every correct entry
conforms on a sample of head counts (one head; 12 and BLOOM-176B's 112, not powers of two).

The gate's run of the same corpus (sealed children, hints) is
``meta_tests/corpus/test_alibi_corpus_gate.py``; this is the oracle's side of it, made in this process.
"""

import pytest

from meta_tests.corpus.alibi_registry import ALIBI_BUG_CLASSES, ALIBI_CORRECT, ALIBI_ENTRIES, ALIBI_WRONG
from posenc_spec.families.alibi.judge import failures, judge

# The head count and the first failed check of each wrong entry (the check id names the call).
SMALLEST = {
    "geometric_for_every_head_count": (3, "formula[h=3]"),  # 3 heads: the first count that is not a power of two
    "slopes_from_head_zero": (1, "formula[h=1]"),  # slope 1 where 2**-8 belongs
    "interleave_even_members": (3, "formula[h=3]"),
    "extra_slopes_without_stride": (6, "formula[h=6]"),  # at 3 and 5 the first of 2P's slopes is the odd one
    "closest_power_rounded_up": (3, "formula[h=3]"),
    "mpt_base_over_num_heads": (3, "call[L=7]"),  # RuntimeError: shape '[1, 4, 1, 1]' for 3 slopes
    "undefined_name_for_other_head_counts": (3, "call[h=3]"),  # NameError
    "slopes_reversed": (2, "formula[L=7]"),
    "tensor_parallel_first_slice": (2, "formula[L=7]"),
    "tensor_parallel_local_head_count": (2, "formula[L=7]"),
    "bias_in_bfloat16_whatever_dtype": (1, "formula[L=258:float32]"),  # key 257 rounds to 256 in bfloat16
    "PositionsInComputeDtype": (9, "formula[64x64:float16]"),  # 2**-0.5 rounded to float16, then the product
    "NoBiasWhenDecoding": (1, "formula[p=7]"),
    "BiasFromQueryWindow": (1, "formula[p=7:float32]"),
    "CacheSlicedFromTopLeft": (1, "formula[p=7]"),
    "QueriesAtTheStart": (1, "formula[p=7]"),
    "CacheKeptWhenTooShort": (1, "call[64x64]"),  # the cached 8 keys returned for 64
    "OffsetPastTheContext": (1, "formula[8x8:float32]"),  # the last key at -m, not 0
    "sign_flipped": (1, "formula[L=7]"),
    "NonsymmetricBidirectional": (1, "formula[8x8]"),
    "causal_row_for_bidirectional": (1, "formula[L=7]"),
    "padding_ignored": (1, "formula[mask-left:float32]"),
    "bias_max_hard_coded": (1, "formula[L=7]"),
    "PartialSlopesOfAllHeads": (8, "formula[8x8]"),  # below 8 heads the first 4 slopes agree
    "PartialUnbiasedHeadsFirst": (5, "formula[8x8]"),  # at 4 heads every head is an ALiBi head
    "slopes_from_float16_buffer": (9, "formula[h=9]"),  # up to 8 heads every slope is a power of two float16 holds
    "BiasFromFloat16Slopes": (9, "formula[8x8]"),  # 2**-0.5 in float16
}
CORRECT_HEADS = (1, 12, 112)


def smallest_failure(entry):
    """``(head count, first failed check)`` at the smallest head count of the entry's grid, or None."""
    for heads in entry.heads:
        failed = failures(judge(entry.function(), entry.signature, entry.convention(), heads, entry.init_kwargs(),
                                fail_fast=True))
        if failed:
            return heads, failed[0]
    return None


def test_corpus_counts_and_classes():
    """The corpus holds at least 20 wrong entries and 8 correct ones, every bug class is
    shown by some wrong entry, and every wrong entry has its smallest input listed."""
    assert len(ALIBI_WRONG) >= 20 and len(ALIBI_CORRECT) >= 8, (len(ALIBI_WRONG), len(ALIBI_CORRECT))
    shown = {name for entry in ALIBI_WRONG for name in entry.bug_classes}
    assert shown == set(ALIBI_BUG_CLASSES), set(ALIBI_BUG_CLASSES) - shown
    assert {entry.id for entry in ALIBI_WRONG} == set(SMALLEST)
    assert len({entry.id for entry in ALIBI_ENTRIES}) == len(ALIBI_ENTRIES)


@pytest.mark.parametrize("entry", ALIBI_WRONG, ids=[entry.id for entry in ALIBI_WRONG])
def test_wrong_entry_fails_at_its_smallest_input(entry):
    """A wrong entry fails under its own declaration, first at the input listed for it."""
    found = smallest_failure(entry)
    assert found is not None, (f"survivor: {entry.target} under {entry.convention().name()}; "
                               f"its bug: {entry.description}")
    heads, failed = found
    assert (heads, failed.name) == SMALLEST[entry.id], f"{entry.target}: first failure {failed.name}: {failed.message}"


@pytest.mark.parametrize("entry", ALIBI_CORRECT, ids=[entry.id for entry in ALIBI_CORRECT])
def test_correct_entry_conforms(entry):
    """A correct entry in another idiom passes every check on the sampled head counts."""
    for heads in (count for count in CORRECT_HEADS if count in entry.heads):
        failed = failures(judge(entry.function(), entry.signature, entry.convention(), heads, entry.init_kwargs()))
        assert not failed, (f"false alarm: {entry.target} ({entry.description}) at {heads} heads: "
                            f"{failed[0].name}: {failed[0].message}")
