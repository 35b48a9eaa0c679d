"""The gate on sinusoidal tables that ship inside transformers, called, not copied.

- DistilBERT ``create_sinusoidal_embeddings``: vaswani; odd widths as ``ceil``.
- Marian ``MarianSinusoidalPositionalEmbedding.create_weight()``: concat; odd widths as
  ``ceil``. (In transformers 5 the module's own weight stays random until a model
  initialises it, so the table comes from ``create_weight``.)
- M2M100 ``M2M100SinusoidalPositionalEmbedding.get_embedding`` (no padding index):
  tensor2tensor; odd widths zero-padded.
- Whisper ``sinusoids``: tensor2tensor; odd widths raise.

DistilBERT and Marian build their tables in Python loops (about 8 s for 4096 x 1024), so
they are gated up to ``PYTHON_LOOP_POSITIONS``. The adapters only put each function behind
the gate's ``fn(num_positions, dim)``; the gate preloads transformers' shared modules in its
root template, imports the adapters' file once, in a module template, and forks each
target's child from it.
"""

from __future__ import annotations

import pytest

from posenc_spec.families.sinusoidal.conventions import PRESETS
from posenc_spec.families.sinusoidal.identify import identify_many
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.options import run_options
from spec_tests.assertions import check_named, failure_summary
from spec_tests.real_targets import TRANSFORMERS_PRELOAD
from spec_tests.real_targets import target as real_target

# DistilBERT and Marian fill their tables element by element in Python (half a second for
# 512 x 1024): 256 positions keep every width of the grid at a quarter of that.
PYTHON_LOOP_POSITIONS = 256
# name -> (preset, its odd-width behaviour, the positions it is gated up to)
REAL = {
    "distilbert": ("vaswani", "ceil", PYTHON_LOOP_POSITIONS),
    "marian": ("concat", "ceil", PYTHON_LOOP_POSITIONS),
    "m2m100": ("tensor2tensor", "zero-pad", None),
    "whisper": ("tensor2tensor", "error", None),
}
# The other presets need only the sizes that tell presets apart.
SMALL = 64


def target(name: str) -> str:
    return real_target("transformers_tables", name)


def _declarations():
    """``(declared, misdeclared)``: each implementation under its own preset (and under the
    preset's default odd='error'), and under every other preset."""
    declared, misdeclared = {}, {}
    for name, (preset, odd, max_positions) in REAL.items():
        declared[name, "declared"] = declare({"target": target(name), "convention": preset, "odd": odd,
                                              "max_positions": max_positions})
        declared[name, "odd-error"] = declare({"target": target(name), "convention": preset,
                                               "max_positions": SMALL})
        for other in PRESETS:
            if other != preset:
                misdeclared[name, other] = declare({"target": target(name), "convention": other,
                                                    "max_positions": SMALL, "odd": "skip"})
    return declared, misdeclared


@pytest.fixture(scope="module")
def reports():
    """The misdeclared run with --fail-fast: their tests read only the verdict and the first
    check, and the Python-loop tables would otherwise be built at every size for nothing."""
    declared, misdeclared = _declarations()
    return (check_named(declared, preload=TRANSFORMERS_PRELOAD)
            | check_named(misdeclared, preload=TRANSFORMERS_PRELOAD, fail_fast=True))


@pytest.fixture(scope="module")
def identities():
    answers = identify_many([target(name) for name in REAL], max_positions=512,
                            options=run_options(1, preload=TRANSFORMERS_PRELOAD))
    return dict(zip(REAL, answers, strict=True))


@pytest.mark.parametrize("name", REAL)
def test_real_implementation_passes_its_convention(name, reports):
    """Each real implementation conforms to its preset, with its odd-width behaviour declared."""
    report = reports[name, "declared"]
    assert report.conforms, f"{name} under {REAL[name][0]} (odd={REAL[name][1]}): {failure_summary(report, 5)}"


@pytest.mark.parametrize("name", REAL)
def test_real_implementation_fails_every_other_preset(name, reports):
    """Under any other preset the gate rejects it, already at 50 positions x width 8."""
    for other in PRESETS:
        if other == REAL[name][0]:
            continue
        report = reports[name, other]
        assert not report.conforms, f"{name} passed {other}"
        assert not report.result("formula[50x8]").passed, f"{name} under {other}: formula[50x8] passed"


@pytest.mark.parametrize("name", ["distilbert", "marian", "m2m100"])
def test_odd_widths_return_a_table_where_error_is_declared(name, reports):
    """DistilBERT and Marian answer odd widths with a ceil table and M2M100 zero-pads: under
    the preset's default odd='error' the gate reports odd[7] and odd[65], and nothing else."""
    report = reports[name, "odd-error"]
    failed = {check.name for check in report.failures()}
    assert failed == {"odd[7]", "odd[65]"}, f"{name}: {failure_summary(report, 5)}"
    message = report.result("odd[7]").message
    assert message.startswith("returned a 50x7 table") and "odd='error' declares an exception" in message, message


def test_whisper_raises_at_odd_widths(reports):
    """Whisper's sinusoids raises ValueError at odd widths, which is what odd='error' declares."""
    report = reports["whisper", "odd-error"]
    assert report.conforms, failure_summary(report, 5)
    assert report.result("odd[7]").message.startswith("raised ValueError"), report.result("odd[7]").message


@pytest.mark.parametrize("name", ["m2m100", "whisper"])
def test_shift_one_implementations_raise_at_width_two(name, reports):
    """At d = 2 under shift 1 both divide by h - 1 = 0 in Python and raise ZeroDivisionError:
    the gate accepts raising there (a silent NaN would fail)."""
    result = reports[name, "declared"].result("degenerate[d=2]")
    assert result.passed and result.message.startswith("raised ZeroDivisionError"), result.message


@pytest.mark.parametrize("name", ["distilbert", "marian"])
def test_shift_zero_implementations_compute_width_two(name, reports):
    """Under shift 0 width 2 is an ordinary table, [sin p, cos p], and both compute it right."""
    result = reports[name, "declared"].result("degenerate[d=2]")
    assert result.passed and "max error/tolerance" in result.message, result.message


@pytest.mark.parametrize("name", REAL)
def test_identify_names_each_implementation(name, identities):
    """identify recovers each one's preset and its odd-width behaviour from its tables alone."""
    preset, odd, _ = REAL[name]
    answer = identities[name]
    assert answer["name"] == preset, f"{name}: {answer['message']}"
    assert answer["convention"]["odd"] == odd, f"{name}: {answer['message']}"
    assert answer["max_error_ratio"] <= 1.0, f"{name}: {answer['message']}"


def test_every_implementation_is_declared_under_each_preset():
    """Each implementation is a table declaration the gate accepts under its own preset and
    under every other (the runs that judge them are in the slow tier)."""
    declared, misdeclared = _declarations()
    assert {name for name, _ in declared} == {name for name, _ in misdeclared} == set(REAL)
    assert len(misdeclared) == len(REAL) * (len(PRESETS) - 1)
