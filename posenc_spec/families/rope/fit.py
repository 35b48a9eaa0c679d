"""Candidate RoPE conventions from the frequencies a target's calls show (:mod:`.rope_readings`).

With ``e_i = 2i/r`` (``2i/d`` under proportional) every type writes ``f_i = theta ** -e_i *
g_i``, so ``ln f_i`` is a line of slope ``-ln theta`` in ``e_i`` wherever the divisor profile
``g`` is flat. ``theta`` is read from the first step (the highest frequencies, which yarn and
llama3 leave unscaled) and from the median step (flat on both plateaus); then ``g`` names the
type, each read from the call whose length it concerns:

- ``g = 1``: default; ``g = 1/s`` everywhere: linear; trailing zero frequencies: proportional.
- ``yarn``: 1 up to ``low``, ``1/s`` from ``high``, linear in ``i`` between. ``s`` from the last
  pair and the range; ``L0`` from round candidates and from the range (betas 32 and 1, truncated
  or not); ``A`` as measured, named only when it is not ``0.1 ln s + 1``.
- ``llama3``: 1, ``1/s`` and a band between whose weight is linear in ``1/lambda_i``: the band
  edges ``L0/low_freq_factor`` and ``L0/high_freq_factor`` follow from two pairs in the band;
  ``L0`` itself does not (Llama 3.1's ``8/1/4/8192`` first, then ``L0 = 8192`` and
  ``low_freq_factor = 1`` readings of the edges).
- ``dynamic``: at lengths up to ``L0`` the default; beyond, a geometric series with base
  ``theta' = theta q ** (r/(r-2))``, ``q = s L/L0 - (s - 1)``: the ladder of lengths gives ``q``
  at several ``L`` (``s`` and ``L0`` from its line) and where it starts to move.
- ``longrope``: per-pair factors ``ext_i = theta ** -e_i / f_i``, one set at the short
  lengths and another beyond ``L0`` (where the switch lies on the ladder). Only the products
  ``theta ** e_i * ext_i`` are determined: ``theta`` is the rounded one. ``A`` gives ``s``
  given ``L0`` (``sqrt(1 + ln s / ln L0)``), or ``max_positions / L0`` does.

Every value is offered rounded (1 to 3 significant digits) before raw; :func:`candidates`
returns them in that order of preference, the caller judges each with the gate's bounds.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from posenc_spec.families.rope.conventions import RopeConvention, yarn_range
from posenc_spec.families.rope.readings import agrees, reference
from posenc_spec.families.sinusoidal.fit import round_significant

LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
FLAT = 1e-4  # relative: a profile within this of 1 (or of another value) is flat there
ROUND_L0 = tuple(2**k for k in range(8, 21))  # original lengths tried where the data bound but do not fix L0
UNSEEN_L0 = 4096  # rope-freqs shows no length: any L0 describes what it shows


@dataclass(frozen=True)
class Candidate:
    """A convention to judge: ``layout`` the pairing it goes with, ``raw`` how many of its
    values are unrounded (fewer is preferred), ``nearest_only`` when the data cannot make it
    the answer (``why``)."""

    convention: RopeConvention
    layout: str | None
    raw: int = 0
    family: int = 0
    nearest_only: bool = False
    why: str = ""


@dataclass
class Structure:
    """What every candidate shares: the sizes, the rotated block, the pairing."""

    sizes: dict = field(default_factory=dict)  # partial_rotary_factor / rotary_dim keys
    proportional: bool = False
    rotary_features: str = "first"
    layout: str | None = None
    pairs: int = 0  # rotated pairs at the reference head size
    exponents: np.ndarray | None = None


def rounded(value: float, digits=(1, 2, 3)) -> list[tuple[float, int]]:
    """``[(value, raw)]``: ``value`` at 1, 2, 3 significant digits (raw 0), then as is (raw 1)."""
    if not math.isfinite(value) or value <= 0:
        return []
    found = []
    for digit in digits:
        option = float(round_significant(value, digit))
        if option > 0 and all(option != seen for seen, _ in found):
            found.append((option, 0))
    if all(value != seen for seen, _ in found):
        found.append((float(value), 1))
    return found


def _rotated(reading) -> int:
    nonzero = np.flatnonzero(reading.frequencies != 0)
    return int(nonzero[-1]) + 1 if nonzero.size else 0


def structure(base: dict) -> Structure | None:
    """The shared structure of the reference reading per head size (None: the sizes disagree)."""
    found = Structure()
    heads = sorted(base)
    first = base[heads[0]]
    found.layout = first.layout
    found.proportional = first.layout == "proportional" or any(_rotated(r) < r.frequencies.size for r in base.values())
    counts = {d: (_rotated(base[d]) if found.proportional else base[d].frequencies.size) for d in heads}
    if any(count < 1 for count in counts.values()):
        return None
    size = {d: 2 * counts[d] for d in heads}
    factor = size[heads[0]] / heads[0]
    if round(factor, 4) != factor:  # 64 of 192 reads better as rotary_dim 64 than as 0.333...
        factor = math.nan
    if found.proportional:
        if math.isfinite(factor) and all(int(factor * d // 2) == counts[d] for d in heads):
            found.sizes = {} if factor == 1 else {"partial_rotary_factor": factor}
        elif len(set(size.values())) == 1:
            found.sizes = {"rotary_dim": size[heads[0]]}
        else:
            return None
    elif math.isfinite(factor) and all(int(d * factor) == size[d] for d in heads):
        found.sizes = {} if factor == 1 else {"partial_rotary_factor": factor}
    elif len(set(size.values())) == 1:
        found.sizes = {"rotary_dim": size[heads[0]]}
    else:
        return None
    if first.start:
        found.rotary_features = "last" if first.start + size[heads[0]] == heads[0] else "first"
    found.pairs = counts[heads[-1]]
    divisor = heads[-1] if found.proportional else size[heads[-1]]
    found.exponents = 2 * np.arange(found.pairs) / divisor
    return found


def _log_slopes(f: np.ndarray, e: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return -np.diff(np.log(f)) / np.diff(e)


def thetas(f: np.ndarray, e: np.ndarray) -> list[tuple[float, int]]:
    """``theta`` from the first and the median step of ``ln f``, rounded first."""
    if f.size < 2 or not np.all(f > 0):
        return [(10000.0, 0)]
    slopes = _log_slopes(f, e)
    found = []
    for estimate in (slopes[0], float(np.median(slopes))):
        if math.isfinite(estimate) and 0 < estimate < 700:
            for value, raw in rounded(math.exp(estimate)):
                if value != 1 and all(value != seen for seen, _ in found):
                    found.append((value, raw))
    return sorted(found, key=lambda item: item[1]) or [(10000.0, 0)]


class Builder:
    """Collects candidates; ``add`` drops the ones RopeConvention refuses."""

    def __init__(self, shape: Structure, max_positions):
        self.shape, self.max_positions, self.found = shape, max_positions, []

    def add(self, family, rope_type, theta, params, raw, nearest_only=False, why=""):
        try:
            conv = RopeConvention(rope_type=rope_type, theta=theta, params=params,
                                  max_position_embeddings=self.max_positions,
                                  rotary_features=self.shape.rotary_features, **self.shape.sizes)
        except ValueError:
            return
        layout = "half" if self.shape.layout == "proportional" else self.shape.layout
        self.found.append(Candidate(conv, layout, raw, family, nearest_only, why))


def candidates(readings, max_positions=None) -> tuple[list[Candidate], Structure | None]:
    """Every candidate the readings suggest, best first (see the module docstring)."""
    base = reference(readings)
    shape = structure(base) if base else None
    if shape is None:
        return [], None
    widest = base[max(base)]
    f, e = widest.frequencies[: shape.pairs], shape.exponents
    build = Builder(shape, max_positions)
    ladder = sorted((r for r in readings if r.head_dim == min(base)), key=lambda r: r.length or 0)
    factor = widest.factor
    for theta, theta_raw in thetas(f, e):
        g = f * theta**e
        if shape.proportional:
            for s, raw in [(1.0, 0)] + rounded(1 / float(np.median(g))):
                build.add(1, "proportional", theta, {} if s == 1 else {"factor": s}, theta_raw + raw)
            continue
        build.add(0, "default", theta, {}, theta_raw)
        for s, raw in rounded(1 / float(np.median(g))):
            if s != 1:
                build.add(1, "linear", theta, {"factor": s}, theta_raw + raw)
        _dynamic(build, theta, theta_raw, ladder, shape)
        if g[-1] < 1 - FLAT:
            _llama3(build, theta, theta_raw, f, e, g)
            _yarn(build, theta, theta_raw, g, 2 * shape.pairs, factor)
        _longrope(build, theta, theta_raw, ladder, shape, factor, max_positions)
    return sorted(build.found, key=lambda c: (c.nearest_only, c.raw, c.family)), shape


def _dynamic(build, theta, theta_raw, ladder, shape):
    r = 2 * ladder[0].frequencies.size
    if r <= 2 or len(ladder) < 2 or shape.proportional:
        return
    e = 2 * np.arange(ladder[0].frequencies.size) / r
    points = []
    for reading in ladder:
        if reading.length is None or not np.all(reading.frequencies > 0):
            return
        slope = float(np.median(_log_slopes(reading.frequencies, e)))
        points.append((reading.length, (math.exp(slope) / theta) ** ((r - 2) / r)))
    moved = [(length, q) for length, q in points if q > 1 + FLAT]
    still = [length for length, q in points if q <= 1 + FLAT]
    if not moved or not still:
        return
    l0_options = []
    below, above = max(still), min(length for length, _ in moved)
    if above == below + 1:
        l0_options.append((below, 0))
    if len(moved) >= 2:
        with warnings.catch_warnings():  # a poorly conditioned fit only proposes candidates: judging decides
            warnings.simplefilter("ignore", np.exceptions.RankWarning)
            slope, intercept = np.polyfit([m[0] for m in moved], [m[1] for m in moved], 1)
        if slope > 0:
            l0_options += [(float(round(value)), raw) for value, raw in rounded((1 - intercept) / slope, (1, 2, 3, 4))]
    longest, q = moved[-1]
    for l0, l0_raw in l0_options:
        l0 = int(l0)
        if not below <= l0 < above or longest <= l0:
            continue
        for s, raw in rounded((q - 1) / (longest / l0 - 1)):
            build.add(3, "dynamic", theta, {"factor": s, "original_max_position_embeddings": l0},
                      theta_raw + l0_raw + raw)


def _llama3(build, theta, theta_raw, f, e, g):
    for s, s_raw in rounded(1 / g[-1]):
        settings = [(LLAMA31["original_max_position_embeddings"], LLAMA31["low_freq_factor"],
                     LLAMA31["high_freq_factor"], 0)]
        band = np.flatnonzero((g > (1 + FLAT) / s) & (g < 1 - FLAT))
        if band.size >= 2 and s > 1:
            weight = (g[band] - 1 / s) / (1 - 1 / s)
            alpha, beta = np.polyfit(theta ** -e[band] / (2 * np.pi), weight, 1)
            if alpha > 0 and beta < 0:
                low_wl, high_wl = -alpha / beta, alpha / (1 - beta)
                for low_ff, raw in rounded(8192 / low_wl):
                    for high_ff, raw2 in rounded(8192 / high_wl):
                        settings.append((8192, low_ff, high_ff, raw + raw2))
                for l0, raw in rounded(low_wl, (1, 2, 3, 4)):
                    for high_ff, raw2 in rounded(round(l0) / high_wl):
                        settings.append((int(round(l0)), 1.0, high_ff, raw + raw2))
        for l0, low_ff, high_ff, raw in settings:
            build.add(4, "llama3", theta, {"factor": s, "low_freq_factor": low_ff, "high_freq_factor": high_ff,
                                           "original_max_position_embeddings": l0}, theta_raw + s_raw + raw)


def _yarn(build, theta, theta_raw, g, r, factor):
    lengths = [(value, 0) for value in ROUND_L0]
    inside = np.flatnonzero((g < 1 - FLAT) & (g > g.min() * (1 + FLAT)))
    if inside.size >= 2:  # untruncated: low and high from the ramp's line (betas 32 and 1)
        slope, intercept = np.polyfit(inside, 1 - g[inside], 1)
        if slope > 0:
            low = -intercept / slope
            lengths += [(float(round(v)), raw + 1) for v, raw in rounded(
                2 * math.pi * 32 * math.exp(2 * low * math.log(theta) / r), (1, 2, 3, 4))]
    for l0, l0_raw in lengths:
        for truncate in (True, False) if l0 >= 1 else ():
            low, high = yarn_range(theta, r, int(l0), truncate=truncate)
            ramp = np.clip((np.arange(g.size) - low) / (high - low), 0.0, 1.0)
            if ramp[-1] <= 0 or np.any((ramp == 0) & (g < 1 - FLAT)):
                continue
            for s, s_raw in rounded(1 / (1 - (1 - g[-1]) / ramp[-1])) if (1 - g[-1]) < ramp[-1] else []:
                params = {"factor": s, "original_max_position_embeddings": int(l0)}
                if not truncate:
                    params["truncate"] = False
                options = [({}, 0)]
                if factor is not None and abs(factor - (0.1 * math.log(s) + 1 if s > 1 else 1.0)) > FLAT * factor:
                    options = [({"attention_factor": a}, raw) for a, raw in rounded(factor, (2, 3, 4, 5))]
                for extra, a_raw in options:
                    build.add(5, "yarn", theta, {**params, **extra}, theta_raw + l0_raw + s_raw + a_raw)


def _longrope(build, theta, theta_raw, ladder, shape, factor, max_positions):
    first = ladder[0].frequencies
    if shape.proportional or first.size != shape.pairs or first.size < 2 or not np.all(first > 0):
        return
    e = 2 * np.arange(first.size) / (2 * first.size)
    shorts = [r for r in ladder if agrees(r, ladder[0])]
    longs = [r for r in ladder if not agrees(r, ladder[0])]
    short = theta**-e / shorts[-1].frequencies
    if not longs:
        slopes = _log_slopes(shorts[-1].frequencies, e)
        if np.ptp(slopes) < FLAT * abs(np.median(slopes)):
            return  # geometric: default or linear, not per-pair factors
        why = ("rope-freqs shows one set of per-pair factors; whether they switch with the length is not "
               "determined" if ladder[0].length is None else "per-pair factors that do not change with the length")
        for values, raw in ((np.round(short, 4), 0), (short, 1)):
            build.add(6, "longrope", theta, {"short_factor": values.tolist(), "long_factor": values.tolist(),
                                             "original_max_position_embeddings": ladder[-1].length or UNSEEN_L0,
                                             "factor": 1.0}, theta_raw + raw, True, why)
        return
    long = theta**-e / longs[-1].frequencies
    l0 = max(r.length for r in shorts)
    options = [({}, 0)] if max_positions is not None and max_positions > l0 else []
    if factor is not None and factor > 1:
        options += [({"factor": s}, raw) for s, raw in rounded(math.exp((factor**2 - 1) * math.log(l0)))]
    options.append(({"factor": 1.0, "attention_factor": factor or 1.0}, 1))
    for extra, raw in options:
        for short_ext, long_ext, ext_raw in ((np.round(short, 4), np.round(long, 4), 0), (short, long, 1)):
            build.add(6, "longrope", theta, {"short_factor": short_ext.tolist(), "long_factor": long_ext.tolist(),
                                             "original_max_position_embeddings": int(l0), **extra},
                      theta_raw + raw + ext_raw)
