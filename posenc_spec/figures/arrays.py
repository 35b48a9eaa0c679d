"""Array preparation shared by the plotting functions."""

from __future__ import annotations

import numpy as np


def as_table(table, name: str = "table") -> np.ndarray:
    """A non-empty 2-D float64 array from a NumPy array, a torch tensor (any device, with
    grad or not) or anything NumPy converts; ValueError/TypeError naming ``name`` otherwise."""
    if hasattr(table, "detach"):  # a torch tensor: leave the graph and the device
        table = table.detach().cpu().numpy()
    try:
        array = np.asarray(table, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a 2-D array of numbers, got {type(table).__name__}: {error}") from None
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (positions x dimensions), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    return array


def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows, as scikit-learn's ``cosine_similarity``:
    a zero row has similarity 0 with everything (its normalised form is the zero vector).
    Each row is first divided by its largest magnitude, which changes no cosine, so that
    rows of values near the largest float do not overflow their norm."""
    peaks = np.max(np.abs(vectors), axis=1, keepdims=True, initial=0.0)
    vectors = np.divide(vectors, peaks, out=np.zeros_like(vectors, dtype=np.float64), where=peaks > 0)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit @ unit.T


def check_rows(rows, num_rows: int, name: str = "rows") -> list[int]:
    """Row indices as ints, each in ``0 .. num_rows - 1``."""
    array = np.atleast_1d(np.asarray(rows))
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must be a 1-D sequence of ints, got {rows!r}")
    indices = [int(row) for row in array]
    bad = [row for row in indices if not 0 <= row < num_rows]
    if not indices or bad:
        raise ValueError(f"{name} must be non-empty indices in 0..{num_rows - 1}, got {indices}")
    return indices
