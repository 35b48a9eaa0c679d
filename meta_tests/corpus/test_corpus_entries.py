"""The corpus registry itself: big enough, every bug class of issue 6 present, every entry
declared completely, and the correct entries really correct at a small size."""

import re

import numpy as np
import pytest
import torch

from meta_tests.corpus import BUG_CLASSES, CORRECT, ENTRIES, WRONG
from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention
from posenc_spec.tolerance import dtype_name

MIN_WRONG, MIN_CORRECT = 40, 12
REPOSITORY = re.compile(r"[\w.-]+/[\w.-]+")


def _small_table(entry, length=50, width=8):
    """The entry's output at a small even size, as (float64 values, dtype name, positions)."""
    if entry.api == "table":
        result, positions = entry.function()(length, width), length
    else:
        steps = torch.arange(length, dtype=torch.int64)
        if entry.t_max < length:
            steps = torch.linspace(0, entry.t_max, length, dtype=torch.float32)
        result, positions = entry.function()(steps, width), steps.double().numpy()
    if isinstance(result, torch.Tensor):
        name = dtype_name(result.dtype)
        return result.detach().to(torch.float64).numpy(), name, positions
    array = np.asarray(result)
    return array.astype(np.float64), dtype_name(array.dtype), positions


def test_corpus_is_big_enough():
    """The corpus holds at least 40 wrong and 12 correct implementations."""
    assert len(WRONG) >= MIN_WRONG, f"{len(WRONG)} wrong implementations, need {MIN_WRONG}"
    assert len(CORRECT) >= MIN_CORRECT, f"{len(CORRECT)} correct implementations, need {MIN_CORRECT}"


def test_ids_are_unique_and_name_callables():
    """Every entry id is unique and names a callable in its module."""
    ids = [entry.id for entry in ENTRIES]
    duplicates = sorted({entry_id for entry_id in ids if ids.count(entry_id) > 1})
    assert not duplicates, f"duplicate corpus ids: {duplicates}"
    not_callable = [entry.target for entry in ENTRIES if not callable(entry.function())]
    assert not not_callable, f"targets that are not callable: {not_callable}"


def test_every_bug_class_is_covered():
    """Each bug class of issue 6 has at least one wrong implementation, and no entry names an unknown class."""
    covered = {name for entry in WRONG for name in entry.bug_classes}
    missing = sorted(set(BUG_CLASSES) - covered)
    assert not missing, f"bug classes without a wrong implementation: {missing}"
    unclassified = [entry.id for entry in WRONG if not entry.bug_classes]
    assert not unclassified, f"wrong entries with no bug class: {unclassified}"
    classified_correct = [entry.id for entry in CORRECT if entry.bug_classes]
    assert not classified_correct, f"correct entries with bug classes: {classified_correct}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.id for entry in ENTRIES])
def test_entry_is_described(entry):
    """Every entry has a one-line description; a sighting, when given, names a repository."""
    assert entry.description.strip(), f"{entry.id} has no description"
    assert "\n" not in entry.description and len(entry.description) <= 300, (
        f"{entry.id}: the description should be one line of at most 300 characters, got {len(entry.description)}")
    assert not entry.seen_in or REPOSITORY.search(entry.seen_in), (
        f"{entry.id}: seen_in {entry.seen_in!r} names no owner/repository")


def test_correct_entries_cover_every_preset_and_both_apis():
    """The correct implementations include every preset, the cos-first shift-1 member and both calling shapes."""
    declared = {entry.convention.replace(odd="error", offset=PRESETS["fairseq"].offset)
                if entry.preset == "fairseq" else entry.convention.replace(odd="error") for entry in CORRECT}
    wanted = dict(PRESETS, **{"cos-first shift 1": get_convention("tensor2tensor", first="cos")})
    missing = [name for name, convention in wanted.items() if convention not in declared]
    assert not missing, f"no correct implementation declares {missing}"
    apis = {entry.api for entry in CORRECT}
    assert apis == {"table", "timesteps"}, f"correct implementations cover only the APIs {sorted(apis)}"
    odd = {entry.odd for entry in CORRECT}
    assert {"error", "zero-pad", "ceil", "skip"} <= odd, f"correct implementations cover only odd handling {odd}"


def test_correct_entries_include_low_precision_outputs():
    """Some correct implementations return float16 and bfloat16 tables."""
    dtypes = {_small_table(entry)[1] for entry in CORRECT}
    assert {"float16", "bfloat16"} <= dtypes, f"correct implementations return only {sorted(dtypes)}"


@pytest.mark.parametrize("entry", CORRECT, ids=[entry.id for entry in CORRECT])
def test_correct_entry_matches_the_formula_at_a_small_size(entry):
    """A correct implementation's 50 x 8 table is within the tolerance of its declared convention."""
    table, dtype, positions = _small_table(entry)
    expected = checks.expectation(positions, 8, entry.convention, dtype)
    result = checks.check_formula(table, expected)
    assert result.passed, f"{entry.target}(50, 8) under {entry.describe()}: {result.message}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.id for entry in ENTRIES])
def test_config_table_declares_the_registered_convention(entry):
    """The entry's ``[[targets]]`` table reads back as the convention, API and odd behaviour it registered."""
    declaration = entry.declaration()
    assert (declaration.spec.convention, declaration.api, declaration.spec.skip_odd) == (entry.convention, entry.api,
                                                                               entry.skip_odd), entry.config_table()
