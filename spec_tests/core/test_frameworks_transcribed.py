"""JAX code whose source is not on PyPI, transcribed after its formula into
``spec_tests/real_targets/`` and gated as a user declares it, each with its verdict:

- big_vision's ``posemb_sincos_2d`` (``big_vision_posemb.py``), declared ``convention =
  "big-vision"`` and called as written, ``(h, w, width)``: every table conforms; at width 4
  (``D/4 - 1 = 0``) it returns NaN where the preset says the width has no value
  (``undefined[d=4]``, as vit-pytorch's ``posemb_sincos_2d``). Its ``temperature`` is the
  preset's ``base`` (another one fails with the hint to declare it), and its ``dtype`` is handed
  as JAX's (``call_dtype``).
- flaxformer's ``RelativePositionBiases._relative_position_bucket`` (``flaxformer_buckets.py``),
  declared ``api = "t5-buckets"``: with ``max_positions`` at int32's range it conforms; without
  it, ``call[extremes:int64]`` fails: JAX (``jax_enable_x64`` off) holds no int64, and the
  distances beyond int32 the grid asks for cannot be handed to it (its docstring: "an int32 array").

Each verdict is the same through ``posenc-spec check``, the pytest plugin and
``posenc_spec.check``. A slip planted in each fails with the checks and the hint of its NumPy
or torch twin in ``meta_tests/corpus/``. The gate's runs import JAX: their tests share the
module fixtures that make them (the slow tier).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import posenc_spec
from posenc_spec.cli import main
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.keys import flag, plugin_flag
from spec_tests.assertions import check_named, failure_summary

pytest.importorskip("jax", reason="jax is not installed: pip install posenc-spec[jax]")
FLAX = importlib.util.find_spec("flax") is not None

REAL_TARGETS = Path(__file__).resolve().parents[1] / "real_targets"
BIG_VISION = f"{REAL_TARGETS / 'big_vision_posemb.py'}"
FLAXFORMER = f"{REAL_TARGETS / 'flaxformer_buckets.py'}"
SINCOS2D = {"api": "sincos2d", "convention": "big-vision"}
# Every distance int32 holds: the positions a JAX caller (int32 positions) can pass.
BUCKETS = {"api": "t5-buckets", "max_positions": 2**31}
# name -> (target, keys, the verdict: the failing check ids, none when it conforms)
REAL = {
    "big_vision posemb_sincos_2d": (f"{BIG_VISION}:posemb_sincos_2d", SINCOS2D, {"undefined[d=4]"}),
    "flaxformer _relative_position_bucket": (
        f"{FLAXFORMER}:RelativePositionBiases._relative_position_bucket", BUCKETS, set()),
}
# name -> (the JAX slip, its twin in the corpus, the keys both are declared with)
SLIPS = {
    "without the minus one": (f"{BIG_VISION}:posemb_without_the_minus_one",
                              "meta_tests.corpus.sincos2d_wrong:big_vision_without_the_minus_one", SINCOS2D),
    "flattened transposed": (f"{BIG_VISION}:posemb_flattened_transposed",
                             "meta_tests.corpus.sincos2d_wrong:flatten_after_transpose", SINCOS2D),
    "halving forgotten": (f"{FLAXFORMER}:HalvingForgotten._relative_position_bucket",
                          "meta_tests.corpus.t5buckets_wrong:halving_forgotten", BUCKETS),
}
TEMPERATURE = 20.0  # DAB-DETR's and DINO's: a base the grid's frequencies tell from 10000
# The width refusals of 2-D sincos: big_vision asserts width % 4 == 0 where the corpus's twins
# compute a table of any width, so the twins' verdicts differ there and only there.
WIDTH_REFUSALS = ("indivisible[", "undefined[")


def _runnable(target: str) -> bool:
    """Whether ``target`` can run here: flaxformer's module needs flax (big_vision's only jax)."""
    return FLAX or not target.startswith(FLAXFORMER)


def _require(target: str) -> None:
    if not _runnable(target):
        pytest.skip("flax is not installed: pip install flax")


def _flags(keys: dict, spell=flag) -> list[str]:
    return [part for key, value in keys.items() for part in (spell(key), str(value))]


def _by_command_line(target: str, keys: dict, folder: Path) -> set[str]:
    out = folder / "report.json"
    status = main(["check", target, *_flags(keys), "--json", str(out)])
    [entry] = json.loads(out.read_text(encoding="utf-8"))["targets"]
    failed = {check["id"] for check in entry["checks"] if check["status"] == "failed"}
    assert status == (1 if failed else 0), (status, failed)
    return failed


def _by_plugin(target: str, keys: dict, folder: Path) -> set[str]:
    """The failed items of ``pytest --posenc-target ... --posenc-items check`` run as a user runs it."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", "-n", "0",
               "--posenc-target", target, *_flags(keys, plugin_flag), "--posenc-items", "check"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600, env=os.environ)
    failed = set(re.findall(r"^FAILED posenc::\S+::(\S+)", done.stdout, re.MULTILINE))
    assert done.returncode == (1 if failed else 0), done.stdout + done.stderr
    return failed


@pytest.fixture(scope="module")
def three_ways(tmp_path_factory):
    """name -> the failed check ids of each REAL target by the command line, the plugin and the Python API."""
    verdicts = {}
    for name, (target, keys, _) in REAL.items():
        if not _runnable(target):
            continue
        folder = tmp_path_factory.mktemp("transcribed")
        report = posenc_spec.check(target, **keys)
        verdicts[name] = {"command line": _by_command_line(target, keys, folder),
                          "plugin": _by_plugin(target, keys, folder),
                          "posenc_spec.check": {check.name for check in report.failures()}}
    return verdicts


@pytest.mark.parametrize("name", REAL)
def test_transcribed_jax_code_gets_one_verdict_in_the_cli_the_plugin_and_the_api(name, three_ways):
    """The transcription as declared: the same failing checks (none where it conforms) by all three ways in."""
    target, _, expected = REAL[name]
    _require(target)
    assert all(failed == expected for failed in three_ways[name].values()), three_ways[name]


@pytest.fixture(scope="module")
def twin_reports():
    declarations = {}
    for name, (jax_target, twin, keys) in SLIPS.items():
        if not _runnable(jax_target):
            continue
        declarations[f"{name}: jax"] = declare({"target": jax_target, **keys})
        declarations[f"{name}: twin"] = declare({"target": twin, **keys})
    without_bound = {key: value for key, value in BUCKETS.items() if key != "max_positions"}
    declarations["big_vision, bfloat16"] = declare({"target": REAL["big_vision posemb_sincos_2d"][0], **SINCOS2D,
                                                    "call_dtype": "bfloat16"})
    temperature = {**SINCOS2D, "kwargs": {"temperature": TEMPERATURE}}
    declarations["big_vision, temperature"] = declare({"target": REAL["big_vision posemb_sincos_2d"][0], **temperature})
    declarations["big_vision, temperature as base"] = declare({"target": REAL["big_vision posemb_sincos_2d"][0],
                                                               **temperature, "base": TEMPERATURE})
    if FLAX:
        flaxformer = REAL["flaxformer _relative_position_bucket"][0]
        declarations["flaxformer, int64 distances"] = declare({"target": flaxformer, **without_bound})
    return check_named(declarations, jobs=None)


def _table_failures(report) -> set[str]:
    return {check.name for check in report.failures() if not check.name.startswith(WIDTH_REFUSALS)}


@pytest.mark.parametrize("name", SLIPS)
def test_a_planted_jax_slip_fails_as_its_numpy_or_torch_twin(name, twin_reports):
    """The JAX slip fails the checks its corpus twin fails, on every call both compute a table for,
    with the same hint; its results are read as jax Arrays."""
    _require(SLIPS[name][0])
    jax_report, twin_report = twin_reports[f"{name}: jax"], twin_reports[f"{name}: twin"]
    failed = [_table_failures(report) for report in (jax_report, twin_report)]
    assert failed[0] == failed[1] and failed[0], failed
    slips = [[slip for hint in report.hints for slip in hint.slips] for report in (jax_report, twin_report)]
    assert slips[0] == slips[1] and slips[0], slips
    assert any("jax" in check.message and "Array" in check.message for check in jax_report.checks), \
        failure_summary(jax_report)


def test_jax_buckets_without_a_bound_fail_on_the_int64_distances_jax_cannot_hold(twin_reports):
    """flaxformer's buckets declared without max_positions: only call[extremes:int64] fails, naming
    JAX's missing int64 and the key that bounds the distances."""
    _require(REAL["flaxformer _relative_position_bucket"][0])
    report = twin_reports["flaxformer, int64 distances"]
    assert {check.name for check in report.failures()} == {"call[extremes:int64]"}, failure_summary(report)
    message = report.result("call[extremes:int64]").message
    assert "jax_enable_x64 off" in message and "max_positions" in message, message


def test_a_declared_dtype_reaches_jax_code_as_jaxs_dtype(twin_reports):
    """big_vision asked for bfloat16 (its dtype=) gets jnp.bfloat16: its bfloat16 tables conform but at width 4."""
    report = twin_reports["big_vision, bfloat16"]
    assert {check.name for check in report.failures()} == REAL["big_vision posemb_sincos_2d"][2], \
        failure_summary(report)
    assert "jax bfloat16 Array" in report.result("call[2x3:d=8]").message


def test_big_visions_temperature_is_the_base_its_hint_names(twin_reports):
    """big_vision called with temperature=20 under the preset's base 10000 fails with the hint to declare
    base 20; declared so, it gets the verdict of its default temperature."""
    hints = twin_reports["big_vision, temperature"].hints
    assert [(hint.slips, dict(hint.declare)) for hint in hints] == [(("base",), {"base": TEMPERATURE})], hints
    report = twin_reports["big_vision, temperature as base"]
    assert {check.name for check in report.failures()} == REAL["big_vision posemb_sincos_2d"][2], \
        failure_summary(report)


def test_each_transcription_is_declared_as_the_gate_accepts_it():
    """Every target here, as declared, is a declaration of the API it names (no run: the default tier)."""
    for target, keys, _ in REAL.values():
        assert declare({"target": target, **keys}).api == keys["api"]
    for jax_target, twin, keys in SLIPS.values():
        assert {declare({"target": path, **keys}).api for path in (jax_target, twin)} == {keys["api"]}
