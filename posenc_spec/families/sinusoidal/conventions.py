"""The family of sinusoidal encodings, and its named members.

For embedding width ``d`` and pairs ``k = 0 .. h-1`` with ``h = floor(d/2)``::

    e_k     = k / (h - s)                 s = freq_shift, 0 or 1
    omega_k = base ** (-e_k)
    theta   = scale * (p + offset) * omega_k

``s = 0`` is the paper's ``10000^(2i/d_model)``; ``s = 1`` makes the lowest frequency
exactly ``1/base`` (tensor2tensor). ``layout`` says where ``first(theta_k)`` and the other
function go: interleaved (columns ``2k``, ``2k+1``) or concat (``[first... | second...]``).
Odd widths follow ``odd``: ``error``, ``zero-pad`` (h pairs and a zero last column) or
``ceil`` (``ceil(d/2)`` columns of ``first``, ``floor(d/2)`` of the other, ``e_k = 2k/d``).

Everything that needs the layout asks :meth:`Convention.columns`; nothing else in the
project spells out where a column's value comes from.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

LAYOUTS = ("interleaved", "concat")
FUNCTIONS = ("sin", "cos")
ODD_BEHAVIOURS = ("error", "zero-pad", "ceil")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


class UndefinedWidthError(ValueError):
    """The convention has no value at this width (odd under ``odd='error'``, or d = 2 at shift 1)."""


@dataclass(frozen=True)
class Columns:
    """Where each column of a table comes from.

    ``pair[j]``: the frequency index k of column j (-1 for a zero column);
    ``is_first[j]``: whether column j holds ``first(theta_k)`` rather than the other function;
    ``partner[j]``: the column with the other function of the same pair, or -1 (a zero
    column, or the unpaired last ``first`` column of an odd width under ``ceil``).
    """

    pair: np.ndarray
    is_first: np.ndarray
    partner: np.ndarray

    @property
    def is_zero(self) -> np.ndarray:
        return self.pair < 0


@dataclass(frozen=True)
class Convention:
    """One member of the family. Fields are validated on construction."""

    layout: str = "interleaved"
    first: str = "sin"
    freq_shift: int = 0
    base: float = 10000.0
    offset: float = 0
    scale: float = 1.0
    odd: str = "error"

    def __post_init__(self):
        for name in ("base", "offset", "scale"):  # a NumPy scalar as the Python number it holds
            value = getattr(self, name)
            if isinstance(value, (np.integer, np.floating)):
                object.__setattr__(self, name, value.item())
        _check_choice("layout", self.layout, LAYOUTS)
        _check_choice("first", self.first, FUNCTIONS)
        _check_choice("odd", self.odd, ODD_BEHAVIOURS)
        if self.freq_shift not in (0, 1) or isinstance(self.freq_shift, bool):
            raise ValueError(f"freq_shift must be 0 or 1, got {self.freq_shift!r}")
        for name in ("base", "offset", "scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a real number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not self.base > 1:
            raise ValueError(f"base must be greater than 1, got {self.base!r}")
        if self.scale == 0:
            raise ValueError("scale must not be 0")
        if self.odd == "ceil" and self.freq_shift != 0:
            raise ValueError("odd='ceil' is defined for freq_shift=0 only (e_k = 2k/d with the true d)")

    @property
    def second(self) -> str:
        return "cos" if self.first == "sin" else "sin"

    def replace(self, **changes) -> Convention:
        return dataclasses.replace(self, **changes)

    def for_width(self, width: int) -> Convention:
        """This convention for a table of ``width``: ``odd`` decides odd widths only, so
        conventions that differ in it alone share their even tables (``odd = "error"``'s)."""
        return self if width % 2 else self.replace(odd="error")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def name(self) -> str:
        """The preset's name when this convention is one, else its fields in short form."""
        for preset_name, preset in PRESETS.items():
            if preset == self:
                return preset_name
        return (
            f"{self.layout}/{self.first}-first/shift{self.freq_shift}/base{self.base:g}"
            f"/offset{self.offset:g}/scale{self.scale:g}/odd-{self.odd}"
        )

    # -- the formula's pieces -------------------------------------------------

    def num_frequencies(self, width: int) -> int:
        """How many distinct frequencies a table of this width holds."""
        check_width(width)
        if width % 2 and self.odd == "ceil":
            return (width + 1) // 2
        return width // 2

    def exponent_step(self, width: int, degenerate_limit: bool = False) -> tuple[int, int]:
        """``e_k = k * numerator / denominator`` as exact integers ``(numerator, denominator)``:
        ``(1, h - s)``, or ``(2, d)`` for an odd width under ``ceil``.

        At d = 2 (or 3 zero-padded) under shift 1, ``k/(h-1)`` is 0/0: the formula has no
        value and this raises :class:`UndefinedWidthError`, unless ``degenerate_limit``
        asks for tensor2tensor's guard (``max(h - 1, 1)``), which gives ``e_0 = 0``, omega 1.
        """
        self.check_odd(width)
        if width % 2 and self.odd == "ceil":
            return 2, width
        denominator = width // 2 - self.freq_shift
        if denominator <= 0:
            if not degenerate_limit:
                raise UndefinedWidthError(
                    f"width {width} under freq_shift=1 has one frequency and e_0 = 0/0: "
                    f"the formula has no value (width must be at least {2 * (1 + self.freq_shift)})"
                )
            denominator = 1
        return 1, denominator

    def exponents(self, width: int, degenerate_limit: bool = False) -> np.ndarray:
        """``e_k`` for every frequency, float64 (see :meth:`exponent_step`)."""
        numerator, denominator = self.exponent_step(width, degenerate_limit)
        return np.arange(self.num_frequencies(width)) * numerator / denominator

    def frequencies(self, width: int, degenerate_limit: bool = False) -> np.ndarray:
        """``omega_k = base ** -e_k``, float64, from 1 down to the lowest frequency."""
        return self.base ** -self.exponents(width, degenerate_limit)

    def check_odd(self, width: int) -> None:
        check_width(width)
        if width % 2 and self.odd == "error":
            raise UndefinedWidthError(f"width {width} is odd and the convention says odd='error'")

    def columns(self, width: int) -> Columns:
        """The frequency index and function of every column (see :class:`Columns`)."""
        self.check_odd(width)
        n_first = self.num_frequencies(width)
        n_second = width // 2
        if self.layout == "concat":
            pair = np.concatenate([np.arange(n_first), np.arange(n_second)])
            is_first = np.arange(n_first + n_second) < n_first
            first_column, second_column = np.arange(n_first), n_first + np.arange(n_second)
        else:
            pair = np.arange(n_first + n_second) // 2
            is_first = np.arange(n_first + n_second) % 2 == 0
            first_column, second_column = 2 * np.arange(n_first), 2 * np.arange(n_second) + 1
        if pair.size < width:  # zero-pad: one all-zero last column
            pair = np.append(pair, -1)
            is_first = np.append(is_first, False)
        partner = np.full(width, -1)
        partner[first_column[:n_second]] = second_column
        partner[second_column] = first_column[:n_second]
        return Columns(pair=pair, is_first=is_first, partner=partner)

    def positions(self, positions) -> np.ndarray:
        """Row positions as float64: ``0 .. n-1`` for an int n, else the given 1-D values."""
        if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
            check_length(positions)
            return np.arange(positions, dtype=np.float64)
        values = np.asarray(positions, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"positions must be an int or a 1-D array, got shape {values.shape}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"positions must be finite, got {values[~np.isfinite(values)][:3]}")
        return values


PRESETS: dict[str, Convention] = {
    "vaswani": Convention("interleaved", "sin", 0),
    "concat": Convention("concat", "sin", 0),
    "tensor2tensor": Convention("concat", "sin", 1),
    "fairseq": Convention("concat", "sin", 1, offset=2),  # padding_idx 1, first position 2
    "guided-diffusion": Convention("concat", "cos", 0),
}


def get_convention(name: str | Convention = "vaswani", **overrides) -> Convention:
    """A preset by name (or a Convention), with any fields replaced by ``overrides``.

    ``None`` values in ``overrides`` are ignored, so parsed command-line flags pass straight in.
    """
    if isinstance(name, Convention):
        convention = name
    elif name in PRESETS:
        convention = PRESETS[name]
    else:
        raise ValueError(f"unknown convention {name!r}; known: {', '.join(PRESETS)}")
    changes = {key: value for key, value in overrides.items() if value is not None}
    unknown = set(changes) - {field.name for field in dataclasses.fields(Convention)}
    if unknown:
        raise ValueError(f"unknown convention field(s): {', '.join(sorted(unknown))}")
    return convention.replace(**changes) if changes else convention


MAX_POSITIONS = 2**24  # float32 (most angles' precision) holds every integer position only up to 2**24


def check_length(num_positions, name: str = "num_positions") -> int:
    """A table length: a non-negative int up to :data:`MAX_POSITIONS` (bool and floats
    refused, even 3.0; NumPy integers accepted)."""
    if isinstance(num_positions, bool) or not isinstance(num_positions, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {num_positions!r} ({type(num_positions).__name__})")
    if num_positions < 0:
        raise ValueError(f"{name} must be >= 0, got {num_positions}")
    if num_positions > MAX_POSITIONS:
        raise ValueError(f"{name} must be <= 2**24 = {MAX_POSITIONS} (float32 positions are exact only "
                         f"up to there), got {num_positions}")
    return int(num_positions)


def check_width(width) -> int:
    """An embedding width: an int of at least 2."""
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)):
        raise TypeError(f"width must be an int, got {width!r} ({type(width).__name__})")
    if width < 2:
        raise ValueError(f"width must be >= 2, got {width}")
    return int(width)


def check_even_width(d_model, name: str = "d_model") -> int:
    """An even width of at least 2, as the seed references require."""
    if isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {d_model!r} ({type(d_model).__name__})")
    if d_model < 2 or d_model % 2:
        raise ValueError(f"{name} must be an even int >= 2, got {d_model}")
    return int(d_model)


def check_base(base, name: str = "base") -> float:
    """A frequency base: a finite real number, positive and not 1 (``base ** -e`` is then
    a strictly monotone ladder of distinct frequencies). Bool and complex refused."""
    if isinstance(base, bool) or not isinstance(base, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {base!r} ({type(base).__name__})")
    if not math.isfinite(base) or base <= 0 or base == 1:
        raise ValueError(f"{name} must be finite, > 0 and != 1, got {base!r}")
    return float(base)


def check_float_dtype(dtype, name: str = "dtype", library: str = "numpy"):
    """A floating output dtype of ``library``: NumPy's (``np.float16``, ``'float32'``, ...)
    or torch's (``torch.bfloat16``, ...). An integer, bool or complex dtype would truncate
    every value or carry an imaginary part. Returns ``dtype`` unchanged."""
    _check_choice("library", library, ("numpy", "torch"))
    torch_flag = getattr(dtype, "is_floating_point", None)  # a torch.dtype has it, NumPy dtypes do not
    if library == "torch":
        floating = torch_flag is True
    else:
        try:  # None is refused by hand: np.dtype(None) is float64
            floating = dtype is not None and torch_flag is None and np.dtype(dtype).kind == "f"
        except TypeError:
            floating = False
    if not floating:
        raise TypeError(f"{name} must be a floating {'torch' if library == 'torch' else 'NumPy'} dtype, "
                        f"got {dtype!r}")
    return dtype
