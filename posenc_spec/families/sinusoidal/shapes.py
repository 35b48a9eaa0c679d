"""Which slip makes a sinusoidal table API target return tables of another size: read from the
grid's table calls when every one of them returned one array and none the size asked.

Each slip is a definite table that every call's array must match within the declared bound
(a false hint is a false alarm):

- ``arguments-swapped``: ``fn(dim, num_positions)`` called as ``fn(num_positions, dim)``:
  the call for ``L x D`` returns the declared table of ``D`` positions at width ``L`` (a
  square call, where ``max_positions`` caps a length to the width, the declared table). Its
  advice is the declaration's call with the two roles swapped (:func:`posenc_spec.gate.advice.swapped_call`);
- ``table-transposed``: the declared table with rows and columns exchanged (no key declares it);
- ``rows-extra``: ``k`` more rows than positions asked, the same ``k`` on every call, before
  position 0 (a cls or padding row) or after the last, the others the declared table;
- ``rows-missing``: ``k`` fewer rows, the first or the last ``k`` positions' rows left out;
- ``rows-truncated``: tables cut at one buffer's length ``N``: a call of at most ``N``
  positions is whole, a longer one returns the declared table's first ``N`` rows.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.families.sinusoidal.conventions import Convention
from posenc_spec.gate.identify.hint import Hint

MAX_ROWS_OFF = 8  # extra or missing rows a hint reads (a cls row, fairseq's padding rows)


def _within(values: np.ndarray, positions, width: int, declared: Convention, dtype: str) -> bool:
    """Whether ``values`` are the declared table of ``positions`` at ``width``, within its bound."""
    try:
        expected = checks.expectation(positions, width, declared, dtype, cached=False)
    except ValueError:  # a width the convention does not define (an odd one under odd='error')
        return False
    return values.shape == expected.table.shape and bool(np.all(np.abs(values - expected.table)
                                                              <= expected.tolerance))


def _rows(declared: Convention, probe, rows: slice) -> np.ndarray:
    return declared.positions(probe.positions)[rows]


# A square call (L = D, where max_positions caps a length) is its own swap and transpose: it
# returns the size asked, and must be the declared table, as the swapped or transposed read makes it.
def _swapped(declared, calls) -> bool:
    return all(array.shape == (probe.width, probe.length)
               and _within(array, probe.width, probe.length, declared, dtype) for probe, array, dtype in calls)


def _transposed(declared, calls) -> bool:
    return all(array.shape == (probe.width, probe.length)
               and _within(array.T, probe.positions, probe.width, declared, dtype) for probe, array, dtype in calls)


def _rows_off(declared, calls) -> tuple[int, str] | None:
    """``(k, where)``: every array has ``k`` rows more (or fewer) than asked, at ``where``."""
    offs = {array.shape[0] - probe.length for probe, array, _ in calls}
    if len(offs) != 1 or any(array.shape[1] != probe.width for probe, array, _ in calls):
        return None
    k = offs.pop()
    if k == 0 or abs(k) > MAX_ROWS_OFF:
        return None
    if k > 0:
        kept = {"before position 0": slice(k, None), "after the last position": slice(None, -k)}
        for where, rows in kept.items():
            if all(_within(array[rows], probe.positions, probe.width, declared, dtype)
                   for probe, array, dtype in calls):
                return k, where
        return None
    kept = {"the first": slice(-k, None), "the last": slice(None, k)}
    for where, rows in kept.items():
        if all(probe.length > -k and _within(array, _rows(declared, probe, rows), probe.width, declared, dtype)
               for probe, array, dtype in calls):
            return k, where
    return None


def _truncated(declared, calls) -> int | None:
    """The buffer length ``N`` when every call returns the declared table's first
    ``min(L, N)`` rows and one is cut."""
    cut = {array.shape[0] for probe, array, _ in calls if array.shape[0] < probe.length}
    if len(cut) != 1 or any(array.shape[1] != probe.width or array.shape[0] > probe.length
                            for probe, array, _ in calls):
        return None
    buffer = cut.pop()
    if any(probe.length <= buffer and array.shape[0] != probe.length for probe, array, _ in calls):
        return None
    if all(_within(array, _rows(declared, probe, slice(0, array.shape[0])), probe.width, declared, dtype)
           for probe, array, dtype in calls):
        return buffer
    return None


def shape_hints(declaration, probes, outcomes, swapped_call) -> list[Hint]:
    """The hint for tables of another size (the module docstring), or none. ``swapped_call``:
    ``(first, second) -> call text or None``, the declaration's call with two roles swapped."""
    if declaration.api != "table":
        return []
    calls, asked = [], 0
    for probe, outcome in zip(probes, outcomes, strict=True):
        if probe.role != "table":
            continue
        asked += 1
        if not outcome.ok or outcome.is_tuple or len(outcome.arrays) != 1 or np.ndim(outcome.table) != 2:
            return []
        calls.append((probe, np.asarray(outcome.table, np.float64), outcome.dtype))
    if not calls or asked != len(calls) or all(array.shape == (probe.length, probe.width)
                                               for probe, array, _ in calls):
        return []
    return _named(declaration.spec.convention, calls, swapped_call)


def _named(declared: Convention, calls, swapped_call) -> list[Hint]:
    probe, array, _ = calls[0]
    asked = f"the call for {probe.length}x{probe.width} returned {array.shape[0]}x{array.shape[1]}"
    if _swapped(declared, calls):
        advice = swapped_call("num_positions", "dim")
        return [Hint(("arguments-swapped",), f"the target reads its arguments as (dim, num_positions): {asked}, the "
                                             f"declared table of {probe.width} positions at width {probe.length}, "
                                             "and so does every call", (("call", advice),) if advice else ())]
    if _transposed(declared, calls):
        return [Hint(("table-transposed",), f"every table is the declared one transposed ({asked}): rows must be "
                                            "positions, columns features (return table.T)")]
    off = _rows_off(declared, calls)
    if off is not None:
        k, where = off
        rows = f"{abs(k)} row{'s' if abs(k) > 1 else ''}"
        if k > 0:
            return [Hint(("rows-extra",), f"every table has {rows} more than the positions asked, {where} ({asked}); "
                                          "the other rows are the declared table: a cls or padding row returned with "
                                          "the positions' rows")]
        return [Hint(("rows-missing",), f"every table lacks {where} {rows} of the positions asked ({asked}); the "
                                        "rows it has are those positions' rows of the declared table")]
    buffer = _truncated(declared, calls)
    if buffer is not None:
        return [Hint(("rows-truncated",), f"every table stops at row {buffer}: a call of more positions returns the "
                                          f"first {buffer} rows of the declared table (a buffer of {buffer} rows "
                                          "sliced without a check that it is long enough)")]
    return []
