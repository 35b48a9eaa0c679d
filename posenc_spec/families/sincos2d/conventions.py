"""2-D sinusoidal position embeddings (ViT, MAE, DiT, PixArt, SD3, DETR), as declared keys.

A grid of ``H`` rows and ``W`` columns gets an embedding of width ``D`` (a multiple of 4).
Each axis holds a 1-D member of the sinusoidal family (:class:`posenc_spec.families.sinusoidal.conventions.Convention`)
of width ``D/2``, read at that axis's positions::

    omega_k = base_axis ** (-k / (D/4 - s))        k = 0 .. D/4 - 1, s = freq_shift
    theta   = p_axis(i) * omega_k                  i = the row index (row axis) or column index
    values  = sin(theta), cos(theta)

The keys (every one has a default; the presets below name the common codebases)::

    first_axis     col: the column coordinate fills the first half (MAE's meshgrid(grid_w, grid_h),
                   diffusers, big_vision, vit-pytorch) | row (DETR's cat(pos_y, pos_x), transformers 5)
    grouping       by-axis: [A | B], each half a 1-D table | by-function: [sin A | sin B | cos A | cos B]
    pairing        concat: [sin ... | cos ...] within a half | interleaved: sin0 cos0 sin1 cos1 ... (DETR)
    first_function sin: each pair's sine first (every preset) | cos: its cosine first, [cos ... | sin ...]
                   or cos0 sin0 ... (diffusers' flip_sin_to_cos=True); by-function: [cos A | cos B | sin A | sin B]
    freq_shift     0: k / (D/4) | 1: k / (D/4 - 1), the lowest frequency exactly 1/base (big_vision)
    base           both axes (10000; 20 in DAB-DETR and DINO); row_base, col_base: one axis each
    position       index | relative | crop | normalized, with the parameters below
    extra_tokens   rows of zeros before the grid's tokens (MAE's cls_token: 1)
    token_order    row-major (row outer, as a conv's flatten(2)) | column-major (column outer)
    output_layout  tokens (N, D) | channels-first (D, H, W) | grid (H, W, D); leading axes of size 1 allowed

Position transforms, for an axis of length ``L`` and index ``i = 0 .. L-1``::

    index        p = scale * (i + offset)                                 offset 0, scale 1
    relative     p = i * base_size / (L * interpolation_scale)            diffusers: base_size 16, scale 1
    crop         p = (i + (M - L) // 2) * base_size / (M * interpolation_scale)
                 SD3's centred crop of an M x M table (M = max_size, required; L <= M)
    normalized   p = scale * (i + 1 + offset) / (L + eps)                 DETR: offset 0 (Deformable DETR
                                                                          -0.5), eps 1e-6, scale 2 pi

Each axis uses its own length: a non-square grid normalised by the other axis's length is
another table. Everything that needs the layout asks :meth:`Sincos2d.columns`; nothing else
in the family spells out where a column's value comes from.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from posenc_spec.families.sinusoidal.conventions import Convention, UndefinedWidthError

AXES = ("row", "col")
FUNCTIONS = ("sin", "cos")
GROUPINGS = ("by-axis", "by-function")
PAIRINGS = ("concat", "interleaved")
POSITIONS = ("index", "relative", "crop", "normalized")
TOKEN_ORDERS = ("row-major", "column-major")
OUTPUT_LAYOUTS = ("tokens", "channels-first", "grid")
# Each transform's parameters and their defaults (None: required).
POSITION_PARAMETERS: dict[str, dict[str, float | int | None]] = {
    "index": {"offset": 0.0, "scale": 1.0},
    "relative": {"base_size": 16.0, "interpolation_scale": 1.0},
    "crop": {"base_size": 16.0, "interpolation_scale": 1.0, "max_size": None},
    "normalized": {"offset": 0.0, "eps": 1e-6, "scale": 2 * math.pi},
}
PARAMETER_NAMES = ("offset", "scale", "base_size", "interpolation_scale", "max_size", "eps")
MAX_GRID = 2**12  # per axis: 4096 x 4096 tokens is past any patch grid a model uses
MAX_WIDTH = 2**16
MAX_EXTRA_TOKENS = 64


def _choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _real(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _int(name: str, value, minimum: int, maximum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an int from {minimum} to {maximum}, got {value}")
    return int(value)


@dataclass(frozen=True)
class Columns2d:
    """Where each column of a width-``D`` embedding comes from: ``axis[j]`` 0 (row) or 1
    (column), ``pair[j]`` the frequency index k, ``is_sin[j]``, and ``half_column[j]`` the
    column of that axis's 1-D table (width ``D/2``, in the declared pairing) that holds it."""

    axis: np.ndarray
    pair: np.ndarray
    is_sin: np.ndarray
    half_column: np.ndarray

    def of_axis(self, axis: int) -> np.ndarray:
        """The columns holding axis ``axis`` (0 row, 1 column), ordered by their 1-D column."""
        where = np.flatnonzero(self.axis == axis)
        return where[np.argsort(self.half_column[where])]


@dataclass(frozen=True)
class Sincos2d:
    """One member of the family (see the module docstring); validated on construction.

    The position parameters the transform does not use are None; those it uses and were not
    given take the transform's defaults (:data:`POSITION_PARAMETERS`)."""

    first_axis: str = "col"
    grouping: str = "by-axis"
    pairing: str = "concat"
    first_function: str = "sin"
    freq_shift: int = 0
    row_base: float = 10000.0
    col_base: float = 10000.0
    position: str = "index"
    offset: float | None = None
    scale: float | None = None
    base_size: float | None = None
    interpolation_scale: float | None = None
    max_size: int | None = None
    eps: float | None = None
    extra_tokens: int = 0
    token_order: str = "row-major"
    output_layout: str = "tokens"

    def __post_init__(self):
        _choice("first_axis", self.first_axis, AXES)
        _choice("grouping", self.grouping, GROUPINGS)
        _choice("pairing", self.pairing, PAIRINGS)
        _choice("first_function", self.first_function, FUNCTIONS)
        _choice("position", self.position, POSITIONS)
        _choice("token_order", self.token_order, TOKEN_ORDERS)
        _choice("output_layout", self.output_layout, OUTPUT_LAYOUTS)
        if isinstance(self.freq_shift, bool) or self.freq_shift not in (0, 1):
            raise ValueError(f"freq_shift must be 0 or 1, got {self.freq_shift!r}")
        for name in ("row_base", "col_base"):
            value = _real(name, getattr(self, name))
            if not value > 1:
                raise ValueError(f"{name} must be greater than 1, got {value!r}")
            object.__setattr__(self, name, value)
        if self.grouping == "by-function" and self.pairing != "concat":
            raise ValueError("grouping 'by-function' takes pairing 'concat' ([sin A | sin B | cos A | cos B]), "
                             f"got pairing {self.pairing!r}")
        object.__setattr__(self, "extra_tokens", _int("extra_tokens", self.extra_tokens, 0, MAX_EXTRA_TOKENS))
        if self.extra_tokens and self.output_layout != "tokens":
            raise ValueError(f"extra_tokens needs output_layout 'tokens' (a {self.output_layout} table has no rows "
                             f"to put them in), got {self.extra_tokens}")
        self._resolve_position()

    def _resolve_position(self):
        used = POSITION_PARAMETERS[self.position]
        for name in PARAMETER_NAMES:
            value = getattr(self, name)
            if name not in used:
                if value is not None:
                    raise ValueError(f"{name} is not a parameter of position {self.position!r} "
                                     f"(it takes {', '.join(used)})")
                continue
            if value is None:
                if used[name] is None:
                    raise ValueError(f"position {self.position!r} needs {name}")
                value = used[name]
            if name == "max_size":
                value = _int(name, value, 1, MAX_GRID)
            else:
                value = _real(name, value)
                if name in ("base_size", "interpolation_scale") and not value > 0:
                    raise ValueError(f"{name} must be greater than 0, got {value!r}")
                if name == "scale" and value == 0:
                    raise ValueError("scale must not be 0")
                if name == "eps" and value < 0:
                    raise ValueError(f"eps must be >= 0, got {value!r}")
            object.__setattr__(self, name, value)

    # -- access ---------------------------------------------------------------

    def replace(self, **changes) -> Sincos2d:
        """A copy with ``changes``; changing ``position`` drops the old transform's parameters
        unless they are given again."""
        if "position" in changes and changes["position"] != self.position:
            kept = {name: None for name in PARAMETER_NAMES if name not in changes}
            changes = {**kept, **changes}
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        """The fields by name, without the position parameters the transform does not use."""
        return {name: value for name, value in dataclasses.asdict(self).items()
                if name not in PARAMETER_NAMES or value is not None}

    def position_parameters(self) -> dict:
        return {name: getattr(self, name) for name in POSITION_PARAMETERS[self.position]}

    def name(self) -> str:
        """The preset's name when this convention is one, else its fields in short form."""
        for preset_name, preset in PRESETS.items():
            if preset == self:
                return preset_name
        parameters = ",".join(f"{name}={value:g}" for name, value in self.position_parameters().items())
        bases = f"base{self.row_base:g}" if self.row_base == self.col_base else \
            f"row-base{self.row_base:g}/col-base{self.col_base:g}"
        functions = "/cos-first" if self.first_function == "cos" else ""
        return (f"{self.first_axis}-first/{self.grouping}/{self.pairing}{functions}/shift{self.freq_shift}/{bases}"
                f"/{self.position}({parameters})/extra{self.extra_tokens}/{self.token_order}/{self.output_layout}")

    def axis_base(self, axis: int) -> float:
        return (self.row_base, self.col_base)[axis]

    def axis_convention(self, axis: int) -> Convention:
        """The 1-D member each half holds (positions apart): width ``D/2`` in the declared pairing,
        its declared function first."""
        return Convention(layout=self.pairing, first=self.first_function, freq_shift=self.freq_shift,
                          base=self.axis_base(axis))

    def is_sine(self, columns) -> np.ndarray:
        """Whether each column of a half (``axis_convention(...).columns(D/2)``) holds a sine:
        its first function's columns under sin first, the others under cos first."""
        return columns.is_first == (self.first_function == "sin")

    @property
    def first(self) -> int:
        """The axis (0 row, 1 column) whose half comes first."""
        return AXES.index(self.first_axis)

    # -- sizes ----------------------------------------------------------------

    def check_width(self, width) -> int:
        """A width the convention has values for: a multiple of 4, at least 4 (8 under
        freq_shift 1, where ``k / (D/4 - 1)`` is 0/0 at D = 4). Raises
        :class:`UndefinedWidthError` for a width with no value."""
        width = _int("width", width, 1, MAX_WIDTH)
        if width % 4:
            raise UndefinedWidthError(f"width {width} is not a multiple of 4: each axis takes D/2 columns of "
                                      "D/4 sin/cos pairs")
        try:
            self.axis_convention(0).exponent_step(width // 2)
        except UndefinedWidthError:
            raise UndefinedWidthError(f"width {width} under freq_shift=1 has one frequency per axis and "
                                      "e_0 = 0/0: the formula has no value (width must be at least 8)") from None
        return width

    def check_grid(self, height, width) -> tuple[int, int]:
        """A grid of at least 1 x 1 rows and columns (at most ``max_size`` each under ``crop``)."""
        limit = self.max_size if self.position == "crop" else MAX_GRID
        return (_int("height", height, 1, limit), _int("grid width", width, 1, limit))

    def frequencies(self, width: int, axis: int) -> np.ndarray:
        """``omega_k`` of one axis, float64."""
        return self.axis_convention(axis).frequencies(self.check_width(width) // 2)

    # -- positions ------------------------------------------------------------

    def positions(self, length: int) -> np.ndarray:
        """``p(i)`` for ``i = 0 .. length-1`` of an axis of that length, float64 (each a few
        float64 roundings from the exact value: :func:`~.tolerance.position_roundings`)."""
        i = np.arange(length, dtype=np.float64)
        if self.position == "index":
            return self.scale * (i + self.offset)
        if self.position == "relative":
            return i * self.base_size / (length * self.interpolation_scale)
        if self.position == "crop":
            return (i + (self.max_size - length) // 2) * self.base_size / (self.max_size * self.interpolation_scale)
        return self.scale * (i + 1 + self.offset) / (length + self.eps)

    def exact_positions(self, length: int, mpmath) -> list:
        """``p(i)`` as mpmath numbers at the working precision, from the parameters' exact binary values."""
        mpf = mpmath.mpf
        if self.position == "index":
            return [mpf(self.scale) * (i + mpf(self.offset)) for i in range(length)]
        if self.position == "relative":
            return [i * mpf(self.base_size) / (length * mpf(self.interpolation_scale)) for i in range(length)]
        if self.position == "crop":
            top = (self.max_size - length) // 2
            return [(i + top) * mpf(self.base_size) / (self.max_size * mpf(self.interpolation_scale))
                    for i in range(length)]
        return [mpf(self.scale) * (i + 1 + mpf(self.offset)) / (length + mpf(self.eps)) for i in range(length)]

    # -- layout ---------------------------------------------------------------

    def columns(self, width: int) -> Columns2d:
        """The axis, frequency and function of every column (see :class:`Columns2d`)."""
        width = self.check_width(width)
        half = width // 2
        one_d = self.axis_convention(0).columns(half)  # the same layout for both axes
        order = (self.first, 1 - self.first)
        if self.grouping == "by-axis":
            axis = np.repeat(order, half)
            half_column = np.tile(np.arange(half), 2)
        else:  # [sin A | sin B | cos A | cos B]: the concat 1-D table's halves, axis by axis
            quarter = half // 2
            axis = np.tile(np.repeat(order, quarter), 2)
            half_column = np.concatenate([np.tile(np.arange(quarter), 2), np.tile(np.arange(quarter, half), 2)])
        return Columns2d(axis=axis, pair=one_d.pair[half_column], is_sin=self.is_sine(one_d)[half_column],
                         half_column=half_column)

    def token_cells(self, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The (row, column) of each grid token in the declared order (extra tokens excluded)."""
        rows, cols = np.indices((height, width))
        if self.token_order == "column-major":
            rows, cols = rows.T, cols.T
        return rows.ravel(), cols.ravel()

    def shape(self, height: int, width: int, dim: int) -> tuple[int, ...]:
        """The declared output shape (without leading axes of size 1)."""
        if self.output_layout == "tokens":
            return (self.extra_tokens + height * width, dim)
        if self.output_layout == "channels-first":
            return (dim, height, width)
        return (height, width, dim)

    def arrange(self, grid: np.ndarray) -> np.ndarray:
        """An ``(H, W, D)`` grid in the declared layout: tokens in the declared order after the
        extra tokens' zero rows, or channels first, or as it is."""
        height, width, dim = grid.shape
        if self.output_layout == "channels-first":
            return np.ascontiguousarray(grid.transpose(2, 0, 1))
        if self.output_layout == "grid":
            return grid
        rows, cols = self.token_cells(height, width)
        return np.concatenate([np.zeros((self.extra_tokens, dim), grid.dtype), grid[rows, cols]])

    def ungrid(self, table: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """``(grid, extra)``: a table in the declared layout (leading axes of size 1 allowed)
        back as its ``(H, W, D)`` grid and its extra-token rows. Raises ValueError on a shape
        other than the declared one."""
        array = np.asarray(table)
        if array.ndim < 2:
            raise ValueError(f"shape {array.shape} is not the declared {self.output_layout} shape "
                             f"for a {height}x{width} grid")
        dim = array.shape[-1] if self.output_layout != "channels-first" else (array.shape[-3] if array.ndim >= 3
                                                                               else -1)
        expected = self.shape(height, width, dim)
        while array.ndim > len(expected) and array.shape[0] == 1:
            array = array[0]
        if array.shape != expected or dim < 1:
            raise ValueError(f"shape {tuple(np.shape(table))} is not the declared {self.output_layout} shape "
                             f"{expected} for a {height}x{width} grid")
        if self.output_layout == "channels-first":
            return array.transpose(1, 2, 0), array[:0].reshape(0, dim)
        if self.output_layout == "grid":
            return array, array[:0].reshape(0, dim)
        rows, cols = self.token_cells(height, width)
        grid = np.empty((height, width, dim), array.dtype)
        grid[rows, cols] = array[self.extra_tokens:]
        return grid, array[: self.extra_tokens]


PRESETS: dict[str, Sincos2d] = {
    # facebookresearch/mae util/pos_embed.py: meshgrid(grid_w, grid_h), [sin|cos](w) then [sin|cos](h)
    "mae": Sincos2d(),
    # the same with cls_token=True, as models_mae.py and transformers' ViTMAE hold it
    "mae-cls": Sincos2d(extra_tokens=1),
    # transformers 5's build_2d_sinusoidal_position_embedding (ViTMAE before its half swap, RT-DETR)
    "transformers": Sincos2d(first_axis="row"),
    # diffusers.models.embeddings.get_2d_sincos_pos_embed: positions stretched to base_size per axis
    "diffusers": Sincos2d(position="relative", base_size=16.0, interpolation_scale=1.0),
    # diffusers' PatchEmbed(pos_embed_max_size=192) for SD3: sample 128 / patch 2 = base 64, a centred crop
    "sd3": Sincos2d(position="crop", base_size=64.0, interpolation_scale=1.0, max_size=192),
    # DETR's PositionEmbeddingSine(normalize=True): cat(pos_y, pos_x), interleaved, (B, D, H, W)
    "detr": Sincos2d(first_axis="row", pairing="interleaved", position="normalized", output_layout="channels-first"),
    "deformable-detr": Sincos2d(first_axis="row", pairing="interleaved", position="normalized", offset=-0.5,
                                output_layout="channels-first"),
    # DAB-DETR and DINO: temperatures 20 for both axes (temperature_height, temperature_width)
    "dab-detr": Sincos2d(first_axis="row", pairing="interleaved", row_base=20.0, col_base=20.0,
                         position="normalized", output_layout="channels-first"),
    # big_vision's posemb_sincos_2d and vit-pytorch's simple_vit: omega = arange(D/4) / (D/4 - 1)
    "big-vision": Sincos2d(freq_shift=1),
    # MoCo v3's build_2d_sincos_position_embedding: meshgrid(grid_w, grid_h) 'ij', so column-major, and a cls row
    "moco-v3": Sincos2d(token_order="column-major", extra_tokens=1),
}


def get_convention(name: str | Sincos2d = "mae", **overrides) -> Sincos2d:
    """A preset by name (or a convention), with fields replaced by ``overrides`` (None values
    ignored). ``base`` sets both axes' bases."""
    if isinstance(name, Sincos2d):
        convention = name
    elif name in PRESETS:
        convention = PRESETS[name]
    else:
        raise ValueError(f"unknown 2-D sincos convention {name!r}; known: {', '.join(PRESETS)}")
    changes = {key: value for key, value in overrides.items() if value is not None}
    if "base" in changes:
        base = changes.pop("base")
        changes = {"row_base": base, "col_base": base, **changes}
    known = {field.name for field in dataclasses.fields(Sincos2d)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise ValueError(f"unknown 2-D sincos key(s) {', '.join(unknown)}; known: base, {', '.join(sorted(known))}")
    return convention.replace(**changes) if changes else convention
