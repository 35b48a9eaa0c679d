"""The reference implementations agree with each other, not only with the oracle."""

import itertools

import numpy as np
import pytest

from posenc_spec import checks
from posenc_spec.conventions import get_convention
from spec_tests.assertions import assert_within
from spec_tests.implementations import SEED_REFERENCES

SIZES = [(50, 512), (300, 512), (1024, 768)]


def as_interleaved(table, convention, width):
    """Reorder a table's columns into the interleaved layout: sin_0, cos_0, sin_1, cos_1, ..."""
    columns = get_convention(convention).columns(width)
    return np.asarray(table)[:, np.lexsort((~columns.is_first, columns.pair))]


@pytest.mark.parametrize("num_positions, width", SIZES, ids=[f"{n}x{d}" for n, d in SIZES])
@pytest.mark.parametrize("a, b", list(itertools.combinations(SEED_REFERENCES, 2)), ids=str)
def test_seed_references_agree(a, b, num_positions, width):
    """Two references differ by at most the sum of their bounds (the concat one after its
    known column permutation)."""
    dtype_a, dtype_b = a.dtypes[-1], b.dtypes[-1]  # each one's narrowest float dtype
    tables, bounds = [], []
    for impl, dtype in ((a, dtype_a), (b, dtype_b)):
        exp = checks.expectation(num_positions, width, impl.convention, dtype)
        tables.append(as_interleaved(impl.make(num_positions, width, dtype), impl.convention, width))
        bounds.append(as_interleaved(exp.tolerance, impl.convention, width))
    assert_within(tables[0], tables[1], bounds[0] + bounds[1],
                  f"{a}[{dtype_a}] vs {b}[{dtype_b}] at {num_positions}x{width}")


def test_concat_permutation_is_the_identity_on_interleaved():
    """The permutation helper leaves an interleaved table as it is and moves concat columns."""
    table = np.arange(6)[None, :]
    assert as_interleaved(table, "vaswani", 6).tolist() == [[0, 1, 2, 3, 4, 5]]
    assert as_interleaved(table, "concat", 6).tolist() == [[0, 3, 1, 4, 2, 5]]
