"""An output compared a block of elements at a time (``posenc_spec/regression/compare.py``,
``CHUNK_ELEMENTS``) gets the verdict of the whole: the histogram summed over the blocks and
the first of the largest distances, wherever the blocks split the output."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_spec.regression import compare
from posenc_spec.regression.compare import compare_call
from posenc_spec.regression.records import RecordedArray, RecordedCall

# Steps above +0.0 of a float32 (the k-th subnormal has the bits k), at flat index -> steps:
# the largest, 5 steps, first at index 7 and again at 8; one step at 2.
STEPS = {2: 1, 7: 5, 8: 5}
SHAPE = (2, 5)


def _call(bits: np.ndarray) -> RecordedCall:
    values = bits.view(np.float32).reshape(SHAPE)
    return RecordedCall(label="blocks", args=(), outputs=(RecordedArray(values, "float32"),))


@pytest.mark.parametrize("block", [1, 3, 4, 10, 1 << 20])
def test_blocks_of_any_size_give_the_whole_outputs_verdict(monkeypatch, block):
    """At every block size: 3 of 10 elements changed, histogram 7 at 0, 1 at 1, 2 in 5-16, and
    the worst at [1, 2] (flat 7, the first of the two 5-step distances) with both values."""
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", block)
    old = np.zeros(10, dtype=np.uint32)
    new = old.copy()
    for index, steps in STEPS.items():
        new[index] = steps
    [output] = compare_call(_call(old), _call(new), max_ulp=4).outputs
    assert (output.passed, output.max_ulp, output.worst_index, output.num_changed) == (False, 5, (1, 2), 3)
    assert output.histogram == {"0": 7, "1": 1, "2-4": 0, "5-16": 2, "17-256": 0, ">256": 0}
    assert (output.old_value, output.new_value) == (0.0, float(np.uint32(5).view(np.float32)))
