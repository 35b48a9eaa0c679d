"""``posenc-spec plot`` of a multi-axis rotary target: its caches on the grid, read as the gate reads
them, against the declared slot map.

- ``slots.png``: the per-axis frequency-slot map, the declared one and the target's: each slot's
  axis (colour) and ``log10`` frequency, the declared as rings, the target's as dots, measured on
  the calls along which one axis alone varies (:func:`measured_slots`; a slot that turns along no
  axis is left out and counted in the notes);
- ``cos.png``: cos of the drawn call, tokens by features, the target's and ``(got - expected) /
  bound`` beside it (beyond +-1 is out of bound).

The call drawn is the grid call furthest out of its bound (of equals, the widest grid). A
position-ids target (``mrope-positions``) has no cache to draw.
"""

from __future__ import annotations

import numpy as np

from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.family import Drawing, NothingToDraw

from . import grid, oracle
from .judge import read
from .keys import API as CACHE_API
from .tolerance import cache_tolerance, crop_position_error

WIDTH, HEIGHT, DPI = 8.0, 5.0, 100
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


def measured_slots(calls, convention) -> tuple[np.ndarray, np.ndarray, int]:
    """Each slot's axis and frequency as the target's caches show them, ``(P,)`` each (axis -1 and
    NaN: no call shows it), and how many slots turn along more than one axis. For each axis, a call
    along which that axis alone varies (``grid:1x1x9`` for w, ``grid:1x9x1`` for h, ``grid:4x1x1``
    for t, ``text:64`` for a single axis): a slot's frequency along it is the slope of its unwrapped
    angle (positions below 64: one turn is never skipped); the slot belongs to the axis along
    which it turns fastest."""
    slopes = np.zeros((len(convention.axes), convention.pairs))
    for axis in range(len(convention.axes)):
        along = next(((probe, cache) for probe, cache in calls if np.ptp(probe.positions[axis]) > 0 and all(
            np.ptp(probe.positions[other]) == 0 for other in range(len(convention.axes)) if other != axis)), None)
        if along is None:
            continue
        probe, cache = along
        cos, sin = cache.compact(convention)
        order = np.argsort(probe.positions[axis], kind="stable")
        p = probe.positions[axis][order]
        theta = np.unwrap(np.arctan2(sin, cos)[order], axis=0)
        slopes[axis] = np.abs(np.polyfit(p, theta, 1)[0])
    turning = slopes > 1e-9
    axes = np.where(turning.any(axis=0), np.argmax(slopes, axis=0), -1)
    frequencies = np.where(axes >= 0, slopes.max(axis=0), np.nan)
    return axes, frequencies, int((turning.sum(axis=0) > 1).sum())


def _slots_figure(title: str, convention, axes: np.ndarray, frequencies: np.ndarray):
    from posenc_spec.figures.style import heading, new_figure

    figure = new_figure((WIDTH, HEIGHT), DPI)
    plot = figure.subplots(1, 1)
    slots = np.arange(convention.pairs)
    declared = convention.slot_axes()
    for index, name in enumerate(convention.axes):
        mine = declared == index
        plot.plot(slots[mine], np.log10(oracle.frequencies(convention)[mine]), "o", mfc="none",
                  color=COLOURS[index % len(COLOURS)], label=f"declared {name}")
        seen = axes == index
        plot.plot(slots[seen], np.log10(frequencies[seen]), ".", color=COLOURS[index % len(COLOURS)],
                  label=f"target {name}")
    plot.set_xlabel("slot (pair of features)")
    plot.set_ylabel("log10 frequency")
    plot.legend(loc="upper right", fontsize="small")
    plot.set_title(heading(title, "frequency slots per axis", WIDTH), fontsize="small")
    return figure


def _cos_figure(title: str, cos: np.ndarray, scaled: np.ndarray):
    from posenc_spec.figures.style import heading, new_figure

    figure = new_figure((WIDTH, HEIGHT), DPI)
    left, right = figure.subplots(1, 2)
    for axis, values, label in ((left, cos, "cos"), (right, scaled, "(got - expected) / bound")):
        image = axis.imshow(values, aspect="auto", interpolation="nearest")
        axis.set_xlabel("feature")
        axis.set_ylabel("token")
        axis.set_title(label, fontsize="small")
        figure.colorbar(image, ax=axis)
    figure.suptitle(heading(title, "cos of the call drawn", WIDTH), fontsize="small")
    return figure


def plot(declaration, sizes: dict, options) -> Drawing:
    """The pictures of the module docstring."""
    from posenc_spec.gate.runner import run_target

    if declaration.api != CACHE_API:
        raise NothingToDraw(declaration.name, f"the {declaration.api} API has no cache to draw; check says where "
                                              f"its values differ")
    if any(value is not None for value in sizes.values()):
        raise UsageError("plot of an mrope-cache target takes no --num-positions or --dim: it draws the grid's calls")
    spec = declaration.spec
    probes = [probe for probe in grid.probes_for(spec.convention, spec.signature, spec.head_dim,
                                                 declaration.max_positions)
              if probe.role == "table" and probe.slot.startswith(("grid:", "crop:", "text:"))]
    turn = run_target(declaration, [probe.request() for probe in probes], options)
    if not turn.imported:
        raise UsageError(f"cannot import TARGET {declaration.name}: {turn.import_message}")
    drawn, calls = [], []
    for probe, outcome in zip(probes, turn.outcomes, strict=True):
        cache, _ = read(outcome, probe, spec.convention)
        if cache is None:
            continue
        calls.append((probe, cache))
        if cache.complex or probe.slot.startswith("text:"):
            continue
        error = crop_position_error(probe.crop, spec.convention.axes) if probe.crop else None
        expected, _ = oracle.cache(probe.positions, spec.convention)
        bound = oracle.expand(cache_tolerance(probe.positions, spec.convention, cache.dtype,
                                              position_error=error), spec.convention)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.where(cache.cos == expected, 0.0, (cache.cos - expected) / bound)
        drawn.append((float(np.nanmax(np.abs(scaled), initial=0.0)), probe.length, probe, cache, scaled))
    if not drawn and not calls:
        raise NothingToDraw(declaration.name, "no call returned a cache")
    if not drawn:
        raise NothingToDraw(declaration.name, "no grid call returned real cos and sin")
    ratio, _, probe, cache, scaled = max(drawn, key=lambda item: (item[0], item[1]))
    title = f"{declaration.name} at {probe.slot} under {spec.describe()}, {cache.dtype}"
    axes, frequencies, shared = measured_slots(calls, spec.convention)
    pictures = {"slots": ("slots.png", _slots_figure(title, spec.convention, axes, frequencies)),
                "cos": ("cos.png", _cos_figure(title, cache.cos, scaled))}
    verdict = (f"every value within its bound (max error/bound {ratio:.3g})" if ratio <= 1
               else f"out of bound at {probe.slot}: max error/bound {ratio:.3g}")
    unexplained = int((axes < 0).sum())
    notes = (f"drawn: the grid call furthest out of bound of {len(drawn)}",
             f"slots.png: {unexplained} of {spec.convention.pairs} slots turn along no axis, {shared} along more "
             f"than one (drawn at the fastest)")
    return Drawing(title, verdict, pictures, notes)
