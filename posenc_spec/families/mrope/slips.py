"""Which member a failing target's caches are, and the slip that makes them so (the hints).

The run's readable caches (every table call but the crop's) are judged again under each
*variant* of the declared convention, one field changed the way public slips change it:

=====================  =====================================================================
slip                   variant
=====================  =====================================================================
``mrope-sections``     the same axes owning the sections in another order (swapped)
``mrope-axis-order``   the positions' rows read in another order (for a grid: the axes declared
                       in another order, each keeping its share of slots)
``mrope-interleaved``  interleaved slots for contiguous ones, or the other way
``mrope-frequencies``  per-axis frequencies for shared ones, or the other way
``mrope-layout``       rotate-half pairs for interleaved ones, or the other way
``mrope-theta``        every axis at another common base (10000, 1e6, 5e6, 500000, 256, 100)
=====================  =====================================================================

A hint is named when exactly one variant fits every cache within the bounds: then its keys,
declared, make the target conform. ``mrope-crop``: every grid fits the declared convention
and only the cropped one does not.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from posenc_spec.gate.identify.hint import Hint

from . import properties
from .conventions import MropeConvention
from .grid import GRID_SIGNATURES
from .tolerance import crop_position_error

COMMON_THETAS = (10000.0, 1e6, 5e6, 500000.0, 256.0, 100.0)


@dataclasses.dataclass(frozen=True)
class Variant:
    """A variant: ``convention`` read with the positions' rows in the order ``rows`` (None: as
    handed over); ``keys`` the declaration keys that state it, where one can."""

    slip: str
    convention: MropeConvention
    keys: tuple
    rows: tuple | None = None

    def fits(self, caches) -> bool:
        return all(properties.check_formula(cache, probe.positions if self.rows is None else
                                            probe.positions[list(self.rows)], self.convention).passed
                   for probe, cache in caches)


def _replaced(declared: MropeConvention, **fields) -> MropeConvention | None:
    try:
        made = dataclasses.replace(declared, **fields)
    except ValueError:
        return None
    return None if made == declared else made


def variants(declared: MropeConvention) -> list[Variant]:
    """Every variant of ``declared`` (see the module docstring), each once."""
    found = []

    def add(slip, keys, **fields):
        made = _replaced(declared, **fields)
        if made is not None and all(made != seen.convention or seen.rows for seen in found):
            found.append(Variant(slip, made, keys))

    for order in itertools.permutations(range(len(declared.axes))):
        sections = tuple(declared.sections[k] for k in order)
        add("mrope-sections", (("mrope_section", list(sections)),), sections=sections)
        if list(order) != sorted(order):
            axes = tuple(declared.axes[k] for k in order)
            found.append(Variant("mrope-axis-order", declared, (("mrope_axes", list(axes)),), tuple(order)))
    add("mrope-interleaved", (("mrope_interleaved", not declared.interleaved),), interleaved=not declared.interleaved)
    other = "per-axis" if declared.frequencies == "shared" else "shared"
    add("mrope-frequencies", (("axes_frequencies", other),), frequencies=other)
    layout = "half" if declared.layout == "interleaved" else "interleaved"
    add("mrope-layout", (("mrope_layout", layout),), layout=layout)
    for theta in COMMON_THETAS:
        add("mrope-theta", (("axes_theta", theta),), theta=(theta,))
    return found


def _fits(convention: MropeConvention, caches) -> bool:
    return Variant("", convention, ()).fits(caches)


def _grid_caches(caches) -> list:
    return [(probe, cache) for probe, cache in caches if probe.crop is None]


def nearest(spec, caches) -> dict | None:
    """The one variant every cache fits, as ``{"name", "message", ...}`` (None: none, or several)."""
    found = _explaining(spec.convention, _grid_caches(caches))
    if len(found) != 1 or found[0].rows is not None:
        return None
    member = found[0].convention
    return {"name": member.name(), "message": f"the caches are those of {member.name()}", **member.as_dict()}


def _explaining(declared: MropeConvention, caches) -> list[Variant]:
    if not caches or _fits(declared, caches):
        return []
    return [variant for variant in variants(declared) if variant.fits(caches)]


def hints(spec, probes, outcomes) -> list[Hint]:
    """The slip the run's caches show (see the module docstring); empty when none explains them."""
    from .judge import read

    caches = []
    for probe, outcome in zip(probes, outcomes, strict=True):
        if probe.role in ("table", "base", "relative"):
            cache, problem = read(outcome, probe, spec.convention)
            if cache is not None:
                caches.append((probe, cache))
    grids, cropped = _grid_caches(caches), [(p, c) for p, c in caches if p.crop is not None]
    declared = spec.convention
    if grids and cropped and _fits(declared, grids):
        if not all(properties.check_formula(cache, probe.positions, declared,
                                            position_error=crop_position_error(probe.crop, declared.axes)).passed
                   for probe, cache in cropped):
            return [Hint(("mrope-crop",), "every grid's cache is right but the cropped one's: its positions are "
                                          "not start + i (stop - start) / n along each axis (np.linspace(start, "
                                          "stop, n, endpoint=False))")]
        return []
    found = _explaining(declared, grids)
    if len(found) != 1:
        return []
    variant = found[0]
    if variant.rows is not None:
        fed = ", ".join(f"{declared.axes[row]} into {axis}'s slots" for axis, row in
                        zip(declared.axes, variant.rows, strict=True) if declared.axes[row] != axis)
        if spec.signature in GRID_SIGNATURES:
            return [Hint((variant.slip,), f"the grid's axes feed other axes' slots ({fed})", variant.keys)]
        return [Hint((variant.slip,), f"the rows of the positions are read in another order than the declared "
                                      f"{', '.join(declared.axes)}: {fed}")]
    return [Hint((variant.slip,), f"the caches are {variant.convention.name()}'s, not the declared "
                                  f"{declared.name()}'s", variant.keys)]
