"""The reference implementations agree with each other, not only with the oracle.

``reference_impls.family`` is the float64 oracle rounded, so its agreement is with code
that shares nothing with it: the seed references (rearranged by hand into each preset by
:func:`spec_tests.implementations.seed_table`) and column permutations written out here.
"""

import itertools

import numpy as np
import pytest
import torch

from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention
from reference_impls import family, timestep
from spec_tests.assertions import assert_within, float64_rounded_tolerance
from spec_tests.implementations import FAMILY_DTYPES, FAMILY_SIZE, SEED_REFERENCES, seed_table

SIZES = [(50, 512), (300, 512), (1024, 768)]
SEED = 20261122


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


@pytest.mark.parametrize("dtype", FAMILY_DTYPES)
@pytest.mark.parametrize("preset", PRESETS)
def test_family_agrees_with_the_seed_reference_rearranged_by_hand(preset, dtype):
    """family's table of every preset is the seed torch reference in float64, rearranged into
    the preset (shift as a changed base, offset as skipped rows, layout and first function
    as a column order), to within the sum of both bounds."""
    num_positions, width = FAMILY_SIZE
    table = family.sinusoidal_encoding(num_positions, width, preset, np.dtype(dtype))
    seed = seed_table(num_positions, width, preset, "float64")
    bound = (float64_rounded_tolerance(num_positions, width, preset, dtype)
             + float64_rounded_tolerance(num_positions, width, preset, "float64"))
    assert_within(table, seed, bound, f"family {preset} [{dtype}] vs the seed reference")


def test_family_agrees_with_the_timestep_reference_at_fractional_steps():
    """At seeded fractional timesteps, family's concat table equals seed 003's embedding."""
    steps = np.random.default_rng(SEED).uniform(0, 1000, 64).astype(np.float32)
    width = 32
    table = family.sinusoidal_encoding(steps, width, "concat", np.float32)
    embedding = timestep.timestep_embedding(torch.from_numpy(steps), width).numpy()
    bound = (float64_rounded_tolerance(steps, width, "concat", "float32")
             + checks.expectation(steps, width, "concat", "float32").tolerance)
    assert_within(table, embedding, bound, "family concat vs timestep_embedding at fractional steps")


# Columns of a width-8 table, written out: the interleaved order is sin0 cos0 sin1 cos1 ...
CONCAT_TO_INTERLEAVED = [0, 4, 1, 5, 2, 6, 3, 7]  # concat is sin0 sin1 sin2 sin3 cos0 cos1 cos2 cos3
COS_FIRST_TO_INTERLEAVED = [4, 0, 5, 1, 6, 2, 7, 3]  # guided-diffusion is cos0 .. cos3 sin0 .. sin3


def test_family_layouts_are_column_permutations_written_by_hand():
    """The same angles land in the same values whatever the layout: concat and cos-first
    tables are, bit for bit, the interleaved table with columns moved as written above, and
    fairseq's rows are tensor2tensor's two positions later."""
    positions = np.arange(200)
    vaswani = family.sinusoidal_encoding(positions, 8, "vaswani")
    concat = family.sinusoidal_encoding(positions, 8, "concat")
    cos_first = family.sinusoidal_encoding(positions, 8, "guided-diffusion")
    assert np.array_equal(concat[:, CONCAT_TO_INTERLEAVED], vaswani), "concat is not a column permutation"
    assert np.array_equal(cos_first[:, COS_FIRST_TO_INTERLEAVED], vaswani), "guided-diffusion is not a permutation"
    fairseq = family.sinusoidal_encoding(positions, 8, "fairseq")
    tensor2tensor = family.sinusoidal_encoding(positions + 2, 8, "tensor2tensor")
    assert np.array_equal(fairseq, tensor2tensor), "fairseq's row p is not tensor2tensor's row p + 2"
