"""The multi-axis rotary convention space: one small parameter set, and the presets of real code.

A multi-axis rotary embedding rotates ``P`` pairs of a head's features; each pair (a *slot*)
belongs to one axis (time ``t``, height ``h``, width ``w``, or the text position ``p``) and turns
by that axis's position times the slot's frequency. Every real form is this map of slots:

``axes``
    The axes in the order the target holds them (``("t", "h", "w")``; diffusers'
    ``get_2d_rotary_pos_embed`` holds ``("w", "h")``).
``sections``
    Pairs per axis, in that order (transformers' ``mrope_section``; diffusers' ``axes_dim`` is
    twice this). ``P = sum(sections)``, the rotated size ``R = 2 P``.
``frequencies``
    ``shared``: one RoPE over the whole head, ``f_j = theta ** (-2 j / R)`` for slot ``j``, the
    axis choosing only the position (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V). ``per-axis``: each
    axis a RoPE of its own size, ``f = theta_k ** (-2 m / (2 n_k))`` for its ``m``-th slot of
    ``n_k`` (diffusers' FLUX, HunyuanVideo, Wan, CogVideoX, ``get_2d/3d_rotary_pos_embed``,
    Qwen2-VL's vision tower). ``strided``: one RoPE over the whole head, its ``P`` frequencies
    dealt to the ``n`` axes in turn, each axis's slots one contiguous block: the ``m``-th slot of
    axis ``k`` has ``f = theta ** (-2 (n m + k) / R)`` (Pixtral's vision tower; equal sections).
``interleaved``
    Which slots an axis owns. False (contiguous): the first ``sections[0]`` slots the first
    axis, then the next axis. True (Qwen3-VL's interleaved M-RoPE): slot ``j`` with
    ``j % n == k`` (``k >= 1``) and ``j < n * sections[k]`` belongs to axis ``k``, every other
    slot to axis 0.
``theta``
    The base, one per axis (``per-axis`` may differ; ``shared`` has one).
``layout``
    Where a slot's two features are: ``half`` (``j`` and ``j + P``, transformers'
    ``rotate_half``; Qwen2-VL's vision tower) or ``interleaved`` (``2 j`` and ``2 j + 1``,
    diffusers' ``repeat_interleave_real=True`` and ``use_real_unbind_dim=-1``; GLM-4V's
    ``repeat_interleave`` and ``rotate_half_llm``).

Positions of a grid (``t x h x w`` tokens, row-major: ``t`` slowest, ``w`` fastest): along
each axis ``start + i (stop - start) / n`` for ``i < n``, ``start = 0`` and ``stop = n`` unless a
crop says otherwise (``np.linspace(start, stop, n, endpoint=False)``, HunyuanDiT's and
CogVideoX's crop of a base grid). Text tokens have every axis at the text position.

Presets (head size ``d``; sources in ``docs/families/mrope.md``): see :data:`PRESETS`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

AXIS_NAMES = ("t", "h", "w", "p")
FREQUENCIES = ("shared", "per-axis", "strided")
LAYOUTS = ("half", "interleaved")


@dataclass(frozen=True)
class MropeConvention:
    """One member of the family (see the module docstring)."""

    axes: tuple[str, ...] = ("t", "h", "w")
    sections: tuple[int, ...] = (16, 24, 24)
    frequencies: str = "shared"
    interleaved: bool = False
    theta: tuple[float, ...] = (10000.0,)
    layout: str = "half"

    def __post_init__(self):
        axes = tuple(self.axes)
        if not axes or len(set(axes)) != len(axes) or any(axis not in AXIS_NAMES for axis in axes):
            raise ValueError(f"axes must be distinct names among {', '.join(AXIS_NAMES)}, got {list(axes)}")
        sections = tuple(self.sections)
        if len(sections) != len(axes) or any(not isinstance(n, int) or isinstance(n, bool) or n < 1
                                             for n in sections):
            raise ValueError(f"sections must be one positive integer per axis ({len(axes)}), got {list(sections)}")
        if self.frequencies not in FREQUENCIES:
            raise ValueError(f"frequencies must be one of {', '.join(FREQUENCIES)}, got {self.frequencies!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        theta = tuple(float(value) for value in (self.theta if isinstance(self.theta, (tuple, list))
                                                 else (self.theta,)))
        if len(theta) == 1:
            theta = theta * len(axes)
        if len(theta) != len(axes) or any(not math.isfinite(value) or value <= 1 for value in theta):
            raise ValueError(f"theta must be one number above 1, or one per axis, got {list(self.theta)}")
        if self.frequencies != "per-axis" and len(set(theta)) > 1:
            raise ValueError(f"{self.frequencies} frequencies take one theta: give per-axis frequencies for a theta "
                             "per axis")
        if self.frequencies == "strided" and len(set(sections)) > 1:
            raise ValueError(f"strided frequencies deal one RoPE's slots to the axes in turn: equal sections, got "
                             f"{list(sections)}")
        if self.interleaved:
            if self.frequencies != "shared":
                raise ValueError("interleaved sections are Qwen3-VL's form of shared frequencies")
            n, pairs = len(axes), sum(sections)
            if any(k + n * (sections[k] - 1) >= pairs for k in range(1, n)):
                raise ValueError(f"interleaved sections {list(sections)}: an axis's every {n}th slot runs past the "
                                 f"{pairs} slots")
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "sections", sections)
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "interleaved", bool(self.interleaved))

    @property
    def pairs(self) -> int:
        return sum(self.sections)

    @property
    def rotary_dim(self) -> int:
        return 2 * self.pairs

    def slot_axes(self) -> np.ndarray:
        """The axis (its index in :attr:`axes`) of each slot, ``(P,)``."""
        if not self.interleaved:
            return np.repeat(np.arange(len(self.axes)), self.sections)
        n, owner = len(self.axes), np.zeros(self.pairs, dtype=np.int64)
        for k in range(1, n):
            owner[k:n * self.sections[k]:n] = k
        return owner

    def head_slots(self) -> np.ndarray:
        """Each slot's index in the one RoPE over the head (shared and strided frequencies), ``(P,)``:
        ``j`` (shared) or ``n m + k`` (strided, the ``m``-th slot of axis ``k``)."""
        if self.frequencies == "strided":
            n = len(self.axes)
            return np.concatenate([n * np.arange(count) + k for k, count in enumerate(self.sections)])
        return np.arange(self.pairs)

    def slot_exponents(self) -> np.ndarray:
        """Each slot's ``e`` in ``f = theta ** (-e)``, ``(P,)``: ``2 j / R`` for its index ``j`` in the
        head's RoPE (shared, strided) or ``m / n_k`` (per-axis, the ``m``-th of the axis's ``n_k`` slots)."""
        if self.frequencies != "per-axis":
            return self.head_slots() * 2.0 / self.rotary_dim
        return np.concatenate([np.arange(n) * 2.0 / (2 * n) for n in self.sections])

    def slot_theta(self) -> np.ndarray:
        """Each slot's base, ``(P,)``."""
        return np.asarray(self.theta, dtype=np.float64)[self.slot_axes()]

    def frequencies_float64(self) -> np.ndarray:
        return self.slot_theta() ** -self.slot_exponents()

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The two features ``(a, b)`` of each slot, ``(P,)`` each."""
        j = np.arange(self.pairs)
        return (j, j + self.pairs) if self.layout == "half" else (2 * j, 2 * j + 1)

    def name(self) -> str:
        """The preset this is, or its fields in short."""
        for name, convention in PRESETS.items():
            if convention == self:
                return name
        return describe_fields(self)

    def as_dict(self) -> dict:
        return {"axes": list(self.axes), "mrope_section": list(self.sections), "axes_frequencies": self.frequencies,
                "mrope_interleaved": self.interleaved, "axes_theta": list(self.theta), "mrope_layout": self.layout}


def describe_fields(convention: MropeConvention) -> str:
    thetas = sorted(set(convention.theta))
    theta = f"{thetas[0]:g}" if len(thetas) == 1 else "/".join(f"{value:g}" for value in convention.theta)
    order = "interleaved" if convention.interleaved else "contiguous"
    return (f"{''.join(convention.axes)} {'/'.join(map(str, convention.sections))} {convention.frequencies} "
            f"{order}, theta {theta}, {convention.layout} pairs")


def wan_sections(head_dim: int) -> tuple[int, int, int]:
    """Wan's split of a head of ``head_dim``: ``h = w = 2 (d // 6)`` features, ``t`` the rest (pairs)."""
    spatial = 2 * (head_dim // 6)
    return ((head_dim - 2 * spatial) // 2, spatial // 2, spatial // 2)


def cogvideox_sections(head_dim: int) -> tuple[int, int, int]:
    """CogVideoX's ``get_3d_rotary_pos_embed``: ``d // 4`` features for t, ``d // 8 * 3`` each for h and w."""
    return (head_dim // 4 // 2, head_dim // 8 * 3 // 2, head_dim // 8 * 3 // 2)


def cosmos_sections(head_dim: int) -> tuple[int, int, int]:
    """Cosmos' split of a head of ``head_dim``: ``h = w = d // 6 * 2`` features, ``t`` the rest (pairs)."""
    spatial = head_dim // 6 * 2
    return ((head_dim - 2 * spatial) // 2, spatial // 2, spatial // 2)


# Cosmos' rope_scale (t, h, w) of its released transformers (diffusers' CosmosTransformer3DModel default).
COSMOS_ROPE_SCALE = (2.0, 1.0, 1.0)


def cosmos_theta(head_dim: int) -> tuple[float, ...]:
    """Cosmos' base per axis: ``10000 s ** (n / (n - 1))`` for an axis of ``n`` slots scaled by ``s``
    (its NTK factor ``rope_scale ** (dim / (dim - 2))``)."""
    return tuple(10000.0 * scale ** (pairs / (pairs - 1)) if pairs > 1 else 10000.0
                 for scale, pairs in zip(COSMOS_ROPE_SCALE, cosmos_sections(head_dim), strict=True))


def _qwen(sections, theta, interleaved=False, layout="half") -> MropeConvention:
    return MropeConvention(("t", "h", "w"), sections, "shared", interleaved, (theta,), layout)


def _axis_wise(axes, sections, theta=10000.0, layout="interleaved") -> MropeConvention:
    return MropeConvention(axes, sections, "per-axis", False, (theta,), layout)


# The presets, each at the head size of its released models (a declared attention_head_dim
# rescales the ones whose split follows the head size: SECTION_RULES).
PRESETS = {
    "qwen2-vl": _qwen((16, 24, 24), 1e6),
    "qwen2.5-vl": _qwen((16, 24, 24), 1e6),
    "qwen3-vl": _qwen((24, 20, 20), 5e6, interleaved=True),
    "glm-4v": _qwen((8, 12, 12), 10000.0, layout="interleaved"),
    "flux": _axis_wise(("t", "h", "w"), (8, 28, 28)),
    "hunyuan-video": _axis_wise(("t", "h", "w"), (8, 28, 28), theta=256.0),
    "wan": _axis_wise(("t", "h", "w"), wan_sections(128)),
    "cogvideox": _axis_wise(("t", "h", "w"), cogvideox_sections(64)),
    "hunyuan-dit": _axis_wise(("w", "h"), (22, 22)),
    "qwen2-vl-vision": _axis_wise(("h", "w"), (10, 10), layout="half"),
    "rope-1d": _axis_wise(("p",), (32,)),
    "pixtral-vision": MropeConvention(("h", "w"), (16, 16), "strided", False, (10000.0,), "half"),
    "llama4-vision": _axis_wise(("w", "h"), (16, 16)),
    "cosmos": MropeConvention(("t", "h", "w"), cosmos_sections(128), "per-axis", False, cosmos_theta(128), "half"),
    "lumina2": _axis_wise(("t", "h", "w"), (16, 16, 16)),
}
DEFAULT_PRESET = "qwen2-vl"
# The presets whose split follows the head size, each as a function of it.
SECTION_RULES = {
    "wan": wan_sections,
    "cogvideox": cogvideox_sections,
    "hunyuan-dit": lambda d: (d // 4, d // 4),
    "qwen2-vl-vision": lambda d: (d // 4, d // 4),
    "rope-1d": lambda d: (d // 2,),
    "pixtral-vision": lambda d: (d // 4, d // 4),
    "llama4-vision": lambda d: (d // 4, d // 4),
    "cosmos": cosmos_sections,
}
# The presets whose base per axis follows the head size.
THETA_RULES = {"cosmos": cosmos_theta}


def at_head_dim(preset: str, head_dim: int) -> MropeConvention:
    """``preset`` at a head of ``head_dim`` features (its own split rule; the others keep theirs)."""
    fields = {}
    if preset in SECTION_RULES:
        fields["sections"] = SECTION_RULES[preset](head_dim)
    if preset in THETA_RULES:
        fields["theta"] = THETA_RULES[preset](head_dim)
    return dataclasses.replace(PRESETS[preset], **fields) if fields else PRESETS[preset]


def grid_positions(axes: tuple[str, ...], grid: tuple[int, int, int], crop=None, offset: int = 0) -> np.ndarray:
    """The float64 positions ``(len(axes), t h w)`` of a grid's tokens, row-major (see the module
    docstring): ``crop`` maps an axis name to its ``(start, stop)``; ``offset`` is added to every
    axis (the text position an image starts at)."""
    sizes = dict(zip("thw", grid, strict=True))
    along = {}
    for axis in "thw":
        start, stop = (crop or {}).get(axis, (0, sizes[axis]))
        along[axis] = start + np.arange(sizes[axis], dtype=np.float64) * ((stop - start) / sizes[axis])
    mesh = dict(zip("thw", np.meshgrid(along["t"], along["h"], along["w"], indexing="ij"), strict=True))
    return np.stack([mesh[axis].reshape(-1) + offset for axis in axes])
