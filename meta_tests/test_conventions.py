"""The family's layouts spelled out by hand, and the errors for bad conventions."""

import numpy as np
import pytest

from posenc_spec import oracle
from posenc_spec.conventions import PRESETS, Convention, UndefinedWidthError, get_convention


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
    """At d = 2 the members coincide (shift 1 taken at its omega = 1 limit): why checks need d >= 8."""
    tables = [oracle.table(20, 2, name, degenerate_limit=True) for name in ("vaswani", "concat", "tensor2tensor")]
    assert all(np.array_equal(tables[0], t) for t in tables[1:])


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
