"""The measures the suite takes of a learned position table: row norms, cosine
similarities, ranks, and the fit of another table to it under a scale, a rotation and a
shift (:func:`procrustes_fit`; the sinusoidal family's best fit to a learned table is
:func:`posenc_spec.families.sinusoidal.learned_fit.best_sinusoidal_fit`).

Every function takes a (positions x width) array and returns float64 results; nothing
here loads a model (:mod:`posenc_spec.pretrained.hub` does). The thresholds the tests hold
a learned table to are named below, each with its reason; the tests state the values
measured beside each assertion.
"""

from __future__ import annotations

import functools

import numpy as np

# -- thresholds: what a table must show to count as learned, position-like and not sinusoidal

NEIGHBOUR_PERCENTILE = 95  # the median cosine of rows p, p + 1 must beat this percentile over all pairs of rows
MIN_NEIGHBOUR_GAP = 0.5  # mean neighbour cosine minus mean over all pairs: half the [0, 1] range of similar rows
ENERGY_FRACTION = 0.9  # the share of the squared norm whose count of singular values is the "energy rank"
MAX_ENERGY_RANK_SHARE = 1 / 10  # low rank: at most a tenth of a same-shaped Gaussian table's energy rank
MAX_EFFECTIVE_RANK_SHARE = 1 / 2  # and at most half its effective rank
MIN_SINUSOIDAL_RESIDUAL = 0.5  # not sinusoidal: the best fit leaves at least half of the centred table

# The linear algebra runs in torch, on one thread. Once torch has run, NumPy's OpenBLAS
# threads compete with torch's OpenMP threads for the cores, and matrices of a few hundred
# rows gain nothing from threads anyway: on a busy 2-core machine a 384 x 384 SVD takes about
# 1 s through NumPy, 0.1 s in torch on 2 threads and 0.02 s on one.
def one_thread(function):
    """Run ``function`` with torch on one thread, restoring the caller's setting after."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        import torch

        previous = torch.get_num_threads()
        if previous == 1:
            return function(*args, **kwargs)
        torch.set_num_threads(1)
        try:
            return function(*args, **kwargs)
        finally:
            torch.set_num_threads(previous)

    return wrapper


def _as_tensor(array):
    import torch

    return torch.as_tensor(np.asarray(array, dtype=np.float64))


def svdvals(matrix):
    import torch

    return torch.linalg.svdvals(matrix)


def row_norms(table) -> np.ndarray:
    """The Euclidean norm of every row (position), float64."""
    return np.linalg.norm(np.asarray(table, dtype=np.float64), axis=1)


def cosine_matrix(table) -> np.ndarray:
    """Cosine similarity of every pair of rows, float64."""
    rows = np.asarray(table, dtype=np.float64)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit @ unit.T


def neighbour_similarities(table) -> np.ndarray:
    """Cosine similarity of each row with the next: positions p and p + 1."""
    return np.diagonal(cosine_matrix(table), offset=1).copy()


def pair_similarities(table) -> np.ndarray:
    """Cosine similarity of every pair of distinct rows (each pair once): the population
    a uniformly drawn pair of positions comes from."""
    similarity = cosine_matrix(table)
    return similarity[np.triu_indices_from(similarity, k=1)]


@one_thread
def singular_values(table) -> np.ndarray:
    """Singular values, largest first, float64."""
    return svdvals(_as_tensor(table)).numpy()


def effective_rank(table) -> float:
    """Roy and Vetterli's effective rank: ``exp`` of the entropy of the singular values
    normalised to sum to 1. Equals the rank for a flat spectrum, less for a decaying one."""
    values = singular_values(table)
    p = values[values > 0] / values.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def energy_rank(table, fraction: float = ENERGY_FRACTION) -> int:
    """How many singular values hold ``fraction`` of the squared Frobenius norm."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    energy = np.cumsum(singular_values(table) ** 2)
    return int(np.searchsorted(energy, fraction * energy[-1]) + 1)


def random_table_like(table, seed: int) -> np.ndarray:
    """A Gaussian table with ``table``'s shape, mean and standard deviation, from a seeded generator."""
    table = np.asarray(table, dtype=np.float64)
    return np.random.default_rng(seed).normal(table.mean(), table.std(), table.shape)


# -- a fit of one table to another under a scale, a rotation and a shift -------------------


def centred(table):
    """The table as a float64 tensor with each column's mean removed."""
    tensor = _as_tensor(table)
    return tensor - tensor.mean(dim=0)


@one_thread
def procrustes_fit(reference, table) -> tuple[float, float]:
    """``(scale, residual)`` of the best ``scale * reference R + c`` to ``table``, ``R``
    orthogonal (Schoenemann's orthogonal Procrustes with a scale; both centred, which
    fits ``c``). The residual is formed explicitly from the fitted map, so a table that
    is an exact rotation of the reference fits to its own rounding."""
    import torch

    a, b = centred(reference), centred(table)
    if a.shape != b.shape:
        raise ValueError(f"reference shape {tuple(a.shape)} differs from the table's {tuple(b.shape)}")
    u, sigma, vt = torch.linalg.svd(a.T @ b)
    scale = sigma.sum() / torch.sum(a * a)
    return float(scale), float(torch.linalg.norm(scale * a @ (u @ vt) - b))
