"""ALiBi's grid, signatures and judge: the calls and check ids each signature gets, how a
returned array is read into the oracle's layout, and a target's own failure as a verdict."""

import numpy as np
import pytest
import torch

from posenc_spec.families.alibi import grid, judge, oracle
from posenc_spec.families.alibi.conventions import PRESETS
from posenc_spec.families.alibi.judge import failures
from posenc_spec.families.alibi.signatures import AlibiCall, build_module, invoke, read


def test_head_counts_cover_every_count_to_128():
    """Every count from 1 to 128, BLOOM-176B's 112 and Falcon-7B's 71 among the 121 that are not
    powers of two; a declared model count replaces them."""
    counts = grid.head_counts()
    assert counts == tuple(range(1, 129))
    assert sum(1 for n in counts if n & (n - 1)) == 120 and {71, 112} <= set(counts)
    assert grid.head_counts(40) == (40,)


def test_module_calls_are_a_prefill_then_decoding_steps():
    """A module gets the 64x64 prefill, then steps at 1, 31, 63, 256, 2048, 8192, in that order."""
    calls = grid.calls("module-ij", 12, PRESETS["bidirectional"])
    assert [call.slot for call in calls] == ["64x64", "p=1", "p=31", "p=63", "p=256", "p=2048", "p=8192"]
    assert [call.role for call in calls][:2] == ["prefill", "decode"]
    assert (calls[-1].q_len, calls[-1].k_len) == (1, 8193)


def test_dtype_signatures_repeat_every_call_per_dtype():
    """The mask signature's calls come in float32, float16 and bfloat16, each slot named with its dtype."""
    calls = grid.calls("mask-heads-dtype", 3, PRESETS["bloom"])
    assert len(calls) == 3 * (len(grid.LENGTHS) + 2)
    assert calls[0].slot == "L=1:float32" and calls[-1].slot == "mask-hole:bfloat16"


def test_large_tables_stay_within_the_budget():
    """A (128, 257, 257) bias is not asked for; (31, 257, 257) is, and any key form's row is."""
    paper = PRESETS["paper"]
    assert "L=257" not in [call.slot for call in grid.calls("heads-length", 128, paper)]
    assert "L=257" in [call.slot for call in grid.calls("heads-length", 31, paper)]
    assert "L=8193" in [call.slot for call in grid.calls("heads-length", 128, PRESETS["mpt"])]


def test_check_ids_name_the_head_count_and_slot():
    """Check ids read check[h=H:S]; decoding steps add decode[h=H:p=P]."""
    ids = grid.check_ids("module-ij", 5, PRESETS["bidirectional"])
    assert "formula[h=5:64x64]" in ids and "decode[h=5:p=31]" in ids and "toeplitz[h=5:p=8192]" in ids
    assert grid.check_ids("slopes", 7, PRESETS["paper"]) == ["call[h=7]", "finite[h=7]", "slopes[h=7]",
                                                             "head-ratio[h=7]"]
    assert len(ids) == len(set(ids))


def call(q_len, k_len, heads=3, **fields):
    return AlibiCall("s", heads, q_len, k_len, **fields)


def test_read_broadcasts_a_single_row_and_keeps_a_key_forms_last_row():
    """(heads, 1, keys) is broadcast over a causal call's queries; a key form keeps the last of its rows."""
    row = np.arange(12.0).reshape(3, 1, 4)
    assert read(row, "heads-length", call(4, 4), PRESETS["paper"]).shape == (3, 4, 4)
    full = np.arange(48.0).reshape(1, 3, 4, 4)
    assert read(full, "heads-length", call(4, 4), PRESETS["mpt"]).tolist() == full[0, :, -1:, :].tolist()
    with pytest.raises(ValueError, match=r"expected \(3, 4, 4\) or \(3, 1, 4\)"):
        read(np.zeros((3, 5)), "heads-length", call(4, 4), PRESETS["paper"])


def test_read_takes_the_scores_out_and_transposes_labml():
    """module-scores is read as out - scores; heads-mask's (q, k, heads) becomes (heads, q, k)."""
    scores = torch.ones(1, 3, 2, 2)
    out = scores + torch.tensor([1.0, 2.0, 3.0])[None, :, None, None]
    assert read(out, "module-scores", call(2, 2), PRESETS["paper"], scores)[:, 0, 0].tolist() == [1.0, 2.0, 3.0]
    qkh = np.arange(12.0).reshape(2, 2, 3)
    assert read(qkh, "heads-mask", call(2, 2), PRESETS["paper"]).tolist() == qkh.transpose(2, 0, 1).tolist()


def test_bfloat16_results_are_read_exactly():
    """A bfloat16 tensor is read through float32, exactly: 1 + 2**-7 stays itself."""
    value = torch.tensor([[[1 + 2**-7]]], dtype=torch.bfloat16)
    assert read(value, "heads-length", call(1, 1, heads=1), PRESETS["paper"]).item() == 1 + 2**-7


def test_module_placeholders_are_filled_or_refused():
    """{num_heads} and {alibi_bias_max} are the call's; another placeholder is a one-line error."""
    built = build_module(dict, {"heads": "{num_heads}", "b": "{alibi_bias_max}", "x": 2}, call(1, 1, heads=6),
                         PRESETS["mpt"])
    assert built == {"heads": 6, "b": 8.0, "x": 2}
    with pytest.raises(ValueError, match=r"init.heads: '\{dim\}' is none of \{num_heads\}, \{alibi_bias_max\}"):
        build_module(dict, {"heads": "{dim}"}, call(1, 1), PRESETS["mpt"])
    with pytest.raises(ValueError, match="signature must be one of slopes"):
        invoke(dict, "slope", call(1, 1), PRESETS["paper"])


def test_a_target_that_raises_or_returns_integers_fails_its_call():
    """An exception, or an integer table, is a failed call naming it, never a crash of the judge."""
    def raises(num_heads, length):
        raise RuntimeError("boom")

    def integers(num_heads, length):
        return torch.zeros(num_heads, 1, length, dtype=torch.int64)

    for target, text in ((raises, "RuntimeError: boom"), (integers, "no tolerance is defined for dtype 'int64'")):
        failed = failures(judge(target, "heads-length", "mpt", 2, fail_fast=True))
        assert failed[0].name == "call[h=2:L=1]" and text in failed[0].message, failed[0].message


def test_the_oracle_itself_conforms_on_every_signature_shape():
    """The oracle's own bias, returned as a function of (num_heads, length), passes every check."""
    def oracle_mpt(num_heads, length):
        return oracle.bias(num_heads, oracle.call_positions(length, length, "mpt"), "mpt")

    assert not failures(judge(oracle_mpt, "heads-length", "mpt", 71))
