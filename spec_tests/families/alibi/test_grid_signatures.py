"""ALiBi's grid, signatures and judge: the calls and check ids each signature gets, how a
returned array is read into the oracle's layout, and a target's own failure as a verdict."""

import numpy as np
import pytest
import torch

from posenc_spec.families.alibi import grid, oracle
from posenc_spec.families.alibi.conventions import PRESETS
from posenc_spec.families.alibi.grid import AlibiCall
from posenc_spec.families.alibi.judge import Unreadable, failures, judge, read


def test_head_counts_hold_every_kind_of_count_to_128():
    """Each power of two to 128, one and two heads past each, one below the next, and the models'
    12, 40, 71 and 112; a declared model count replaces them, a partial ALiBi starts at its heads
    and keeps one more."""
    counts = grid.head_counts()
    powers = [2**k for k in range(8)]
    assert set(powers) | {p + 1 for p in powers[1:7]} | {p + 2 for p in powers[2:7]} <= set(counts)
    assert {2 * p - 1 for p in powers[2:7]} | {12, 40, 71, 112} <= set(counts)
    assert counts == tuple(sorted(set(counts))) and counts[-1] == 128 and len(counts) < 32
    assert grid.head_counts(40) == (40,)
    assert grid.head_counts(least=4)[:3] == (4, 5, 6) and grid.head_counts(least=11)[:2] == (11, 12)


def test_every_head_count_gets_the_sweep_and_the_deep_ones_the_long_calls():
    """Each head count gets the 8x8 prefill and its decoding step; 1, 12 and 128 also the 64x64
    prefill, a step inside it and the steps past bfloat16's and float16's integers, on the same
    module, in that order."""
    probes = grid.probes("module-ij", PRESETS["bidirectional"])
    by_heads = {}
    for probe in probes:
        if probe.role == "table":
            by_heads.setdefault(probe.call.num_heads, []).append(probe.call.slot)
    assert set(by_heads) == set(grid.HEAD_COUNTS) and by_heads[5] == ["8x8", "p=7"]
    assert by_heads[12] == ["8x8", "p=7", "64x64", "p=31", "p=257", "p=2049"]
    assert [count for count, slots in by_heads.items() if len(slots) > 2] == [1, 12, 128]
    assert probes[-1].role == "repeat" and probes[-1].call.num_heads == 128


def test_dtype_signatures_make_each_narrow_dtype_where_it_shows():
    """A narrow dtype is asked for at 64 keys, whose positions it holds, and at the first length
    past its integers (258 keys for bfloat16, 2050 for float16); float32 at every length and mask."""
    slots = [call.slot for call in grid.calls("mask-heads-dtype", 12, PRESETS["bloom"])]
    assert slots == ["L=7:float32", "L=1:float32", "L=64:float32", "L=258:float32", "L=2050:float32",
                     "mask-left:float32", "mask-hole:float32", "L=64:float16", "L=2050:float16", "L=64:bfloat16",
                     "L=258:bfloat16"]
    for dtype, last in grid.EXACT_INTEGERS.items():
        lengths = [call.k_len for call in grid.calls("module-scores", 12, PRESETS["mpt"]) if call.dtype == dtype]
        assert max(lengths) - 1 == last + 1, (dtype, lengths)


def _counted_in_the_asked_dtype(attention_mask, num_heads, dtype):
    """BLOOM's bias with the mask cast to the asked dtype before its cumsum: the count stops at the
    dtype's last exact integer (2048 in float16, 256 in bfloat16)."""
    batch, length = attention_mask.shape
    slopes = torch.tensor(oracle.slopes(num_heads, "bloom"), dtype=torch.float32)
    mask = attention_mask.to(dtype)
    positions = ((mask.cumsum(dim=-1) - 1) * mask)[:, None, :]
    return (slopes[..., None] * positions).reshape(batch * num_heads, 1, length).to(dtype)


def test_positions_counted_in_a_narrow_dtype_fail_only_past_its_integers():
    """Positions summed in float16 or bfloat16 fail at the first length past that dtype's integers,
    the calls kept for it, and at no other call."""
    failed = {result.name for result in failures(judge(_counted_in_the_asked_dtype, "mask-heads-dtype", "bloom", 12))}
    assert {name.split("[")[1] for name in failed} == {"L=2050:float16]", "L=258:bfloat16]"}, failed
    assert "formula[L=2050:float16]" in failed and "formula[L=258:bfloat16]" in failed


def test_large_tables_stay_within_the_budget_and_max_positions():
    """A (128, 258, 258) bias is not asked for; (31, 258, 258) is, and any key form's row is;
    no call reaches past a declared max_positions."""
    paper = PRESETS["paper"]
    assert "L=258" not in [call.slot for call in grid.calls("heads-length", 128, paper)]
    assert "L=258" in [call.slot for call in grid.calls("heads-length", 31, paper)]
    assert "L=2050" in [call.slot for call in grid.calls("heads-length", 128, PRESETS["mpt"])]
    assert max(call.k_len for call in grid.calls("module-ij", 12, paper, max_positions=64)) == 64


def test_check_ids_name_the_slot_and_decoding_steps_add_decode():
    """Check ids read check[S] for every head count's call of slot S; a step within its prefill adds
    decode[S]; slopes share one id per check over the head counts, h=1-128."""
    ids = grid.plan_ids(grid.probes("module-ij", PRESETS["bidirectional"]))
    assert ids[0] == "import" and ids[-2:] == ["aliasing", "global-state"]
    assert {"formula[64x64]", "decode[p=31]", "toeplitz[64x64]", "formula[p=2049]"} <= set(ids)
    assert "decode[p=257]" not in ids and "toeplitz[p=31]" not in ids  # past the prefill; one row
    assert grid.plan_ids(grid.probes("heads", PRESETS["paper"])) == [
        "import", "call[h=1-128]", "finite[h=1-128]", "formula[h=1-128]", "head-ratio[h=1-128]", "determinism",
        "aliasing", "global-state"]
    assert len(ids) == len(set(ids))


def call(q_len, k_len, heads=3, **fields):
    return AlibiCall("s", heads, q_len, k_len, **fields)


def test_read_broadcasts_a_single_row_and_keeps_a_key_forms_last_row():
    """(heads, 1, keys) is broadcast over a causal call's queries; a key form keeps the last of its rows."""
    row = np.arange(12.0).reshape(3, 1, 4)
    assert read(row, "heads-length", call(4, 4), PRESETS["paper"]).shape == (3, 4, 4)
    full = np.arange(48.0).reshape(1, 3, 4, 4)
    assert read(full, "heads-length", call(4, 4), PRESETS["mpt"]).tolist() == full[0, :, -1:, :].tolist()
    with pytest.raises(Unreadable, match=r"expected \(3, 4, 4\) or \(3, 1, 4\)"):
        read(np.zeros((3, 5)), "heads-length", call(4, 4), PRESETS["paper"])


def test_read_transposes_labml():
    """heads-mask's (q, k, heads) becomes (heads, q, k)."""
    qkh = np.arange(12.0).reshape(2, 2, 3)
    assert read(qkh, "heads-mask", call(2, 2), PRESETS["paper"]).tolist() == qkh.transpose(2, 0, 1).tolist()


def test_a_target_that_raises_or_returns_integers_fails_its_call():
    """An exception, or an integer table, is a failed call naming it, never a crash of the judge."""
    def raises(num_heads, length):
        raise RuntimeError("boom")

    def integers(num_heads, length):
        return torch.zeros(num_heads, 1, length, dtype=torch.int64)

    for target, text in ((raises, "RuntimeError: boom"), (integers, "int64")):
        failed = failures(judge(target, "heads-length", "mpt", 2, fail_fast=True))
        assert failed[0].name == "call[L=7]" and text in failed[0].message, failed[0].message


def test_module_scores_are_read_as_the_bias_added_to_zero_scores():
    """A module-scores target gets zero scores in the call's dtype; what it returns is judged as the bias."""
    class AddsMpt(torch.nn.Module):
        def forward(self, scores):
            heads, keys = scores.shape[1], scores.shape[-1]
            positions = oracle.call_positions(keys, keys, "mpt")
            return scores + torch.from_numpy(oracle.bias(heads, positions, "mpt")).to(scores.dtype)[None]

    assert not failures(judge(AddsMpt, "module-scores", "mpt", 12))


def test_the_oracle_itself_conforms_on_every_signature_shape():
    """The oracle's own bias, returned as a function of (num_heads, length), passes every check."""
    def oracle_mpt(num_heads, length):
        return oracle.bias(num_heads, oracle.call_positions(length, length, "mpt"), "mpt")

    assert not failures(judge(oracle_mpt, "heads-length", "mpt", 71))


def _out_of_memory_verdict(slot, heads, max_positions=None):
    """call[...]'s verdict when the call for ``slot`` at ``heads`` heads raised the allocator's error."""
    from posenc_spec.families.alibi.judge import AlibiJudge
    from posenc_spec.gate.calls import Outcome
    from posenc_spec.gate.judge import Results

    probe = next(probe for probe in grid.probes("module-ij", PRESETS["paper"], heads, max_positions)
                 if probe.slot == f"h={heads}:{slot}")
    results = Results()
    message = "raised RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes"
    AlibiJudge(PRESETS["paper"], results, max_positions).judge(probe, Outcome("raised", message,
                                                                              exception="RuntimeError"))
    return results.by_id[f"call[{slot}]"].status


def test_running_out_of_memory_is_a_note_only_at_a_long_length_the_gate_chose():
    """Out of memory at the step the gate chose at 2050 keys (a 200 MB square at 12 heads) is noted;
    at the 64x64 prefill, at one head's step at 257 (a 266 KB square) or under a declared
    max_positions it fails."""
    assert _out_of_memory_verdict("p=2049", 12) == "noted"
    assert _out_of_memory_verdict("64x64", 12) == "failed"
    assert _out_of_memory_verdict("p=257", 1) == "failed"
    assert _out_of_memory_verdict("p=2049", 12, max_positions=2050) == "failed"
