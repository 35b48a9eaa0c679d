"""The calls the gate makes of a multi-axis rotary target, and the check ids they produce.

Every call hands over the same canonical arguments (:meth:`MropeProbe.request`): the positions
``(len(axes), L)`` (int64; each row one axis, in the declared order), the head size, the grid
``t, h, w`` and its crop ``(3, 2)`` (``start, stop`` of t, h and w, float64). The signature
(:mod:`.adapters`) takes what its real code takes: the positions (as transformers'
``(3, batch, L)`` position ids, FLUX's ``(L, axes)`` ids, Lumina 2's ``(batch, L, axes)``,
Qwen2-VL's and Pixtral's vision towers' ``(L, 2)``, or ``get_1d_rotary_pos_embed``'s ``pos``) or
the grid (``get_2d/3d_rotary_pos_embed``'s ``crops_coords`` and ``grid_size``, a
video's ``hidden_states`` of that many patches).

Calls of a target that takes positions (``S`` names the slot)::

    text:64        every axis at the text positions 0..63 (M-RoPE of text is 1-D RoPE)
    grid:TxHxW     the tokens of a grid, row-major, each axis its index: 1x1x1, 1x1x9, 1x9x1,
                   1x6x10, 1x7x5 and, with a t axis, 3x5x7 and 4x1x1 (a one-axis convention: none)
    mixed          text, image, text as Qwen2-VL lays them: 3 text tokens, a 1x4x6 image from
                   position 3 (each axis offset by 3), 3 text tokens from 3 + max(4, 6) = 9
    long           64 tokens, each axis drawn apart (seeded) in [0, 32767] (below
                   --max-positions), one token at the origin
    relative:A     16 seeded tokens, then the same with axis A moved by S = 4096 (less under a
                   cap): ``relative[axis=A]``

Calls of a target that takes a grid: the grids above (``t = 1`` alone for two axes), and for
``grid-2d`` and ``grid-3d`` ``crop:TxHxW``, a 2x4x6 grid (1x4x6 for two axes) cropped from h
``(0, 3)`` and w ``(2, 7)``: positions ``start + i (stop - start) / n``, as CogVideoX's pipeline
crops a base grid whenever the aspect ratios differ.

A ``square-grid`` target (Llama 4's vision tower) makes its own tokens from an ``n x n`` grid:
the grids 1x1x1, 1x2x2, 1x5x5 and 1x7x7, each of its ``n**2`` patches (row-major) at its indices
plus 1, then a class token at the origin.

Check ids: ``call[S]``, ``finite[S]``, ``formula[S]``, ``norm[S]`` and ``identity[S]`` (the slots with
a token at the origin) for each slot; ``relative[axis=A]`` for each axis; ``determinism`` (the
first slot again), ``aliasing`` and ``global-state``, as for every family.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc_spec.gate.calls import ArrayArg, CallRequest

from .conventions import MropeConvention, grid_positions

TEXT_LENGTH = 64
GRIDS = ((1, 1, 1), (1, 1, 9), (1, 9, 1), (1, 6, 10), (1, 7, 5), (3, 5, 7), (4, 1, 1))
CROP_GRID = (2, 4, 6)
CROP = {"h": (0.0, 3.0), "w": (2.0, 7.0)}
MIXED = (3, (1, 4, 6), 3)  # text tokens, an image grid, text tokens
LONGEST = 32768
LONG_TOKENS = 64
RELATIVE_TOKENS = 16
RELATIVE_SHIFT = 4096
POSITION_SEED = 20260905
POSITION_SIGNATURES = ("positions", "x-position-ids", "ids", "x-ids", "batch-ids", "get-1d")
GRID_SIGNATURES = ("grid-2d", "grid-3d", "hidden-states", "square-grid")
SQUARE_GRIDS = ((1, 1, 1), (1, 2, 2), (1, 5, 5), (1, 7, 7))
CROP_SIGNATURES = ("grid-2d", "grid-3d")
TABLE_CHECKS = ("call", "finite", "formula", "norm", "identity")


@dataclass(frozen=True, eq=False)
class MropeProbe:
    """One call. ``positions``: float64 ``(len(axes), L)``; ``grid`` and ``crop`` (axis name ->
    ``(start, stop)``) the grid a grid signature is called with; ``role``: ``table`` (the checks of
    its slot), ``base`` and ``relative`` (the two calls of ``relative[axis=A]``, ``axis`` the
    index of A), or ``repeat`` (the first call again, for the core's ``determinism``)."""

    slot: str
    role: str
    positions: np.ndarray
    head_dim: int
    grid: tuple[int, int, int] = (1, 1, 1)
    crop: dict | None = None
    axis: int | None = None
    check_id: str | None = None
    repeats: str | None = None
    rng: str = "a"

    @property
    def length(self) -> int:
        return self.positions.shape[1]

    def check_ids(self) -> list[str]:
        if self.role == "table":
            names = TABLE_CHECKS if (self.positions == 0).all(axis=0).any() else TABLE_CHECKS[:-1]
            return [f"{name}[{self.slot}]" for name in names]
        return [] if self.role == "base" else [self.check_id]

    def request(self, label: str | None = None) -> CallRequest:
        integral = np.array_equal(self.positions, np.rint(self.positions))
        positions = ArrayArg(self.positions.astype(np.int64) if integral else self.positions,
                             "int64" if integral else "float64", "torch", "position_ids")
        crop = np.array([(self.crop or {}).get(axis, (0.0, float(size))) for axis, size in
                         zip("thw", self.grid, strict=True)], dtype=np.float64)
        args = (positions, self.head_dim, *self.grid, ArrayArg(crop, "float64", "numpy", "crop"))
        return CallRequest(label or self.slot, args, (self.length * self.head_dim,), max_items=2,
                           allow_complex=True, rng=self.rng)


def _grids(convention: MropeConvention) -> list[tuple[int, int, int]]:
    if "t" in convention.axes:
        return list(GRIDS)
    return [grid for grid in GRIDS if grid[0] == 1]


def _mixed(convention: MropeConvention) -> np.ndarray:
    before, image, after = MIXED
    n = len(convention.axes)
    text = np.broadcast_to(np.arange(before, dtype=np.float64), (n, before))
    picture = grid_positions(convention.axes, image, offset=before)
    resume = before + max(image[1], image[2])
    return np.concatenate([text, picture, np.broadcast_to(resume + np.arange(after, dtype=np.float64),
                                                          (n, after))], axis=1)


def _long(convention: MropeConvention, top: int) -> np.ndarray:
    generator = np.random.default_rng(POSITION_SEED)
    drawn = generator.integers(0, top, size=(len(convention.axes), LONG_TOKENS - 2), endpoint=True)
    ends = np.array([[0], [top]]).repeat(len(convention.axes), axis=1).T
    return np.concatenate([ends, drawn], axis=1).astype(np.float64)


def _position_probes(convention: MropeConvention, head_dim: int, cap: int | None) -> list[MropeProbe]:
    n = len(convention.axes)
    top = LONGEST - 1 if cap is None else min(LONGEST, cap) - 1
    probes = [MropeProbe(f"text:{TEXT_LENGTH}", "table",
                         np.broadcast_to(np.arange(min(TEXT_LENGTH, top + 1), dtype=np.float64), (n, min(
                             TEXT_LENGTH, top + 1))).copy(), head_dim)]
    if convention.axes != ("p",):
        probes += [MropeProbe("grid:" + "x".join(map(str, grid)), "table", grid_positions(convention.axes, grid),
                              head_dim, grid) for grid in _grids(convention) if max(grid) <= top]
        mixed = _mixed(convention)
        if mixed.max() <= top:
            probes.append(MropeProbe("mixed", "table", mixed, head_dim))
    probes.append(MropeProbe("long", "table", _long(convention, top), head_dim))
    shift = RELATIVE_SHIFT if cap is None else min(RELATIVE_SHIFT, cap - TEXT_LENGTH)
    if shift > 0:
        base = np.random.default_rng(POSITION_SEED + 1).integers(0, TEXT_LENGTH, size=(n, RELATIVE_TOKENS))
        for axis, name in enumerate(convention.axes):
            moved = base.copy()
            moved[axis] += shift
            check_id = f"relative[axis={name}]"
            probes.append(MropeProbe(f"relative:{name}:base", "base", base.astype(np.float64), head_dim, axis=axis,
                                     check_id=check_id))
            probes.append(MropeProbe(f"relative:{name}", "relative", moved.astype(np.float64), head_dim, axis=axis,
                                     check_id=check_id))
    return probes


def class_token_grid(axes: tuple[str, ...], grid: tuple[int, int, int]) -> np.ndarray:
    """The positions of a ``square-grid`` call: the grid's patches at their indices plus 1, then a
    class token at the origin."""
    return np.concatenate([grid_positions(axes, grid, offset=1), np.zeros((len(axes), 1))], axis=1)


def _grid_probes(convention: MropeConvention, head_dim: int, signature: str) -> list[MropeProbe]:
    if signature == "square-grid":
        return [MropeProbe("grid:" + "x".join(map(str, grid)), "table", class_token_grid(convention.axes, grid),
                           head_dim, grid) for grid in SQUARE_GRIDS]
    grids = [grid for grid in _grids(convention) if signature != "grid-2d" or grid[0] == 1]
    probes = [MropeProbe("grid:" + "x".join(map(str, grid)), "table", grid_positions(convention.axes, grid),
                         head_dim, grid) for grid in grids]
    if signature in CROP_SIGNATURES:
        grid = CROP_GRID if "t" in convention.axes and signature == "grid-3d" else (1, *CROP_GRID[1:])
        probes.append(MropeProbe("crop:" + "x".join(map(str, grid)), "table",
                                 grid_positions(convention.axes, grid, CROP), head_dim, grid, CROP))
    return probes


def probes_for(convention: MropeConvention, signature: str, head_dim: int, max_positions=None) -> list[MropeProbe]:
    """Every call of a target of this signature, in order, the determinism repeat last."""
    if signature in GRID_SIGNATURES:
        probes = _grid_probes(convention, head_dim, signature)
    else:
        probes = _position_probes(convention, head_dim, max_positions)
    first = probes[0]
    probes.append(MropeProbe(first.slot, "repeat", first.positions, head_dim, first.grid, first.crop,
                             check_id="determinism", repeats=first.slot, rng="b"))
    return probes


def plan_ids(probes) -> list[str]:
    """The check ids of a run, in order: ``import`` first, ``aliasing`` and ``global-state`` last."""
    ids = ["import"]
    for probe in probes:
        ids += [check_id for check_id in probe.check_ids() if check_id not in ids]
    return [*ids, "aliasing", "global-state"]


# -- the mrope-positions API: position ids of a text and vision sequence -------------------------

# Each sequence: runs of (token type, text length or a (t, h, w) grid of merged patches).
SEQUENCES = {
    "text:8": ((0, 8),),
    "image:1x1x1": ((0, 2), (1, (1, 1, 1)), (0, 3)),
    "image:1x4x6": ((0, 2), (1, (1, 4, 6)), (0, 3)),
    "image:1x5x3": ((0, 1), (1, (1, 5, 3)), (0, 2)),
    "image:1x1x7": ((0, 1), (1, (1, 1, 7)), (0, 2)),
    "video:2x1x1": ((0, 1), (2, (2, 1, 1)), (0, 2)),
    "video:4x2x3": ((0, 2), (2, (4, 2, 3)), (0, 2)),
    "image-video": ((0, 1), (1, (1, 3, 2)), (0, 2), (2, (3, 2, 2)), (0, 1)),
    "two-images": ((0, 1), (1, (1, 2, 2)), (0, 1), (1, (1, 3, 3)), (0, 2)),
}


@dataclass(frozen=True, eq=False)
class PositionsProbe:
    """One call of a position-ids target: ``token_types`` ``(L,)`` (0 text, 1 image, 2 video) and
    ``grids`` ``(runs, 3)``, each vision run's ``(t, h, w)`` in patches before the ``m x m`` merge."""

    slot: str
    role: str
    token_types: np.ndarray
    grids: np.ndarray
    check_id: str | None = None
    repeats: str | None = None
    rng: str = "a"

    def check_ids(self) -> list[str]:
        return [f"call[{self.slot}]", f"formula[{self.slot}]"] if self.role == "table" else [self.check_id]

    def request(self, label: str | None = None) -> CallRequest:
        args = (ArrayArg(self.token_types, "int64", "torch", "mm_token_type_ids"),
                ArrayArg(self.grids, "int64", "torch", "grid_thw"))
        return CallRequest(label or self.slot, args, (3 * self.token_types.size,), allow_integer=True, rng=self.rng)


def sequence_probes(spatial_merge_size: int) -> list[PositionsProbe]:
    """Every position-ids call, the determinism repeat last."""
    probes = []
    for slot, runs in SEQUENCES.items():
        types, grids = [], []
        for kind, what in runs:
            if kind == 0:
                types += [0] * what
                continue
            t, h, w = what
            types += [kind] * (t * h * w)
            grids.append((t, h * spatial_merge_size, w * spatial_merge_size))
        probes.append(PositionsProbe(slot, "table", np.array(types, dtype=np.int64),
                                     np.array(grids, dtype=np.int64).reshape(-1, 3)))
    first = probes[0]
    probes.append(PositionsProbe(first.slot, "repeat", first.token_types, first.grids, "determinism", first.slot, "b"))
    return probes


# -- the mrope-apply API: q and k rotated -------------------------------------------------------

X_DTYPES = ("float32", "bfloat16", "float16")
X_SEED = 314159
APPLY_SIGNATURES_WITH_CACHE = ("q-k-cos-sin", "x-cos-sin")


@dataclass(frozen=True, eq=False)
class ApplyProbe:
    """One apply call: ``x`` ``(1, 2, L, head_dim)`` (q is head 0, k head 1), exact in ``x_dtype``,
    rotated at ``positions`` ``(len(axes), L)``; ``inputs`` the cos and sin ``(L, R)`` in x's dtype,
    for a signature that takes them."""

    slot: str
    role: str
    positions: np.ndarray
    x: np.ndarray
    x_dtype: str
    inputs: tuple = ()
    check_id: str | None = None
    repeats: str | None = None
    rng: str = "a"
    rotary_dim: int = 0

    def check_ids(self) -> list[str]:
        if self.role != "table":
            return [self.check_id]
        names = ["call", "finite", "formula", "norm"]
        if (self.positions == 0).all(axis=0).any():
            names.append("identity")
        if self.rotary_dim < self.x.shape[-1]:
            names.append("passthrough")
        return [f"{name}[{self.slot}]" for name in names]

    def request(self, label: str | None = None) -> CallRequest:
        args = (ArrayArg(self.x, self.x_dtype, "torch", "x"),
                ArrayArg(self.positions.astype(np.int64), "int64", "torch", "position_ids"), *self.inputs)
        return CallRequest(label or self.slot, args, (self.x.size,), max_items=2, rng=self.rng)


def apply_probes(convention: MropeConvention, signature: str, head_dim: int, max_positions=None) -> list:
    """The apply calls: text, one grid, the mixed sequence (float32 x) and the long positions in each
    x dtype; the cos and sin of the declared convention handed over where the signature takes them."""
    from posenc_spec.gate.calls import held_in

    from . import oracle

    chosen = {probe.slot: probe for probe in _position_probes(convention, head_dim, max_positions)
              if probe.role == "table"}
    calls = [(slot, "float32") for slot in ("text:64", "grid:1x6x10", "mixed") if slot in chosen]
    calls += [("long", dtype) for dtype in X_DTYPES]
    probes = []
    for index, (slot, dtype) in enumerate(calls):
        positions = chosen[slot].positions
        x = held_in(np.random.default_rng(X_SEED + index).standard_normal((1, 2, positions.shape[1], head_dim)),
                    dtype)
        inputs = ()
        if signature in APPLY_SIGNATURES_WITH_CACHE:
            cos, sin = oracle.cache(positions, convention)
            inputs = tuple(ArrayArg(held_in(part, dtype), dtype, "torch", name)
                           for name, part in (("cos", cos), ("sin", sin)))
        probes.append(ApplyProbe(f"{slot}:{dtype}", "table", positions, x, dtype, inputs,
                                 rotary_dim=convention.rotary_dim))
    first = probes[0]
    probes.append(ApplyProbe(first.slot, "repeat", first.positions, first.x, first.x_dtype, first.inputs,
                             "determinism", first.slot, "b", convention.rotary_dim))
    return probes
