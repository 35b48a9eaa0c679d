"""The calls the gate makes and the check ids they produce.

Check ids are stable strings: use them in an ``--xfails`` file, in ``--json`` output and
in the pytest test ids. ``S`` is a call's size, ``LxD`` (L positions, width D) for the
table API and ``int64:NxD`` or ``float32:NxD`` (N timesteps of that dtype) for the
timesteps API.

``import``
    the target imports and is callable.
``call[S]``
    the call returned an (L, D) array of floating-point numbers (a NumPy array, a torch
    tensor on any device with or without grad, or anything NumPy converts); it did not
    raise, exit, crash or hang.
``finite[S]``, ``formula[S]``, ``range[S]``
    no NaN or Inf; every element within its own bound (:mod:`posenc_spec.tolerance`) of
    the declared convention's exact value; every value in [-1, 1]. Run on every size.
``pair-norm[S]``, ``row-norm[S]``, ``position-zero[S]``, ``frequencies[S]``, ``relative-offset[S]``, ``dot-product[S]``
    the derived properties of :mod:`posenc_spec.checks`, run on the sizes of at most
    ``DERIVED_LIMIT`` elements (300 x 512). They follow from the formula, so at large
    sizes they add cost and no power: on a 4096 x 1024 table the formula check costs
    about 0.02 s and the relative-offset check 1.7 s (0.2 s at 1024 x 768), where a
    target may cost 0.25 s in all. Their value is the diagnosis they give on moderate
    tables (which property breaks, and where).
``degenerate[d=2]``
    width 2. Under shift 1 the formula has no value there: raising is fine, a finite table
    is compared with the limit omega = 1 (tensor2tensor's guard), a NaN is a failure.
    Under shift 0 it is an ordinary table.
``degenerate[L=1]``
    a single position (the largest timestep for the timesteps API).
``odd[D]``
    an odd width, as the convention's ``odd`` declares: ``error`` expects an exception;
    ``zero-pad`` and ``ceil`` expect that table. ``--odd skip`` makes no odd call.
``determinism``
    a second call of the same size returns the identical table, bit for bit.
``global-state``
    no call changed torch's default dtype, device, grad mode, deterministic-algorithms
    or anomaly flags, NumPy's error state or print options, the state of torch's, NumPy's
    or Python's global random number generator (a table draws no random numbers), or the
    working directory, and no timesteps-API call wrote into the timesteps tensor it was
    given.

The default grid (table API): 50x8, 50x4, 50x6, 128x64, 300x512 with every property;
1x64 and 50x2 (degenerate); odd widths 7 and 65 at 50 positions; then 1024x768 and
4096x1024 (formula, finite, range); determinism repeats 300x512. Width 8 at 50 positions
already tells every preset apart; 4096 positions and width 1024 reach the bugs that hide
at scale (float16 positions above 2048, precision loss in the angle, a wrapping channel
index). ``max_positions`` caps every length. The timesteps grid passes 1-D torch tensors:
int64 steps ``0..49`` (width 8; 50 evenly spaced float32 values in ``[0, t_max]`` when
``t_max < 49``), every integer ``0..t_max`` (up to 1024 of them, width 128),
256 seeded integer draws in ``[0, t_max]`` (width 320), and seeded float32 draws in
``[0, t_max]`` (256 at width 64, 4096 at width 1024); the expected table uses exactly the
values passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from posenc_spec import checks

DERIVED_LIMIT = 300 * 512
TABLE_SIZES = ((50, 8), (50, 4), (50, 6), (128, 64), (300, 512), (1024, 768), (4096, 1024))
ODD_WIDTHS = (7, 65)
ODD_LENGTH = 50
DETERMINISM_SIZE = (300, 512)
TIMESTEP_SEED = 20240229

# name -> the function of posenc_spec.checks; the order is the report's order.
CHECK_FUNCTIONS = {
    "formula": checks.check_formula,
    "range": checks.check_value_range,
    "pair-norm": checks.check_pair_norms,
    "row-norm": checks.check_row_norms,
    "position-zero": checks.check_first_row,
    "frequencies": checks.check_frequencies,
    "relative-offset": checks.check_relative_offset,
    "dot-product": checks.check_dot_products,
}
BULK_CHECKS = ("formula", "range")


@dataclass(frozen=True, eq=False)
class Probe:
    """One call of the target and the checks it feeds.

    ``role``: ``table`` (``call[S]`` and the table checks), ``odd``, ``degenerate`` or
    ``repeat`` (one check, ``check_id``). ``timesteps`` holds the int64 or float32 values
    passed to a timesteps-API target, None for the table API.
    """

    label: str
    role: str
    length: int
    width: int
    timesteps: np.ndarray | None = None
    check_id: str | None = None
    repeats: str | None = None

    @property
    def positions(self):
        """What the expected table is computed at: the length, or the exact timesteps."""
        return self.length if self.timesteps is None else self.timesteps.astype(np.float64)

    @property
    def full(self) -> bool:
        return self.length * self.width <= DERIVED_LIMIT

    def table_check_names(self) -> tuple[str, ...]:
        return ("finite", *(CHECK_FUNCTIONS if self.full else BULK_CHECKS))

    def check_ids(self) -> list[str]:
        if self.role != "table":
            return [self.check_id]
        return [f"call[{self.label}]"] + [f"{name}[{self.label}]" for name in self.table_check_names()]

    def request(self) -> dict:
        return {"label": self.label, "length": self.length, "width": self.width,
                "timesteps": self.timesteps, "shape": (self.length, self.width)}


def _capped(length: int, max_positions: int | None) -> int:
    return length if max_positions is None else min(length, max_positions)


def table_probes(max_positions=None, skip_odd=False) -> list[Probe]:
    probes = []
    sizes = [(_capped(n, max_positions), d) for n, d in TABLE_SIZES]
    for length, width in sizes[:5]:
        probes.append(Probe(f"{length}x{width}", "table", length, width))
    probes.append(Probe("1x64", "degenerate", 1, 64, check_id="degenerate[L=1]"))
    probes.append(Probe(f"{_capped(50, max_positions)}x2", "degenerate", _capped(50, max_positions), 2,
                        check_id="degenerate[d=2]"))
    if not skip_odd:
        for width in ODD_WIDTHS:
            length = _capped(ODD_LENGTH, max_positions)
            probes.append(Probe(f"{length}x{width}", "odd", length, width, check_id=f"odd[{width}]"))
    for length, width in sizes[5:]:
        probes.append(Probe(f"{length}x{width}", "table", length, width))
    length, width = _capped(DETERMINISM_SIZE[0], max_positions), DETERMINISM_SIZE[1]
    probes.append(Probe(f"{length}x{width}", "repeat", length, width, check_id="determinism",
                        repeats=f"{length}x{width}"))
    return probes


def timestep_probes(t_max: float, max_positions=None, skip_odd=False) -> list[Probe]:
    rng = np.random.default_rng(TIMESTEP_SEED)
    top = math.floor(t_max)

    def draws_int(n):
        values = rng.integers(0, top, size=n, endpoint=True)
        values[:2] = (0, top)  # both ends, as samplers reach them
        return values.astype(np.int64)

    largest = np.float32(t_max)
    if float(largest) > t_max:
        largest = np.nextafter(largest, np.float32(0))

    def draws_float(n):
        values = np.minimum(rng.uniform(0.0, t_max, size=n).astype(np.float32), largest)
        values[:2] = (0.0, largest)
        return values

    def probe(values, width, role="table", check_id=None, repeats=None):
        values = values[: _capped(values.size, max_positions)]
        label = f"{values.dtype.name}:{values.size}x{width}"
        return Probe(label, role, int(values.size), width, values, check_id, repeats)

    ladder = np.arange(min(top, 1023) + 1, dtype=np.int64)
    if top >= 49:
        first50 = np.arange(50, dtype=np.int64)
    else:  # too few integer steps below t_max (t in [0, 1], say): 50 evenly spaced float32 values
        first50 = np.minimum(np.linspace(0.0, t_max, 50).astype(np.float32), largest)
    determinism = draws_float(256)
    probes = [
        probe(first50, 8),
        probe(ladder, 128),
        probe(draws_int(256), 320),
        probe(determinism, 64),
        probe(np.array([top], dtype=np.int64), 64, "degenerate", "degenerate[L=1]"),
        probe(first50, 2, "degenerate", "degenerate[d=2]"),
    ]
    if not skip_odd:
        probes += [probe(first50, width, "odd", f"odd[{width}]") for width in ODD_WIDTHS]
    probes.append(probe(draws_float(4096), 1024))
    repeat = probe(determinism, 64)
    probes.append(Probe(repeat.label, "repeat", repeat.length, repeat.width, repeat.timesteps, "determinism",
                        repeat.label))
    return probes


def probes_for(api: str, t_max: float, max_positions=None, skip_odd=False) -> list[Probe]:
    if api == "table":
        return table_probes(max_positions, skip_odd)
    return timestep_probes(t_max, max_positions, skip_odd)


def plan_ids(probes: list[Probe]) -> list[str]:
    """Every check id a run over ``probes`` reports, in report order."""
    return ["import", *(check_id for probe in probes for check_id in probe.check_ids()), "global-state"]
