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
``mrope-frequencies``  per-axis frequencies for shared ones, or the other way; shared ones for strided
``mrope-layout``       rotate-half pairs for interleaved ones, or the other way
``mrope-theta``        every axis at another common base (10000, 1e6, 5e6, 500000, 256, 100), or at
                       the declared one squared (each exponent over half its features)
=====================  =====================================================================

A hint is named when exactly one variant fits every cache within the bounds: then its keys,
declared, make the target conform. ``mrope-crop``: every grid fits the declared convention
and only the cropped one does not. ``sin-cos-swapped`` and ``positions-offset`` (the rope family's):
the caches fit with cos and sin exchanged, or at every position shifted by one.

Position ids (``mrope-positions``): ``mrope-text-after-vision`` and ``mrope-temporal-step`` when
exactly one rule of :data:`POSITION_SLIPS` gives every sequence's ids.
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
    add("mrope-layout", (("layout", layout),), layout=layout)
    thetas = set(declared.theta)
    squared = (thetas.pop() ** 2,) if len(thetas) == 1 else ()  # one theta for every axis: its square
    for theta in (*COMMON_THETAS, *squared):
        add("mrope-theta", (("base", theta),), theta=(theta,))
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


def _swapped(caches) -> list:
    return [(probe, properties.Cache(cache.sin, cache.cos, cache.dtype, cache.complex)) for probe, cache in caches]


def _shifted(caches, by: int) -> list:
    return [(dataclasses.replace(probe, positions=probe.positions + by), cache) for probe, cache in caches]


def _plain_slips(declared: MropeConvention, caches) -> list[Hint]:
    """sin and cos swapped, or every position shifted by one: the rope family's slips."""
    if _fits(declared, _swapped(caches)):
        return [Hint(("sin-cos-swapped",), "cos and sin are returned in the other order")]
    for by in (1, -1):
        if _fits(declared, _shifted(caches, by)):
            return [Hint(("positions-offset",), f"every position is taken {by:+d}: the caches are those of the "
                                                f"positions {'after' if by > 0 else 'before'} the ones handed over")]
    return []


POSITION_SLIPS = (
    ({"advance": "spatial-extent"}, "mrope-text-after-vision",
     "the text after a vision run starts after the run's larger spatial side (start + max(h, w)), not after its "
     "largest position: with several frames its temporal positions run past it"),
    ({"advance": "unmerged-extent"}, "mrope-text-after-vision",
     "the text after a vision run starts after the run's larger spatial side in patches before the merge (start + "
     "max(H, W): the `// spatial_merge_size` forgotten), not after its largest position"),
    ({"advance": "at-largest"}, "mrope-text-after-vision",
     "the text after a vision run starts at the run's largest position, not one after it"),
    ({"advance": "skip-one"}, "mrope-text-after-vision",
     "the text after a vision run starts two after the run's largest position, not one"),
    ({"truncated_step": True}, "mrope-temporal-step",
     "a video's temporal step is truncated to an integer before it multiplies the frame index"),
)


def position_hints(spec, probes, outcomes) -> list[Hint]:
    """The slip a position-ids target's ids show (:data:`POSITION_SLIPS`): the one rule every
    returned sequence fits."""
    from . import oracle

    seen = [(probe, np.asarray(outcome.table, dtype=np.int64).reshape(3, -1)) for probe, outcome in
            zip(probes, outcomes, strict=True) if probe.role == "table" and outcome.ok and
            np.asarray(outcome.table).size == 3 * probe.token_types.size]
    found = [(slip, said) for rule, slip, said in POSITION_SLIPS if seen and all(
        np.array_equal(ids, oracle.sequence_positions(probe.token_types, probe.grids, spec.spatial_merge_size,
                                                      spec.temporal_interval, **rule)) for probe, ids in seen)]
    return [Hint((found[0][0],), found[0][1])] if len(found) == 1 else []


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
    if not found and grids:
        return _plain_slips(declared, grids)
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


# -- the mrope-apply API --------------------------------------------------------------------------

_APPLIES = {"half": "rotate-half", "interleaved": "interleaved (rotate_every_two)"}
_TABLES = {"half": "[c | c] cos/sin", "interleaved": "interleaved cos/sin (c0 c0 c1 c1 ...)"}


def _within(applied, expected) -> bool:
    return bool(np.all(np.abs(applied.got - expected) <= applied.bound))


def _mixed_fits(calls, convention: MropeConvention, layout: str, table_layout: str, handed) -> bool:
    """Whether every call is an apply pairing as ``layout`` with cos and sin laid out as
    ``table_layout`` (:func:`.oracle.apply_with_table`), within the bounds that layout takes."""
    from . import oracle
    from .tolerance import apply_tolerance

    paired = dataclasses.replace(convention, layout=layout)
    for probe, applied in calls:
        bound = apply_tolerance(applied.x, applied.positions, paired, probe.x_dtype, applied.dtype,
                                handed(probe), table_layout)
        expected = oracle.apply_with_table(applied.x, applied.positions, paired, table_layout)
        if not np.all(np.abs(applied.got - expected) <= bound):
            return False
    return True


def apply_hints(spec, probes, outcomes) -> list[Hint]:
    """The slip an apply target's rotated x shows: the rotation turning the other way
    (``angle-sign``), the other pairing where the code builds its own cos and sin
    (``mrope-layout``), or an apply pairing one way with cos and sin laid out the other
    (``apply-pairing-mixed``). The gate hands cos and sin (``q-k-cos-sin``, ``x-cos-sin``) laid
    out for the declared pairing, so there the code pairs the other way and declaring that
    pairing hands it the cos and sin it pairs with; code that builds its own is no rotation
    under any declaration, and the hint advises nothing."""
    from . import oracle
    from .judge import handed_bound, read_applied

    declared = spec.convention
    calls = [(probe, read_applied(probe, outcome, declared, spec.signature)) for probe, outcome in
             zip(probes, outcomes, strict=True) if probe.role == "table" and outcome.ok
             and len(outcome.arrays) == 1 and np.asarray(outcome.table).size == probe.x.size]
    if not calls or not all(np.isfinite(applied.got).all() for _, applied in calls):
        return []
    if all(_within(applied, oracle.apply(applied.x, applied.positions, declared)) for _, applied in calls):
        return []
    if all(_within(applied, oracle.apply(applied.x, -applied.positions, declared)) for _, applied in calls):
        return [Hint(("angle-sign",), "the rotation turns the other way (an angle of -p*f): x cos - rotate(x) sin, "
                                      "or sin negated")]
    other = "interleaved" if declared.layout == "half" else "half"

    def handed(probe):
        return handed_bound(probe, declared, spec.signature)

    if handed(calls[0][0]) is not None:
        if _mixed_fits(calls, declared, other, declared.layout, handed):
            return [Hint(("apply-pairing-mixed",), f"{_APPLIES[other]} applied to the {_TABLES[declared.layout]} it "
                                                   f"is handed: the gate lays cos and sin out for the declared "
                                                   f"{declared.layout} pairs", (("layout", other),))]
        return []
    paired = dataclasses.replace(declared, layout=other)
    if all(_within(applied, oracle.apply(applied.x, applied.positions, paired)) for _, applied in calls):
        return [Hint(("mrope-layout",), f"{_APPLIES[other]} pairs where {declared.layout} pairs are declared",
                     (("layout", other),))]
    for layout, table in ((declared.layout, other), (other, declared.layout)):
        if _mixed_fits(calls, declared, layout, table, handed):
            return [Hint(("apply-pairing-mixed",), f"{_APPLIES[layout]} applied to {_TABLES[table]}: a slot's two "
                                                   "features turn by different angles, a rotation under neither "
                                                   f"pairing; build cos and sin as the {_APPLIES[layout]} apply pairs "
                                                   "them")]
    return []
