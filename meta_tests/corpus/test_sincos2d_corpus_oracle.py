"""The 2-D sincos corpus against the family's oracle and tolerance, without the gate.

Every correct entry is within bound on every call of a small copy of the gate's grid
(sides 1, 2, 3, 7, 11, 16, 13x32; widths 4 where defined, 8, 12 and 64) and refuses the
widths 6 and 10; every wrong entry misses somewhere by at least MISS_MARGIN times its bound
(or returns another shape, or accepts a width it must refuse), and the first call that
shows it, in order of ``H*W*D``, is the one its registration names (``smallest``).
"""

import re

import numpy as np
import pytest
import torch

from meta_tests.corpus import sincos2d_registry
from meta_tests.corpus.sincos2d_registry import BUG_CLASSES, sincos2d_wrong
from posenc_spec.families.sincos2d.tolerance import table_tolerance
from posenc_spec.families.sinusoidal.conventions import UndefinedWidthError
from posenc_spec.tolerance import compare, dtype_name

WRONG, CORRECT = sincos2d_registry.WRONG, sincos2d_registry.CORRECT
MIN_WRONG, MIN_CORRECT = 25, 10
MISS_MARGIN = 4.0  # a bug that only just crosses its bound would be a statement about the bound
GRIDS = ((1, 1), (1, 7), (7, 1), (2, 2), (2, 3), (3, 2), (7, 11), (11, 7), (16, 16), (13, 32))
WIDTHS = (4, 8, 12, 64)
REFUSED = (6, 10)
REPOSITORY = re.compile(r"[\w.-]+/[\w.-]+")


def inputs(entry) -> list[tuple[int, int, int]]:
    """The calls of the entry's grid, smallest ``H*W*D`` first (square grids only for ``dim-size``)."""
    conv = entry.convention
    found = []
    for height, width in GRIDS:
        if entry.signature == "dim-size" and height != width:
            continue
        for dim in WIDTHS:
            try:
                conv.check_width(dim)
            except UndefinedWidthError:
                continue
            found.append((height, width, dim))
    refused_grid = (2, 2) if entry.signature == "dim-size" else (2, 3)
    found += [(*refused_grid, dim) for dim in REFUSED]
    return sorted(found, key=lambda size: (size[0] * size[1] * size[2], size))


def as_array(result) -> tuple[np.ndarray, str]:
    if isinstance(result, torch.Tensor):
        return result.detach().to(torch.float64).numpy(), dtype_name(result.dtype)
    array = np.asarray(result)
    return array.astype(np.float64), dtype_name(array.dtype)


def judge(entry, height: int, width: int, dim: int) -> tuple[float, str]:
    """The worst error/bound ratio of one call and what it was (inf: wrong shape, a width not refused)."""
    conv = entry.convention
    if dim % 4:
        try:
            entry.call(height, width, dim)
        except Exception:  # noqa: BLE001 -- any exception refuses the width, as the gate counts it
            return 0.0, f"refused width {dim}"
        return np.inf, f"accepted width {dim}, which has no value"
    actual, out_dtype = as_array(entry.call(height, width, dim))
    expected_shape = conv.shape(height, width, dim)
    while actual.ndim > len(expected_shape) and actual.shape[0] == 1:
        actual = actual[0]
    if actual.shape != expected_shape:
        return np.inf, f"shape {actual.shape} where {expected_shape} was declared"
    from posenc_spec.families.sincos2d import oracle

    result = compare(actual, oracle.table(height, width, dim, conv), table_tolerance(height, width, dim, conv,
                                                                                    out_dtype))
    return result.max_ratio, result.describe()


def first_miss(entry) -> tuple[str, float, str]:
    """The first call (in ``H*W*D`` order) missing by MISS_MARGIN, as ``HxW:d=D``, its ratio and why."""
    for height, width, dim in inputs(entry):
        ratio, why = judge(entry, height, width, dim)
        if ratio >= MISS_MARGIN:
            return f"{height}x{width}:d={dim}", ratio, why
    return "", 0.0, "no call misses"


def test_corpus_is_big_enough_and_described():
    """At least 25 wrong and 10 correct entries; every bug class has a wrong entry; two thirds
    of the wrong entries name the public code or thread they are modelled on."""
    assert len(WRONG) >= MIN_WRONG and len(CORRECT) >= MIN_CORRECT, (len(WRONG), len(CORRECT))
    covered = {name for entry in WRONG for name in entry.bug_classes}
    assert covered == set(BUG_CLASSES), f"classes without a wrong entry: {sorted(set(BUG_CLASSES) - covered)}"
    cited = [entry for entry in WRONG if REPOSITORY.search(entry.seen_in)]
    assert 3 * len(cited) >= 2 * len(WRONG), f"{len(cited)} of {len(WRONG)} cite a repository"
    ids = [entry.id for entry in sincos2d_registry.ENTRIES]
    assert len(ids) == len(set(ids))


def test_the_correct_entries_cover_the_keys():
    """Correct entries exercise every preset family member that real code has: both axis
    orders, both groupings and pairings, both shifts, every position transform, both token
    orders, every output layout, extra tokens and per-axis bases."""
    conventions = [entry.convention for entry in CORRECT]
    for key, values in {"first_axis": {"row", "col"}, "grouping": {"by-axis", "by-function"},
                        "pairing": {"concat", "interleaved"}, "freq_shift": {0, 1},
                        "position": {"index", "relative", "crop", "normalized"},
                        "token_order": {"row-major", "column-major"},
                        "output_layout": {"tokens", "channels-first", "grid"}}.items():
        assert {getattr(conv, key) for conv in conventions} == values, key
    assert any(conv.extra_tokens for conv in conventions)
    assert any(conv.row_base != conv.col_base for conv in conventions)


@pytest.mark.parametrize("entry", CORRECT, ids=[entry.id for entry in CORRECT])
def test_correct_entry_is_within_bound_everywhere(entry):
    """Every call of the grid within the bound of the dtype it returns; widths 6 and 10 refused."""
    for height, width, dim in inputs(entry):
        ratio, why = judge(entry, height, width, dim)
        assert ratio <= 1, f"{entry.target} ({entry.describe()}) at {height}x{width}:d={dim}: {why}"


@pytest.mark.parametrize("entry", WRONG, ids=[entry.id for entry in WRONG])
def test_wrong_entry_misses_first_at_its_smallest_call(entry):
    """The entry misses by at least MISS_MARGIN times its bound, and first at the call its
    registration names: the smallest input that shows the bug."""
    where, ratio, why = first_miss(entry)
    assert where, f"survivor: {entry.target} ({entry.describe()}) passes every call; its bug: {entry.description}"
    assert where == entry.smallest, (f"{entry.target}: first miss at {where} (ratio {ratio:.3g}: {why}), "
                                     f"registered as {entry.smallest}")


def _probe(*args):
    return args


@pytest.mark.parametrize("keys, message", [
    ({"bug": "b", "classes": ("axis-order",), "smallest": "1x2:d=8", "signature": "fn(d)"}, "signature must be"),
    ({"bug": "b", "classes": ("rounding",), "smallest": "1x2:d=8"}, "unknown bug classes"),
    ({"bug": "b", "classes": "axis-order", "smallest": "1x2:d=8"}, "must be a tuple"),
    ({"bug": "b", "classes": ("axis-order",), "smallest": ""}, "needs its bug classes and its smallest"),
    ({"bug": "b", "classes": ("axis-order",), "smallest": "1x2:d=8", "position": "crop"}, "_probe: position 'crop' "
                                                                                         "needs max_size"),
])
def test_registration_rejects_bad_declarations(keys, message):
    """A bad registration fails at import, naming the function."""
    before = len(sincos2d_registry.ENTRIES)
    with pytest.raises(ValueError, match=message):
        sincos2d_wrong(**keys)(_probe)
    assert len(sincos2d_registry.ENTRIES) == before
