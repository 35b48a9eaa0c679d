"""The family's layouts spelled out by hand, the errors for bad conventions, and the input helpers."""

import re

import numpy as np
import pytest
import torch

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import (
    MAX_POSITIONS,
    PRESETS,
    Convention,
    UndefinedWidthError,
    check_base,
    check_float_dtype,
    check_length,
    get_convention,
)


def symbolic_columns(convention, width):
    """Column names like 'sin0', 'cos1', '0' from the convention's column map."""
    conv = get_convention(convention)
    columns = conv.columns(width)
    return ["0" if k < 0 else f"{conv.first if first else conv.second}{k}"
            for k, first in zip(columns.pair, columns.is_first, strict=True)]


@pytest.mark.parametrize("convention, width, expected", [
    ("vaswani", 6, ["sin0", "cos0", "sin1", "cos1", "sin2", "cos2"]),
    ("concat", 6, ["sin0", "sin1", "sin2", "cos0", "cos1", "cos2"]),
    ("guided-diffusion", 4, ["cos0", "cos1", "sin0", "sin1"]),
    (Convention(odd="zero-pad"), 5, ["sin0", "cos0", "sin1", "cos1", "0"]),
    (Convention(layout="concat", odd="zero-pad"), 5, ["sin0", "sin1", "cos0", "cos1", "0"]),
    (Convention(odd="ceil"), 5, ["sin0", "cos0", "sin1", "cos1", "sin2"]),
    (Convention(layout="concat", odd="ceil"), 5, ["sin0", "sin1", "sin2", "cos0", "cos1"]),
])
def test_column_layouts(convention, width, expected):
    """Where each function of each pair goes, for every layout and odd behaviour."""
    assert symbolic_columns(convention, width) == expected


@pytest.mark.parametrize("convention, width, expected", [
    ("vaswani", 8, [0, 1 / 4, 2 / 4, 3 / 4]),          # 2k/d
    ("tensor2tensor", 8, [0, 1 / 3, 2 / 3, 1]),        # k/(h-1)
    (Convention(odd="zero-pad"), 9, [0, 1 / 4, 2 / 4, 3 / 4]),  # k/h with h = floor(9/2)
    (Convention(odd="ceil"), 9, [0, 2 / 9, 4 / 9, 6 / 9, 8 / 9]),  # 2k/d with the true d
])
def test_exponents(convention, width, expected):
    """e_k for each shift and odd behaviour."""
    np.testing.assert_array_equal(get_convention(convention).exponents(width), expected)


def test_presets_match_the_convention_table():
    """The presets are the rows of the conventions table."""
    rows = {name: (c.layout, c.first, c.freq_shift, c.offset) for name, c in PRESETS.items()}
    assert rows == {"vaswani": ("interleaved", "sin", 0, 0), "concat": ("concat", "sin", 0, 0),
                    "tensor2tensor": ("concat", "sin", 1, 0), "fairseq": ("concat", "sin", 1, 2),
                    "guided-diffusion": ("concat", "cos", 0, 0)}


def test_at_width_two_every_layout_and_shift_agree():
    """At d = 2 the members coincide (shift 1 taken at its omega = 1 limit): why checks need
    d >= 8. Each is the closed form ``[sin p, cos p]`` (omega_0 = 1 whatever the base), to
    NumPy's rounding: sin and cos of an exact integer angle, the same operations bit for bit."""
    positions = np.arange(20.0)
    closed_form = np.stack([np.sin(positions), np.cos(positions)], axis=1)
    for name in ("vaswani", "concat", "tensor2tensor"):
        table = oracle.table(20, 2, name, degenerate_limit=True)
        assert np.array_equal(table, closed_form), f"{name} at d = 2: {table[:3].tolist()}"


@pytest.mark.parametrize("kwargs, message", [
    ({"layout": "stacked"}, "layout must be one of interleaved, concat; got 'stacked'"),
    ({"first": "tan"}, "first must be one of sin, cos"),
    ({"freq_shift": 2}, "freq_shift must be 0 or 1, got 2"),
    ({"base": 1.0}, "base must be greater than 1, got 1.0"),
    ({"base": float("nan")}, "base must be a finite number"),
    ({"scale": 0.0}, "scale must not be 0"),
    ({"odd": "drop"}, "odd must be one of error, zero-pad, ceil"),
    ({"odd": "ceil", "freq_shift": 1}, "odd='ceil' is defined for freq_shift=0 only"),
])
def test_bad_fields_are_refused_by_name(kwargs, message):
    """A bad field raises ValueError naming the field and the value."""
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Convention(**kwargs)


def test_get_convention_names_the_unknown():
    """Unknown presets and fields are named; None overrides are ignored (unset CLI flags)."""
    with pytest.raises(ValueError, match="unknown convention 'vaswanii'; known: vaswani, concat"):
        get_convention("vaswanii")
    with pytest.raises(ValueError, match="unknown convention field"):
        get_convention("vaswani", colour="red")
    assert get_convention("vaswani", base=None) == PRESETS["vaswani"]
    assert get_convention("vaswani", base=500.0).base == 500.0


@pytest.mark.parametrize("width, message", [(7, "odd and the convention says odd='error'"), (1, "width must be >= 2")])
def test_odd_width_under_error_and_tiny_widths_raise(width, message):
    """Odd widths under odd='error' and widths below 2 raise, saying why."""
    with pytest.raises(ValueError, match=message):
        PRESETS["vaswani"].columns(width)


def test_undefined_width_error_is_a_value_error():
    """Callers that catch ValueError catch the family's undefined widths too."""
    assert issubclass(UndefinedWidthError, ValueError)


def test_names_round_trip():
    """A preset names itself; any other member spells out its fields."""
    assert PRESETS["fairseq"].name() == "fairseq"
    assert Convention(first="cos", freq_shift=1, layout="concat").name().startswith("concat/cos-first/shift1")


def test_length_limit_is_2_to_the_24():
    """Lengths up to MAX_POSITIONS pass (returned as int); one more is refused, as is a
    NumPy unsigned length that would wrap, each naming the argument and the value."""
    assert MAX_POSITIONS == 2**24 == float(np.float32(2**24))
    assert np.float32(MAX_POSITIONS + 1) == MAX_POSITIONS, "float32 no longer rounds 2**24 + 1 down"
    assert check_length(np.int64(MAX_POSITIONS)) == MAX_POSITIONS and type(check_length(np.uint8(3))) is int
    with pytest.raises(ValueError, match=f"positions must be <= 2\\*\\*24 = {MAX_POSITIONS}.*got {MAX_POSITIONS + 1}"):
        check_length(MAX_POSITIONS + 1, "positions")
    with pytest.raises(ValueError, match="num_positions must be <= .* got 18446744073709551615"):
        check_length(np.uint64(2**64 - 1))


@pytest.mark.parametrize("base, error", [(0, ValueError), (1.0, ValueError), (-2.0, ValueError),
                                         (float("nan"), ValueError), (float("inf"), ValueError),
                                         (True, TypeError), ("10", TypeError), (2j, TypeError), (None, TypeError)])
def test_check_base_refuses_by_name(base, error):
    """Bases must be finite real numbers, positive and not 1; the message names base and the value."""
    with pytest.raises(error, match=rf"^base must be .*got {re.escape(repr(base))}"):
        check_base(base)


@pytest.mark.parametrize("base", [10000, 0.5, np.float32(100.0), np.int64(7)])
def test_check_base_accepts_real_numbers_as_float(base):
    """Ints, NumPy scalars and bases below 1 (rising frequencies) come back as a Python float."""
    assert check_base(base) == float(base) and type(check_base(base)) is float


@pytest.mark.parametrize("dtype, library, accepted", [
    (np.float16, "numpy", True), ("float32", "numpy", True), (np.dtype("float64"), "numpy", True),
    (np.int32, "numpy", False), (np.complex64, "numpy", False), (bool, "numpy", False), (None, "numpy", False),
    (torch.float32, "numpy", False),
    (torch.bfloat16, "torch", True), (torch.float64, "torch", True),
    (torch.int8, "torch", False), (torch.complex64, "torch", False), (np.float32, "torch", False),
])
def test_check_float_dtype(dtype, library, accepted):
    """Floating dtypes of the named library pass unchanged; anything else is a TypeError naming dtype."""
    if accepted:
        assert check_float_dtype(dtype, library=library) is dtype
    else:
        with pytest.raises(TypeError, match=r"^dtype must be a floating (NumPy|torch) dtype, got "):
            check_float_dtype(dtype, library=library)
