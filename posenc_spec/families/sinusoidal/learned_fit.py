"""Is a learned position table a sinusoidal table in disguise? The member of the family, at
any base, that a scale, a rotation and a shift bring closest to it (the pretrained facts
hold GPT-2's and MiniLM's tables to :data:`posenc_spec.pretrained.learned.MIN_SINUSOIDAL_RESIDUAL`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.pretrained.learned import centred, one_thread, procrustes_fit, svdvals

from . import oracle
from .conventions import PRESETS, get_convention

# -- the base search of best_sinusoidal_fit --------------------------------------------------

LOG10_BASE_RANGE = (0.5, 8.0)  # bases 10**0.5 .. 10**8: every base in use (10000 for most, 500000 for Llama 3)
LOG10_BASE_STEP = 0.5  # half decades: fine enough that the refinement starts beside the best base
LOG10_BASE_TOLERANCE = 1e-2  # the bounded refinement stops within 0.01 of log10(base), 2.3 % of the base


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


def _fast_relative_residual(reference_centred, table_centred, table_norm2) -> float:
    """The same residual from the singular values alone, for the search: ``||T||^2 -
    (sum sigma)^2 / ||S||^2`` (it loses digits when the fit is near exact, hence
    :func:`procrustes_fit` for the final number)."""
    sigma = svdvals(reference_centred.T @ table_centred)
    residual2 = table_norm2 - float(sigma.sum()) ** 2 / float((reference_centred**2).sum())
    return float(np.sqrt(max(residual2, 0.0) / table_norm2))


@one_thread
def best_sinusoidal_fit(table, conventions=tuple(PRESETS), bases=DEFAULT_BASES) -> SinusoidalFit:
    """The sinusoidal table, among ``conventions`` and any base, that a scale, a rotation
    and a shift bring closest to ``table`` (positions 0 .. rows-1, the table's width).

    For each convention the bases in ``bases`` are tried, then the best is refined by a
    bounded search over ``log10(base)`` between its grid neighbours. The result names the
    first convention to reach the best fit.
    """
    from scipy.optimize import minimize_scalar

    target = centred(table)
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
            fitted[key] = _fast_relative_residual(centred(reference), target, target_norm2)
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
