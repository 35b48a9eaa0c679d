"""The measures the suite takes of a learned position table: row norms, cosine
similarities, ranks, and the best fit of a sinusoidal table under a scale, a rotation and
a shift.

Every function takes a (positions x width) array and returns float64 results; nothing
here loads a model (:mod:`posenc_spec.pretrained.hub` does). The thresholds the tests hold
a learned table to are named below, each with its reason; the tests state the values
measured beside each assertion.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention

# -- thresholds: what a table must show to count as learned, position-like and not sinusoidal

NEIGHBOUR_PERCENTILE = 95  # the median cosine of rows p, p + 1 must beat this percentile over all pairs of rows
MIN_NEIGHBOUR_GAP = 0.5  # mean neighbour cosine minus mean over all pairs: half the [0, 1] range of similar rows
ENERGY_FRACTION = 0.9  # the share of the squared norm whose count of singular values is the "energy rank"
MAX_ENERGY_RANK_SHARE = 1 / 10  # low rank: at most a tenth of a same-shaped Gaussian table's energy rank
MAX_EFFECTIVE_RANK_SHARE = 1 / 2  # and at most half its effective rank
MIN_SINUSOIDAL_RESIDUAL = 0.5  # not sinusoidal: the best fit leaves at least half of the centred table

# -- the base search of best_sinusoidal_fit

LOG10_BASE_RANGE = (0.5, 8.0)  # bases 10**0.5 .. 10**8: every base in use (10000 for most, 500000 for Llama 3)
LOG10_BASE_STEP = 0.5  # half decades: fine enough that the refinement starts beside the best base
LOG10_BASE_TOLERANCE = 1e-2  # the bounded refinement stops within 0.01 of log10(base), 2.3 % of the base


# The linear algebra runs in torch, on one thread. Once torch has run, NumPy's OpenBLAS
# threads compete with torch's OpenMP threads for the cores, and matrices of a few hundred
# rows gain nothing from threads anyway: on a busy 2-core machine a 384 x 384 SVD takes about
# 1 s through NumPy, 0.1 s in torch on 2 threads and 0.02 s on one.
def _one_thread(function):
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


def _svdvals(matrix):
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


@_one_thread
def singular_values(table) -> np.ndarray:
    """Singular values, largest first, float64."""
    return _svdvals(_as_tensor(table)).numpy()


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


# -- is it a sinusoidal table in disguise? ---------------------------------------------------

# The grid of bases the search tries first (10000 among them), each refined by a bounded search.
DEFAULT_BASES = tuple(10.0 ** np.arange(LOG10_BASE_RANGE[0], LOG10_BASE_RANGE[1] + LOG10_BASE_STEP / 2,
                                        LOG10_BASE_STEP))


@dataclass(frozen=True)
class SinusoidalFit:
    """The best fit ``scale * S R + c`` of a sinusoidal table ``S`` to a table ``T``:
    ``R`` orthogonal, ``c`` one row added to every row. ``residual`` is the remaining
    Frobenius norm; ``relative`` divides it by the norm of ``T`` with its column means removed."""

    convention: str
    base: float
    scale: float
    residual: float
    norm: float

    @property
    def relative(self) -> float:
        return self.residual / self.norm

    def describe(self) -> str:
        return (f"{self.convention} at base {self.base:.6g}, scale {self.scale:.4g}: residual {self.residual:.4g} "
                f"of {self.norm:.4g} ({self.relative:.4g} relative)")


def _centred(table):
    """The table as a float64 tensor with each column's mean removed."""
    tensor = _as_tensor(table)
    return tensor - tensor.mean(dim=0)


@_one_thread
def procrustes_fit(reference, table) -> tuple[float, float]:
    """``(scale, residual)`` of the best ``scale * reference R + c`` to ``table``, ``R``
    orthogonal (Schoenemann's orthogonal Procrustes with a scale; both centred, which
    fits ``c``). The residual is formed explicitly from the fitted map, so a table that
    is an exact rotation of the reference fits to its own rounding."""
    import torch

    a, b = _centred(reference), _centred(table)
    if a.shape != b.shape:
        raise ValueError(f"reference shape {tuple(a.shape)} differs from the table's {tuple(b.shape)}")
    u, sigma, vt = torch.linalg.svd(a.T @ b)
    scale = sigma.sum() / torch.sum(a * a)
    return float(scale), float(torch.linalg.norm(scale * a @ (u @ vt) - b))


def _fast_relative_residual(reference_centred, table_centred, table_norm2) -> float:
    """The same residual from the singular values alone, for the search: ``||T||^2 -
    (sum sigma)^2 / ||S||^2`` (it loses digits when the fit is near exact, hence
    :func:`procrustes_fit` for the final number)."""
    sigma = _svdvals(reference_centred.T @ table_centred)
    residual2 = table_norm2 - float(sigma.sum()) ** 2 / float((reference_centred**2).sum())
    return float(np.sqrt(max(residual2, 0.0) / table_norm2))


@_one_thread
def best_sinusoidal_fit(table, conventions=tuple(PRESETS), bases=DEFAULT_BASES) -> SinusoidalFit:
    """The sinusoidal table, among ``conventions`` and any base, that a scale, a rotation
    and a shift bring closest to ``table`` (positions 0 .. rows-1, the table's width).

    For each convention the bases in ``bases`` are tried, then the best is refined by a
    bounded search over ``log10(base)`` between its grid neighbours. The result names the
    first convention to reach the best fit.
    """
    from scipy.optimize import minimize_scalar

    target = _centred(table)
    target_norm2 = float((target**2).sum())
    if target_norm2 == 0:
        raise ValueError("table must not be constant: every row the same leaves nothing to fit")
    rows, width = target.shape
    log_bases = np.log10(np.asarray(bases, dtype=np.float64))

    # Layout and first function only reorder a table's columns, and a rotation absorbs any
    # reordering: conventions with the same frequencies, offset and scale fit alike, so
    # each such table is fitted once.
    fitted = {}

    def relative(name, log_base):
        convention = get_convention(name, base=float(10.0**log_base))
        key = (convention.frequencies(width).tobytes(), convention.offset, convention.scale)
        if key not in fitted:
            reference = oracle.table(rows, width, convention)
            fitted[key] = _fast_relative_residual(_centred(reference), target, target_norm2)
        return fitted[key]

    best = None
    for name in conventions:
        grid = [relative(name, log_base) for log_base in log_bases]
        i = int(np.argmin(grid))
        low = log_bases[max(i - 1, 0)]
        high = log_bases[min(i + 1, len(log_bases) - 1)]
        candidates = [(grid[i], log_bases[i])]
        if high > low:
            refined = minimize_scalar(lambda x, name=name: relative(name, x), bounds=(low, high), method="bounded",
                                      options={"xatol": LOG10_BASE_TOLERANCE})
            candidates.append((float(refined.fun), float(refined.x)))
        value, log_base = min(candidates)
        if best is None or value < best[0]:
            best = (value, name, float(10.0**log_base))
    _, name, base = best
    scale, residual = procrustes_fit(oracle.table(rows, width, get_convention(name, base=base)), table)
    return SinusoidalFit(convention=name, base=base, scale=scale, residual=residual, norm=float(np.sqrt(target_norm2)))
