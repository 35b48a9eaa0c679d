"""The calls the gate makes and the check ids they produce.

Check ids are stable strings: use them in an ``--xfails`` file, in ``--json`` output and in
the pytest test ids. ``S`` names a slot of the grid, the same whatever ``--max-positions``
or ``--t-max`` make of its size (the messages give the size actually called): ``50x8``,
``50x4``, ``50x6``, ``128x64``, ``300x512``, ``1024x768``, ``4096x64`` for the table API;
``first-50x8``, ``every-step-x128``, ``int-draws-x320``, ``float-draws-x64``,
``float-draws-x1024`` for the timesteps API.

``import``
    the target imports and is callable.
``call[S]``
    the call returned an (L, D) array of floating-point numbers (a NumPy array in any byte
    order, a torch tensor on any device with or without grad, or anything NumPy converts);
    it did not raise, exit, crash, hang or exceed a limit.
``finite[S]``, ``formula[S]``, ``range[S]``
    no NaN or Inf; every element within its own bound (:mod:`posenc_spec.tolerance`) of
    the declared convention's exact value; every value in [-1, 1]. Run on every size.
``pair-norm[S]``, ``row-norm[S]``, ``position-zero[S]``, ``frequencies[S]``, ``relative-offset[S]``, ``dot-product[S]``
    the derived properties of :mod:`posenc_spec.families.sinusoidal.properties`, run on the sizes of at most
    ``DERIVED_LIMIT`` elements (300 x 512). They follow from the formula, so at large
    sizes they add cost and no power; their value is the diagnosis they give on moderate
    tables (which property breaks, and where). A property the size cannot show (no row at
    position 0, timesteps not one apart) is ``skipped`` with that reason.
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
    a second call of one size, started from another state of the global random number
    generators, returns the identical table, bit for bit.
``adds[50x8]``
    (the ``adds-to-x`` signature: a module that returns ``x + table``; every other call
    hands it zeros) with ``x`` of seeded values, what it returns minus ``x`` is the table,
    within its bound and one rounding of the sum.
``aliasing``
    no result changed during the next call (the child reads each result again after it): a
    view of a cache the target rewrites, an output buffer it reuses, changes under the caller.
``grow[d=16]``, ``dtype-order[64x32]``, ``memo[48x32]``
    the call sequences played after the grid, at widths it never asks
    (:mod:`posenc_spec.families.sinusoidal.sequences`).
``global-state``
    no call changed global state (see :mod:`posenc_spec.gate.child.state`: torch's and
    NumPy's modes and flags, warnings filters, environment, import path and hooks, working
    directory, umask, signal handlers, timers, standard streams, recursion limit, locale)
    or wrote into an argument, none reseeded a global random number generator or left one
    whose state cannot be read, and the target's module, when imported, left none of
    torch's modes or NumPy's error state changed. A call that only draws from a generator
    passes with a warning; so does a change an installed library made while a call
    imported it (:mod:`posenc_spec.gate.child.attribution`).

The default grid (table API): 50x8, 50x4, 50x6, 128x64, 300x512 with every property;
1x64 and 50x2 (degenerate); odd widths 7 and 65 at 50 positions; then 1024x768 and
4096x64 (formula, finite, range); determinism repeats 300x512. ``max_positions`` caps
every length. Each call is kept for the class of bug it shows, and a large table is only as
wide as that class needs (its cost, the target's and the expected table's alike, grows with
its elements):

- width 8 at 50 positions already tells every preset apart (base, layout, offset, scale,
  shift); 50x4 and 50x6, two and three pairs, are where an exponent divided by the wrong
  count (``d``, ``d/2``, ``d/2 - 1``) differs most;
- 128x64 and 300x512: every derived property, where it says which one breaks and where;
- 1024x768: a channel index past 256 (384 pairs): an index counted in uint8 wraps there and
  one formed in bfloat16 rounds (300x512 stops at pair 255), and positions past 512, where a
  table clamped or built for 512 rows ends;
- 4096x64: positions past 2048, where float16 positions
  stop (2048 is its last integer), a buffer built for 2048 rows wraps or ends silently, and
  code that takes another path past its cached rows (positions then formed in a narrow dtype)
  shows that path. A position bug shows in every column of a pair whose angle it moves, and
  width 64 holds 32 frequencies from 1 down to ``base ** -(31/32)``, the whole range of
  angle scales; width 1024 would add nothing a bug needs but 16 times the elements.

The timesteps grid passes 1-D torch tensors:
int64 steps ``0..49`` (width 8; 50 evenly spaced float32 values in ``[0, t_max]`` when
``t_max < 49``), every integer ``0..t_max`` (up to 1024 of them, width 128),
256 seeded integer draws in ``[0, t_max]`` (width 320), and seeded float32 draws in
``[0, t_max]`` (256 at width 64, 256 at width 1024); the expected table uses exactly the
values passed. Width 1024 is the timesteps grid's only call past 256 pairs (the channel index
bugs above); float timesteps that are rounded, truncated or formed in a narrow dtype show at
256 draws already (``float-draws-x64``), so its draws are as many.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from posenc_spec.families.sinusoidal import properties as checks
from posenc_spec.gate.calls import ArrayArg, CallRequest

DERIVED_LIMIT = 300 * 512
TABLE_SIZES = ((50, 8), (50, 4), (50, 6), (128, 64), (300, 512), (1024, 768), (4096, 64))
FLOAT_DRAWS = 256  # seeded float32 timesteps of each float-draws slot
ODD_WIDTHS = (7, 65)
ODD_LENGTH = 50
DETERMINISM_SIZE = (300, 512)
TIMESTEP_SEED = 20240229
ADDS_SIZE = (50, 8)  # the call that shows what a module adds to x (the adds-to-x signature)
ADDS_SEED = 20250101
# x as an adds-to-x module takes it, from the canonical (positions, features)
_ADDS_LAYOUTS = {"sbd": lambda x: x[:, None, :], "bsd": lambda x: x[None], "sd": lambda x: x}

# name -> the function of posenc_spec.families.sinusoidal.properties; the order is the report's order.
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

    ``slot`` names it in check ids (stable); ``role``: ``table`` (``call[S]`` and the table
    checks), ``odd``, ``degenerate``, ``repeat`` or ``sequence`` (one check, ``check_id``,
    which the calls of a sequence share: :mod:`posenc_spec.families.sinusoidal.sequences`). ``timesteps``
    holds the values passed to a timesteps-API target (exact in ``input_dtype``, when that
    is given: bfloat16 or float16), None for the table API. ``rng`` names the generators'
    starting state (the repeat starts from another); ``note`` says what a call of a sequence is.
    """

    slot: str
    role: str
    length: int
    width: int
    timesteps: np.ndarray | None = None
    check_id: str | None = None
    repeats: str | None = None
    rng: str = "a"
    derived: bool | None = None  # None: decided by the size; the grid sets it from the slot's nominal size
    x_layout: str | None = None  # the adds probe: how x is laid out for the module
    input_dtype: str | None = None
    note: str = ""

    @property
    def size(self) -> str:
        """The size actually called, ``LxD`` (or ``N int64 timesteps x D``)."""
        if self.timesteps is None:
            return f"{self.length}x{self.width}"
        return f"{self.length} {self.input_dtype or self.timesteps.dtype.name} timesteps x {self.width}"

    @property
    def label(self) -> str:
        """What a snapshot names the call by: its check id for an odd or degenerate call
        (one call each), else its slot."""
        return self.check_id if self.role in ("odd", "degenerate") else self.slot

    @property
    def positions(self):
        """What the expected table is computed at: the length, or the exact timesteps."""
        return self.length if self.timesteps is None else self.timesteps.astype(np.float64)

    @property
    def full(self) -> bool:
        """Whether the derived checks run: decided by the slot, not by a capped length, so
        that the check ids stay the same whatever the cap."""
        return self.length * self.width <= DERIVED_LIMIT if self.derived is None else self.derived

    def table_check_names(self) -> tuple[str, ...]:
        return ("finite", *(CHECK_FUNCTIONS if self.full else BULK_CHECKS))

    def check_ids(self) -> list[str]:
        if self.role != "table":
            return [self.check_id]
        return [f"call[{self.slot}]"] + [f"{name}[{self.slot}]" for name in self.table_check_names()]

    def request(self, label: str | None = None) -> CallRequest:
        """The call, labelled by the slot (or by ``label``)."""
        first = self.length if self.timesteps is None else ArrayArg(
            self.timesteps, self.input_dtype or self.timesteps.dtype.name, "torch", "timesteps")
        more = ()
        if self.role == "adds":
            more = (ArrayArg(np.ascontiguousarray(_ADDS_LAYOUTS[self.x_layout](adds_x(self.length, self.width))),
                             "float32", "torch", "x"),)
        return CallRequest(label or self.slot, (first, self.width, *more), (self.length, self.width), rng=self.rng)


def input_dtypes(probes) -> set[str]:
    """The dtypes the grid hands timesteps in (int64 and float32; none for the table API):
    what a timesteps target must take. A sequence's call in another dtype asks what the
    target does with it, and a refusal is a note (:func:`.judge.judge_sequence_call`)."""
    return {probe.input_dtype or probe.timesteps.dtype.name for probe in probes
            if probe.timesteps is not None and probe.role != "sequence"}


def adds_x(length: int, width: int) -> np.ndarray:
    """The seeded ``(length, width)`` float32 values the adds probe hands a module."""
    return np.random.default_rng(ADDS_SEED).standard_normal((length, width)).astype(np.float32)


def _capped(length: int, max_positions: int | None) -> int:
    return length if max_positions is None else min(length, max_positions)


def table_probes(max_positions=None, skip_odd=False, adds_layout: str | None = None) -> list[Probe]:
    probes = [Probe(f"{n}x{d}", "table", _capped(n, max_positions), d, derived=n * d <= DERIVED_LIMIT)
              for n, d in TABLE_SIZES[:5]]
    probes.append(Probe("L=1", "degenerate", 1, 64, check_id="degenerate[L=1]"))
    probes.append(Probe("d=2", "degenerate", _capped(50, max_positions), 2, check_id="degenerate[d=2]"))
    if not skip_odd:
        probes += [Probe(f"odd-{width}", "odd", _capped(ODD_LENGTH, max_positions), width, check_id=f"odd[{width}]")
                   for width in ODD_WIDTHS]
    probes += [Probe(f"{n}x{d}", "table", _capped(n, max_positions), d,
                     derived=n * d <= DERIVED_LIMIT)
               for n, d in TABLE_SIZES[5:]]
    if adds_layout is not None:
        length, width = ADDS_SIZE
        probes.append(Probe(f"adds-{length}x{width}", "adds", _capped(length, max_positions), width,
                            check_id=f"adds[{length}x{width}]", x_layout=adds_layout))
    length, width = DETERMINISM_SIZE
    slot = f"{length}x{width}"
    probes.append(Probe(slot, "repeat", _capped(length, max_positions), width, check_id="determinism",
                        repeats=slot, rng="b"))
    return probes


def timestep_probes(t_max: float, max_positions=None, skip_odd=False) -> list[Probe]:
    generator = np.random.default_rng(TIMESTEP_SEED)
    top = math.floor(t_max)

    def draws_int(n):
        values = generator.integers(0, top, size=n, endpoint=True)
        values[:2] = (0, top)  # both ends, as samplers reach them
        return values.astype(np.int64)

    largest = np.float32(t_max)
    if float(largest) > t_max:
        largest = np.nextafter(largest, np.float32(0))

    def draws_float(n):
        values = np.minimum(generator.uniform(0.0, t_max, size=n).astype(np.float32), largest)
        values[:2] = (0.0, largest)
        return values

    def probe(slot, values, width, role="table", check_id=None, repeats=None, rng="a"):
        derived = values.size * width <= DERIVED_LIMIT
        values = values[: _capped(values.size, max_positions)]
        return Probe(slot, role, int(values.size), width, values, check_id, repeats, rng, derived)

    ladder = np.arange(min(top, 1023) + 1, dtype=np.int64)
    if top >= 49:
        first50 = np.arange(50, dtype=np.int64)
    else:  # too few integer steps below t_max (t in [0, 1], say): 50 evenly spaced float32 values
        first50 = np.minimum(np.linspace(0.0, t_max, 50).astype(np.float32), largest)
    determinism = draws_float(FLOAT_DRAWS)
    probes = [
        probe("first-50x8", first50, 8),
        probe("every-step-x128", ladder, 128),
        probe("int-draws-x320", draws_int(256), 320),
        probe("float-draws-x64", determinism, 64),
        probe("L=1", np.array([top], dtype=np.int64), 64, "degenerate", "degenerate[L=1]"),
        probe("d=2", first50, 2, "degenerate", "degenerate[d=2]"),
    ]
    if not skip_odd:
        probes += [probe(f"odd-{width}", first50, width, "odd", f"odd[{width}]") for width in ODD_WIDTHS]
    probes.append(probe("float-draws-x1024", draws_float(FLOAT_DRAWS), 1024))
    probes.append(probe("float-draws-x64", determinism, 64, "repeat", "determinism", "float-draws-x64", "b"))
    return probes


def probes_for(api: str, t_max: float, max_positions=None, skip_odd=False, adds_layout=None) -> list[Probe]:
    if api == "table":
        return table_probes(max_positions, skip_odd, adds_layout)
    return timestep_probes(t_max, max_positions, skip_odd)


def plan_ids(probes: list[Probe]) -> list[str]:
    """Every check id a run over ``probes`` reports, in report order (the calls of a
    sequence share one)."""
    ids = ["import"]
    for probe in probes:
        ids += [check_id for check_id in probe.check_ids() if check_id not in ids]
    return ids + ["aliasing", "global-state"]
