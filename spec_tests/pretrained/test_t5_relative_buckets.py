"""Seed 000's claim "T5 uses sinusoidal positional encodings", against the facts the repository
holds (no network, no weights, no transformers): t5-small's packaged ``config.json`` and
transformers' T5 modeling code as recorded in ``spec_tests/data/t5buckets_real_code.json``
(its bias read back through an embedding whose row b holds b, with the version recorded).
What T5 uses instead is a learned scalar per head for each bucket of ``key - query``: 32
buckets, exact for small offsets, logarithmic up to distance 128, one bucket beyond.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from posenc_spec import pretrained
from posenc_spec.families.t5buckets import oracle
from posenc_spec.families.t5buckets.conventions import BucketConvention
from spec_tests.families.t5buckets.real_code import RECORD, expand_runs

FACTS = json.loads(RECORD.read_text(encoding="utf-8"))["entries"]
# T5Config's relative_attention_max_distance: not in t5-small's file, so T5Config's default.
MAX_DISTANCE = FACTS["transformers.T5Attention.compute_bias @ t5-encoder"]["convention"]["max_distance"]


def test_config_declares_relative_attention_buckets_and_no_absolute_table():
    """t5-small's config.json declares 32 relative-attention buckets and nothing of an absolute or
    sinusoidal position encoding: no position_embedding_type, no max_position_embeddings, no key
    naming a sinusoid (its n_positions is a legacy field nothing reads:
    ``test_pretrained_seed_claims.py``)."""
    config = pretrained.config_dict("t5-small")
    assert config["model_type"] == "t5" and config["relative_attention_num_buckets"] == 32
    position_keys = sorted(name for name in config if "position" in name or "sinus" in name or "rel" in name)
    assert position_keys == ["n_positions", "relative_attention_num_buckets"], position_keys
    assert MAX_DISTANCE == 128


@pytest.mark.parametrize("stack, bidirectional", [("encoder", True), ("decoder", False)])
def test_modeling_code_adds_a_bias_per_bucket_of_key_minus_query(stack, bidirectional):
    """The bias T5's attention adds (``T5Attention.compute_bias``, recorded) holds integer bucket
    indices below the config's 32 (the encoder every one but 16, the upper half's distance 0,
    which r = 0 takes in the lower half), and depends on ``key - query`` alone: it equals the exact
    buckets of the config's settings at every offset of its 130x130 table (encoder:
    bidirectional; decoder: causal). A sinusoidal encoding would hold values in [-1, 1], vary
    with the absolute position and repeat with each period; these are constant from distance 91
    (encoder) or 113 (decoder) on."""
    config = pretrained.config_dict("t5-small")
    facts = FACTS[f"transformers.T5Attention.compute_bias @ t5-{stack}"]
    convention = BucketConvention(bidirectional, config["relative_attention_num_buckets"], MAX_DISTANCE)
    relative = np.arange(-(facts["shape"][0] - 1), facts["shape"][1])
    recorded = expand_runs(facts["runs"], relative)
    assert np.array_equal(recorded, oracle.buckets(relative, convention)), f"T5's {stack} bias is not its buckets"
    assert sorted(set(recorded.tolist())) == [bucket for bucket in range(32) if not bidirectional or bucket != 16]
    last_start = oracle.bucket_starts(convention)[-1]
    assert last_start == (91 if bidirectional else 113)
    assert len(set(recorded[relative <= -last_start].tolist())) == 1, "the far past is not one bucket"
