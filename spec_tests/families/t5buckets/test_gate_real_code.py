"""Real code through the gate, declared as users declare it (:mod:`.declared`), with no xfails
file: each target fails exactly the checks :mod:`.declared` lists (MPNet's encoder at 64
buckets on its table), is noted for exactly those it lists (``int-min[D]`` for a function of
positions) and passes every other.

The default run checks one target of each signature and library (:data:`SAMPLE`), with T5's
modeling module preloaded into the gate's template; ``pytest -m slow`` checks all of them
(35 declarations, about a minute: each of transformers' modules imports in a child of its own).
"""

from __future__ import annotations

import importlib.metadata

import pytest

from posenc_spec.gate.declaration import declare
from spec_tests.assertions import check_named
from spec_tests.assertions import failure_summary as _summary

from .declared import TARGETS

PRELOAD = ("transformers.models.t5.modeling_t5",)
SAMPLE = ("t5.T5Attention._relative_position_bucket @ t5-encoder", "T5Attention.compute_bias @ t5-decoder",
          "UMT5Attention._relative_position_bucket @ t5-decoder",
          "CpmAntSegmentPositionEmbedding._position_bucket @ cpmant", "MPNetEncoder.compute_position_bias @ 64 buckets",
          "x-transformers RelativePositionBias.forward @ t5-decoder",
          "torchtune _calc_birectional_rel_pos_to_bucket @ t5-encoder",
          "torchtune T5EncoderRelativePositionBias.forward @ t5-encoder")


def _installed(library: str) -> bool:
    try:
        importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _reports(names) -> dict:
    chosen = [target for target in TARGETS if target.id in names and _installed(target.library)]
    return check_named({target.id: declare(target.declaration_keys()) for target in chosen}, preload=PRELOAD)


@pytest.fixture(scope="module")
def sample_reports():
    return _reports(SAMPLE)


def _assert_fails_as_listed(target, reports):
    if target.id not in reports:
        pytest.skip(f"{target.library} is not installed")
    report = reports[target.id]
    failed = tuple(check.name for check in report.failures())
    assert failed == target.fails, f"{target.id}: failed {failed}, expected {target.fails}: {_summary(report)}"
    noted = tuple(check.name for check in report.checks if check.status == "noted")
    assert noted == target.notes, f"{target.id}: noted {noted}, expected {target.notes}: {_summary(report)}"
    assert report.conforms == (not target.fails)


@pytest.mark.parametrize("target", [target for target in TARGETS if target.id in SAMPLE], ids=lambda target: target.id)
def test_sample_of_real_code_fails_only_its_known_deviations(target, sample_reports):
    """One target per signature and library, declared as a user declares it: its known deviations alone fail,
    and the bucket at -2**(b-1) alone is noted."""
    _assert_fails_as_listed(target, sample_reports)


def test_sample_covers_every_signature():
    """The sample calls a static function, a method, a table and a bias module of each library."""
    chosen = [target for target in TARGETS if target.id in SAMPLE]
    assert len(chosen) == len(SAMPLE)
    assert {target.keys.get("signature", "static") for target in chosen} == {"static", "method", "table", "bias"}
    assert {target.library for target in chosen} == {target.library for target in TARGETS}


@pytest.fixture(scope="module")
def all_reports():
    return _reports({target.id for target in TARGETS})


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.id)
def test_every_real_target_fails_only_its_known_deviations(target, all_reports):
    """Every real target, declared as a user declares it: its known deviations alone fail, its notes alone noted."""
    _assert_fails_as_listed(target, all_reports)
