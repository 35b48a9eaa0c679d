"""The family's declared keys: validated once, each bad value one line naming its key."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_spec.families.t5buckets import conventions
from posenc_spec.families.t5buckets.conventions import PRESETS, BucketConvention, from_keys, get_convention
from posenc_spec.gate.errors import UsageError


def test_t5_sizes():
    """T5's encoder: 16 buckets a direction, 8 exact, 8 logarithmic; its decoder: 32, 16, 16."""
    encoder, decoder = PRESETS["t5-encoder"], PRESETS["t5-decoder"]
    assert (encoder.half, encoder.max_exact, encoder.log_buckets, encoder.upper_offset) == (16, 8, 8, 16)
    assert (decoder.half, decoder.max_exact, decoder.log_buckets, decoder.upper_offset) == (32, 16, 16, 0)


@pytest.mark.parametrize("relative, expected", [(-5, (5, 0)), (5, (5, 16)), (0, (0, 0)), (-2**70, (2**70, 0))])
def test_distance_and_offset_bidirectional(relative, expected):
    """Bidirectional: the distance is |r|, and keys after the query (r > 0) start at bucket 16."""
    assert PRESETS["t5-encoder"].distance_and_offset(relative) == expected


@pytest.mark.parametrize("relative, expected", [(-5, (5, 0)), (5, (0, 0)), (0, (0, 0))])
def test_distance_and_offset_causal(relative, expected):
    """Causal: keys after the query count as distance 0."""
    assert PRESETS["t5-decoder"].distance_and_offset(relative) == expected


def test_query_minus_memory_mirrors_the_sign():
    """GluonNLP's sign: its ``q - m = -5`` is T5's ``m - q = 5``, a key after the query."""
    assert PRESETS["gluonnlp-encoder"].distance_and_offset(-5) == PRESETS["t5-encoder"].distance_and_offset(5)


def test_numpy_integers_are_plain_ints():
    """A NumPy integer setting is stored as the int it holds (hashable, JSON-ready)."""
    convention = BucketConvention(True, np.int64(32), np.int32(128))
    assert type(convention.num_buckets) is int and type(convention.max_distance) is int
    assert convention == PRESETS["t5-encoder"] and convention.name() == "t5-encoder"


@pytest.mark.parametrize("fields, message", [
    ({"bidirectional": 1}, "bidirectional must be true or false, got 1"),
    ({"num_buckets": 3}, "num_buckets must be an integer from 4 to 4096, got 3"),
    ({"num_buckets": 32.0}, "num_buckets must be an integer, got 32.0"),
    ({"num_buckets": True}, "num_buckets must be an integer, got True"),
    ({"num_buckets": 8192}, "num_buckets must be an integer from 4 to 4096, got 8192"),
    ({"max_distance": 0}, "max_distance must be an integer from 1 to"),
    ({"max_distance": 8}, "max_distance must exceed max_exact = 8"),
    ({"relative_position": "query_minus_memory"}, "did you mean 'query-minus-memory'?"),
    ({"bidirectional": False, "num_buckets": 1}, "num_buckets must be an integer from 2 to 4096, got 1"),
])
def test_bad_fields_are_one_line_errors(fields, message):
    """Each bad field raises a one-line UsageError (a ValueError) naming the field and value."""
    with pytest.raises(UsageError) as raised:
        BucketConvention(**fields)
    assert message in str(raised.value) and "\n" not in str(raised.value), str(raised.value)


def test_from_keys_names_the_key_as_the_caller_spells_it():
    """A declaration's bad key is named as its flag: ``--max-distance must exceed ...``."""
    def flag(key):
        return "--" + key.replace("_", "-")

    with pytest.raises(UsageError, match=r"^--max-distance must exceed max_exact = 16 \(.*causal"):
        from_keys({"convention": "t5-decoder", "max_distance": 16}, flag)
    with pytest.raises(UsageError, match=r"^--convention must be one of t5-encoder, .*did you mean 't5-decoder'"):
        from_keys({"convention": "t5_decoder"}, flag)
    with pytest.raises(UsageError, match=r"^--bidirectional must be true or false, got 'yes'$"):
        from_keys({"bidirectional": "yes"}, flag)


def test_from_keys_overrides_a_preset():
    """Keys override the preset they name; text integers are read as integers (as from the command
    line); the preset's former key name reads as it."""
    convention = from_keys({"convention": "wavlm", "max_distance": "1000"})
    assert convention == BucketConvention(True, 320, 1000)
    assert from_keys({"bucket_preset": "wavlm", "max_distance": "1000"}) == convention
    assert from_keys({}) == PRESETS["t5-encoder"]


def test_get_convention_refuses_unknown_fields():
    """An unknown field is named with the known ones; None overrides are ignored."""
    assert get_convention("t5-decoder", num_buckets=None) == PRESETS["t5-decoder"]
    with pytest.raises(UsageError, match="unknown T5-bucket key.*max_exact; known: bidirectional"):
        get_convention("t5-encoder", max_exact=4)


def test_every_preset_is_valid_and_named():
    """Every preset validates and names itself; a convention that is none names its fields."""
    for name, preset in PRESETS.items():
        assert preset.name() == name
    assert BucketConvention(False, 48, 200).name() == "causal, 48 buckets, max_distance 200"
    assert set(conventions.KEYS) == set(BucketConvention().as_dict())
