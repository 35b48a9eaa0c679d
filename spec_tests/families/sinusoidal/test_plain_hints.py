"""Hints for plain causes in sinusoidal tables. From tables made here: arithmetic in float16 or
bfloat16 at one stage (the frequencies, the output, the angle) is named, and noise of the same
size is not; frequencies and angles that no member has, written as slipped code writes them,
are named. Through the gate: tables of another size than asked (the arguments read in the
other order, the table transposed, a cls row, a row left out, a buffer's length) are named
alike in a full run and under ``--fail-fast``, the swapped arguments' advice conforms when
applied, and a wrong table in a wrong size gets no hint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posenc_spec.families.sinusoidal import oracle
from posenc_spec.families.sinusoidal.conventions import get_convention
from posenc_spec.families.sinusoidal.fit import Sample
from posenc_spec.families.sinusoidal.slips import Table, diagnose
from posenc_spec.gate.advice import swapped_call
from posenc_spec.gate.calls import held_in
from posenc_spec.gate.declaration import declare
from reference_impls.family import sinusoidal_encoding
from spec_tests.assertions import assert_same_hints, check_named

HERE = Path(__file__).resolve()
SMALL = 64  # max_positions of the gate runs: the grid's lengths are 50 and 64 (64x64 a square call)
BUFFER = 60  # rows of the truncating target's buffer: the 50-position calls are whole, the 64 ones cut
SIZES = ((64, 64), (1024, 64))  # angles up to 1023: enough of them tell a rounded angle
VASWANI = get_convention("vaswani")


def _vaswani(n, d):
    return sinusoidal_encoding(n, d, "vaswani", dtype=np.float32)


def swapped(d, n):
    return _vaswani(n, d)


def transposed(n, d):
    return _vaswani(n, d).T.copy()


def cls_row_first(n, d):
    return np.concatenate([np.zeros((1, d), np.float32), _vaswani(n, d)])


def first_row_missing(n, d):
    return _vaswani(n, d)[1:]


def truncated(n, d):
    return _vaswani(min(n, BUFFER), d)


def swapped_with_noise(d, n):
    return _vaswani(n, d) + np.random.default_rng(n).normal(0.0, 1e-3, (n, d)).astype(np.float32)


def _interleaved(theta: np.ndarray) -> np.ndarray:
    """Vaswani's columns (sin, cos, sin, cos, ...) of angles ``theta`` (one column per pair)."""
    return np.stack([np.sin(theta), np.cos(theta)], axis=-1).reshape(theta.shape[0], -1)


def _omega(width: int) -> np.ndarray:
    return VASWANI.frequencies(width)


def angle_in_float16(positions, width):
    theta = positions.astype(np.float16)[:, None] * _omega(width).astype(np.float16)[None, :]  # a float16 product
    return _interleaved(theta.astype(np.float64)).astype(np.float16), "float16"


def frequencies_in_bfloat16(positions, width):
    omega = held_in(_omega(width), "bfloat16")
    return _interleaved(positions.astype(np.float32)[:, None] * omega[None, :]).astype(np.float32), "float32"


def output_through_float16(positions, width):
    return oracle.table(positions, width, VASWANI).astype(np.float16).astype(np.float32), "float32"


def angle_in_float16_returned_in_float32(positions, width):
    return angle_in_float16(positions, width)[0].astype(np.float32), "float32"


def noise_of_float16_size(positions, width):
    noise = np.random.default_rng(width).normal(0.0, 2.0**-11, (positions.size, width))
    return (oracle.table(positions, width, VASWANI) + noise).astype(np.float32), "float32"


def noise_in_float16_numbers(positions, width):
    return noise_of_float16_size(positions, width)[0].astype(np.float16).astype(np.float32), "float32"


def _tables(make) -> list[Table]:
    found = []
    for length, width in SIZES:
        positions = np.arange(length, dtype=np.float64)
        values, dtype = make(positions, width)
        found.append(Table(f"{length}x{width}", Sample(values.astype(np.float64), dtype, positions), length, True))
    return found


@pytest.mark.parametrize(("make", "slip"), [
    (angle_in_float16, "angle-float16"),
    (frequencies_in_bfloat16, "frequencies-bfloat16"),
    (output_through_float16, "output-float16"),
    (angle_in_float16_returned_in_float32, "angle-float16"),
    (noise_of_float16_size, None),
    (noise_in_float16_numbers, None),
], ids=["angle in float16", "frequencies in bfloat16", "output through float16",
        "computed in float16, returned in float32", "noise of that size", "noise of that size in float16 numbers"])
def test_arithmetic_in_a_narrow_type_is_named_at_its_stage(make, slip):
    """Tables computed with the angle, the frequencies or the output in a narrow type get the
    hint of that stage, with no keys (none declares it); noise as large as float16's rounding,
    which no rounded angle explains, gets none."""
    hints = diagnose(VASWANI, "table", _tables(make))
    assert [s for hint in hints for s in hint.slips] == ([slip] if slip else []), [h.text() for h in hints]
    assert not any(hint.declare for hint in hints)


def column_own_index(positions, width):
    angle = positions[:, None] / 10000.0 ** (2.0 * np.arange(width) / width)
    return np.where(np.arange(width) % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32), "float32"


def exponent_sign_dropped(positions, width):
    return _interleaved(positions[:, None] * 10000.0 ** (np.arange(0, width, 2) / width)).astype(np.float32), "float32"


def angle_floored(positions, width):
    return _interleaved(positions[:, None] // 10000.0 ** (np.arange(0, width, 2) / width)).astype(np.float32), \
        "float32"


def every_frequency_one(positions, width):
    return _interleaved(np.repeat(positions[:, None], width // 2, axis=1)).astype(np.float32), "float32"


@pytest.mark.parametrize(("make", "slip"), [
    (column_own_index, "exponent-column-index"),
    (exponent_sign_dropped, "exponent-sign-dropped"),
    (angle_floored, "angle-floored"),
    (every_frequency_one, "exponent-integer-division"),
], ids=["each column's own index", "the exponent's sign dropped", "the angle floored", "every frequency 1"])
def test_frequencies_no_member_has_are_named(make, slip):
    """Tables written as the slipped code writes them (each column's own exponent, ``base ** +e``,
    ``pos // timescale``, every frequency 1) get the hint of that slip, with no keys."""
    hints = diagnose(VASWANI, "table", _tables(make))
    assert [s for hint in hints for s in hint.slips] == [slip] and not hints[0].declare, [h.text() for h in hints]


def _declarations(names) -> dict:
    return {name: declare({"target": f"{HERE}:{name}", "max_positions": SMALL, "odd": "skip"}) for name in names}


SHAPED = {"swapped": "arguments-swapped", "transposed": "table-transposed", "cls_row_first": "rows-extra",
          "first_row_missing": "rows-missing", "truncated": "rows-truncated", "swapped_with_noise": None}


@pytest.fixture(scope="module")
def shaped_reports():
    return check_named(_declarations(SHAPED))


@pytest.mark.parametrize("name", SHAPED)
def test_a_table_of_another_size_names_its_slip(name, shaped_reports):
    """Every call returned an array of another size than asked: the hint names how the declared
    table was read (nothing when the values are wrong too)."""
    hints = shaped_reports[name].hints
    assert [s for hint in hints for s in hint.slips] == ([SHAPED[name]] if SHAPED[name] else []), \
        [hint.text() for hint in hints]


def test_the_size_hints_are_those_of_fail_fast(shaped_reports):
    """The same hints, word for word, under --fail-fast (the grid's table calls are made in both)."""
    assert_same_hints(shaped_reports, _declarations(SHAPED), fail_fast=True)


def test_swapped_arguments_advice_applied_conforms(shaped_reports):
    """The swapped arguments' hint advises the call with the roles exchanged, and the target
    declared so conforms; the other size hints advise nothing."""
    (hint,) = shaped_reports["swapped"].hints
    assert hint.declare == (("call", "swapped(dim, num_positions)"),), hint.text()
    advised = declare({"target": f"{HERE}:swapped", "max_positions": SMALL, "odd": "skip", **dict(hint.declare)})
    report = check_named({"advised": advised})["advised"]
    assert report.conforms, [(check.name, check.message) for check in report.failures()[:3]]
    assert not any(hint.declare for name in SHAPED if name != "swapped" for hint in shaped_reports[name].hints)


@pytest.mark.parametrize(("keys", "swapped_text"), [
    ({}, "table(dim, num_positions)"),
    ({"call": "table(num_positions, dim=dim)"}, "table(dim, dim=num_positions)"),
    ({"call": "Table(dim=dim).build(num_positions)"}, "Table(dim=num_positions).build(dim)"),
])
def test_swapped_call_exchanges_the_roles_and_keeps_the_keywords(keys, swapped_text):
    """The advice's call: the declared call (or the one the signature stands for, named after
    the target) with the two roles exchanged wherever they are values, keyword names kept."""
    declaration = declare({"target": "m:table", **keys})
    assert swapped_call(declaration, "num_positions", "dim") == swapped_text
